# -*- coding: utf-8 -*-
"""Read the header of a GGUF model file without loading the model.

Pure Python (struct only) so it runs on any managed host, before llama.cpp or
any Python package exists there. Reads GGUF versions 2 and 3, little- or
big-endian: the fixed header, every metadata key/value pair and the tensor-info
table, then stops; tensor data is never read.

Layout (llama.cpp ggml/include/gguf.h and gguf-py/gguf/gguf_reader.py, commit
0c1e57098): magic ``GGUF``; uint32 version; uint64 tensor_count; uint64
kv_count; kv_count x (string key, uint32 value type, value); tensor_count x
(string name, uint32 n_dims, n_dims x uint64 dim, uint32 ggml type, uint64
offset). A string is a uint64 byte length then UTF-8 bytes; an array is a
uint32 element type, a uint64 count, then the elements. Version 1 used 32-bit
counts and lengths and has not been written since 2023; it is refused.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import struct
from typing import IO, Any, Dict, List, Optional, Tuple, Union

from ansible_collections.v100.llm.plugins.module_utils.models.sources import split_parts

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_MAX_ARRAY_ITEMS = 16
# Per-layer lists a memory plan needs (which layers keep a KV cache, and which
# of them a sliding-window one): kept whole whatever max_array_items says, up
# to this many items (one per layer).
LAYER_ARRAY_SUFFIXES = (".attention.head_count_kv", ".attention.sliding_window_pattern")
MAX_LAYER_ARRAY_ITEMS = 4096
# gguf.h caps nothing, but a key longer than this is a corrupt file, not a key.
MAX_KEY_BYTES = 65535
# How llama.cpp decides that a draft model can draft for a target (common_speculative_are_compatible,
# common/speculative.cpp:30-31 and 67-127 at 0c1e57098): the same vocabulary type, the same BOS and EOS use and
# ids, vocabulary sizes at most 128 apart, and the same text for every token from id 5 to the smaller size.
TOKENS_KEY = "tokenizer.ggml.tokens"
VOCAB_MAX_SIZE_DIFFERENCE = 128
VOCAB_CHECK_START_TOKEN_ID = 5
# tokenizer.ggml.model -> llama.cpp's vocabulary type (llama_vocab::impl::load, src/llama-vocab.cpp:1949-2143).
VOCAB_TYPES = {"no_vocab": "none", "none": "none", "llama": "SPM", "bert": "WPM", "gpt2": "BPE",
               "hybriddna": "BPE", "whitespace": "BPE", "gemma4": "BPE", "t5": "UGM", "rwkv": "RWKV",
               "test": "TEST", "plamo2": "PLaMo2"}

# GGUF value type id -> struct format of one scalar (gguf-py GGUFValueType).
_SCALAR_FORMATS = {
    0: "B",  # UINT8
    1: "b",  # INT8
    2: "H",  # UINT16
    3: "h",  # INT16
    4: "I",  # UINT32
    5: "i",  # INT32
    6: "f",  # FLOAT32
    7: "?",  # BOOL
    10: "Q",  # UINT64
    11: "q",  # INT64
    12: "d",  # FLOAT64
}
_TYPE_STRING = 8
_TYPE_ARRAY = 9

# llama.cpp include/llama.h `enum llama_ftype` (commit 0c1e57098), the value of
# general.file_type. Gaps (4-6, 33-35) are removed types; MOSTLY_ is dropped.
LLAMA_FTYPE_NAMES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
    39: "NVFP4",
    40: "Q1_0",
    41: "Q2_0",
}

Source = Union[str, "os.PathLike[str]", IO[bytes]]


class GGUFError(ValueError):
    """The file is not a GGUF file this reader understands, or it is cut short."""


class _Reader:
    """Sequential reads from a seekable binary stream, in the file's byte order."""

    def __init__(self, stream: IO[bytes], path_hint: str) -> None:
        self.stream = stream
        self.path_hint = path_hint
        self.byte_order = "<"
        start = stream.tell()
        self.size = stream.seek(0, os.SEEK_END)
        stream.seek(start)

    def offset(self) -> int:
        return self.stream.tell()

    def _claim(self, size: int, what: str) -> None:
        # Checked before reading so a corrupt length cannot make us allocate gigabytes.
        missing = self.offset() + size - self.size
        if missing > 0:
            raise GGUFError(
                "%s: file ends at byte %d while reading %s (needed %d more bytes)"
                % (self.path_hint, self.size, what, missing)
            )

    def read(self, size: int, what: str) -> bytes:
        self._claim(size, what)
        return self.stream.read(size)

    def skip(self, size: int, what: str) -> None:
        self._claim(size, what)
        self.stream.seek(size, os.SEEK_CUR)

    def scalar(self, fmt: str, what: str) -> Any:
        return struct.unpack(self.byte_order + fmt, self.read(struct.calcsize(fmt), what))[0]

    def string(self, what: str, limit: int = 0) -> str:
        length = self.scalar("Q", what)
        if limit and length > limit:
            raise GGUFError("%s: %s is %d bytes long at byte %d: not a GGUF file or corrupt"
                            % (self.path_hint, what, length, self.offset()))
        return self.read(length, what).decode("utf-8", errors="replace")

    def skip_string(self, what: str) -> None:
        self.skip(self.scalar("Q", what), what)


class _TokenDigests:
    """SHA-256 of the token texts from VOCAB_CHECK_START_TOKEN_ID up to each of the last
    VOCAB_MAX_SIZE_DIFFERENCE + 1 vocabulary sizes: one of them covers any vocabulary that llama.cpp would let
    draft for this one, whose size is within that difference."""

    def __init__(self) -> None:
        self.digests: Dict[int, str] = {}

    def read(self, reader: _Reader, count: int) -> None:
        hasher = hashlib.sha256()
        for position in range(count):
            token = reader.read(reader.scalar("Q", TOKENS_KEY), TOKENS_KEY)
            if position >= VOCAB_CHECK_START_TOKEN_ID:
                # Length-prefixed, so that no two token lists hash alike by where the texts split.
                hasher.update(struct.pack("<Q", len(token)) + token)
            end = position + 1
            if end >= count - VOCAB_MAX_SIZE_DIFFERENCE:
                self.digests[end] = hasher.hexdigest()


def _read_value(reader: _Reader, value_type: int, key: str, max_array_items: int,
                array_lengths: Dict[str, int], token_digests: Optional[_TokenDigests] = None) -> Any:
    if value_type in _SCALAR_FORMATS:
        return reader.scalar(_SCALAR_FORMATS[value_type], key)
    if value_type == _TYPE_STRING:
        return reader.string(key)
    if value_type == _TYPE_ARRAY:
        return _read_array(reader, key, max_array_items, array_lengths, token_digests)
    raise GGUFError("%s: key %r has unknown value type %d at byte %d"
                    % (reader.path_hint, key, value_type, reader.offset()))


def _read_array(reader: _Reader, key: str, max_array_items: int, array_lengths: Dict[str, int],
                token_digests: Optional[_TokenDigests] = None) -> List[Any]:
    """Keep the first max_array_items elements, skip the rest, record the length."""
    element_type = reader.scalar("I", key + " (array type)")
    count = reader.scalar("Q", key + " (array length)")
    array_lengths[key] = count
    kept: List[Any] = []
    if token_digests is not None and key == TOKENS_KEY and element_type == _TYPE_STRING:
        token_digests.read(reader, count)
        return kept
    for position in range(count):
        if position < max_array_items:
            # Nested arrays are recorded under key[i]; none of llama.cpp's keys use them.
            kept.append(_read_value(reader, element_type, "%s[%d]" % (key, position),
                                    max_array_items, array_lengths))
        elif element_type in _SCALAR_FORMATS:
            reader.skip(struct.calcsize(_SCALAR_FORMATS[element_type]) * (count - position), key)
            break
        elif element_type == _TYPE_STRING:
            reader.skip_string(key)
        else:
            _read_value(reader, element_type, "%s[%d]" % (key, position), 0, {})
    return kept


def _read_header(reader: _Reader) -> Tuple[int, int, int]:
    magic = reader.read(4, "magic")
    if magic != GGUF_MAGIC:
        raise GGUFError("%s: not a GGUF file (starts with %r, expected %r)"
                        % (reader.path_hint, magic, GGUF_MAGIC))
    raw_version = reader.read(4, "version")
    version = struct.unpack("<I", raw_version)[0]
    # A big-endian file's small version number reads as a huge little-endian one
    # (gguf-py does the same check).
    if version & 0xFFFF == 0:
        reader.byte_order = ">"
        version = struct.unpack(">I", raw_version)[0]
    if version not in SUPPORTED_VERSIONS:
        raise GGUFError("%s: GGUF version %d is not supported (this reader knows %s)"
                        % (reader.path_hint, version, ", ".join(map(str, SUPPORTED_VERSIONS))))
    tensor_count = reader.scalar("Q", "tensor_count")
    kv_count = reader.scalar("Q", "kv_count")
    return version, tensor_count, kv_count


def _read_tensor_infos(reader: _Reader, tensor_count: int) -> int:
    """Skip over the tensor-info table, returning the number of parameters it describes."""
    parameter_count = 0
    for position in range(tensor_count):
        what = "tensor info %d" % position
        reader.skip_string(what)
        n_dims = reader.scalar("I", what)
        elements = 1
        for _ in range(n_dims):
            elements *= reader.scalar("Q", what)
        reader.skip(4 + 8, what)  # ggml type, data offset
        parameter_count += elements
    return parameter_count


def read_gguf_metadata(source: Source, max_array_items: int = DEFAULT_MAX_ARRAY_ITEMS,
                       token_digests: bool = False) -> Dict[str, Any]:
    """Read a GGUF file's header, metadata and tensor-info table.

    source: a path, or a seekable binary file object positioned at the file's start.
    max_array_items: how many elements of each array to keep; the rest are read
    past, so a 150k-entry tokenizer vocabulary costs no memory. Every array's
    full length is in ``array_lengths`` either way. The per-layer lists of
    LAYER_ARRAY_SUFFIXES are kept whole (up to MAX_LAYER_ARRAY_ITEMS).
    token_digests: also hash the token texts (tokenizer_summary, draft_vocab_refusal);
    the tokens are then read, not skipped.

    Returns a dict:
      version, tensor_count, kv_count: from the fixed header;
      metadata: {key: value}, scalars as Python values, arrays as lists of at
        most max_array_items elements;
      array_lengths: {key: full length} for every array;
      kv_end_offset: byte offset where the key/value section ends;
      tensor_info_end_offset: byte offset where the tensor-info table ends
        (tensor data starts at the next multiple of general.alignment);
      parameter_count: sum of the element counts of all tensors;
      token_digests: {vocabulary size: digest} (_TokenDigests), with token_digests.
    """
    if hasattr(source, "read"):
        return _read_stream(source, getattr(source, "name", "<stream>"),  # type: ignore[arg-type]
                            max_array_items, token_digests)
    path = os.fspath(source)
    with open(path, "rb") as stream:
        return _read_stream(stream, path, max_array_items, token_digests)


def _read_stream(stream: IO[bytes], path_hint: str, max_array_items: int, token_digests: bool) -> Dict[str, Any]:
    reader = _Reader(stream, str(path_hint))
    digests = _TokenDigests() if token_digests else None
    version, tensor_count, kv_count = _read_header(reader)
    metadata: Dict[str, Any] = {}
    array_lengths: Dict[str, int] = {}
    for _ in range(kv_count):
        key = reader.string("metadata key", limit=MAX_KEY_BYTES)
        value_type = reader.scalar("I", key + " (type)")
        keep = MAX_LAYER_ARRAY_ITEMS if key.endswith(LAYER_ARRAY_SUFFIXES) else max_array_items
        metadata[key] = _read_value(reader, value_type, key, keep, array_lengths, digests)
    kv_end_offset = reader.offset()
    parameter_count = _read_tensor_infos(reader, tensor_count)
    return {
        "version": version,
        "tensor_count": tensor_count,
        "kv_count": kv_count,
        "metadata": metadata,
        "array_lengths": array_lengths,
        "kv_end_offset": kv_end_offset,
        "tensor_info_end_offset": reader.offset(),
        "parameter_count": parameter_count,
        "token_digests": digests.digests if digests else {},
    }


def _largest(value: Any) -> Any:
    """Per-layer lists (e.g. head_count_kv on hybrid models) -> their largest entry."""
    if isinstance(value, list):
        return max(value) if value else None
    return value


def quantization_name(file_type: Any) -> str:
    """general.file_type -> llama.cpp's name for it ("Q4_1"), or "unknown (N)"."""
    if file_type is None:
        return "unknown"
    return LLAMA_FTYPE_NAMES.get(file_type, "unknown (%s)" % file_type)


def model_summary(gguf: Dict[str, Any]) -> Dict[str, Any]:
    """The numbers a memory plan needs, from read_gguf_metadata()'s result.

    Keys follow llama.cpp's names ({arch}.block_count etc.). head_count_kv
    defaults to head_count (no GQA) and key/value_length to
    embedding_length / head_count, as llama.cpp does when they are absent.
    A per-layer list (some hybrid models) is reduced to its largest entry here;
    the whole list of KV heads per layer (0 for a layer without attention) is
    in kv_heads_per_layer, and sliding_window / sliding_window_pattern are the
    raw sliding-window keys; full_attention_interval, recurrent_layers,
    nextn_predict_layers and ssm the raw keys of hybrid attention/recurrent
    models (memory_plan.kv_layout reads them).
    """
    metadata = gguf["metadata"]
    architecture = metadata.get("general.architecture")
    if not architecture:
        raise GGUFError("GGUF metadata has no general.architecture")

    def arch_key(name: str) -> Any:
        return _largest(metadata.get("%s.%s" % (architecture, name)))

    head_count = arch_key("attention.head_count")
    embedding_length = arch_key("embedding_length")
    derived_head_dim = embedding_length // head_count if embedding_length and head_count else None
    key_length = arch_key("attention.key_length") or derived_head_dim
    vocab_size = arch_key("vocab_size") or gguf["array_lengths"].get("tokenizer.ggml.tokens")
    file_type = metadata.get("general.file_type")
    return {
        "architecture": architecture,
        "name": metadata.get("general.name"),
        "size_label": metadata.get("general.size_label"),
        "block_count": arch_key("block_count"),
        "head_count": head_count,
        "head_count_kv": arch_key("attention.head_count_kv") or head_count,
        "embedding_length": embedding_length,
        "feed_forward_length": arch_key("feed_forward_length"),
        "context_length": arch_key("context_length"),
        "key_length": key_length,
        "value_length": arch_key("attention.value_length") or derived_head_dim,
        "head_dim": key_length,
        "vocab_size": vocab_size,
        "file_type": file_type,
        "quantization": quantization_name(file_type),
        "parameter_count": gguf.get("parameter_count"),
        "kv_heads_per_layer": _per_layer(metadata.get("%s.attention.head_count_kv" % architecture)),
        "sliding_window": metadata.get("%s.attention.sliding_window" % architecture),
        "sliding_window_pattern": metadata.get("%s.attention.sliding_window_pattern" % architecture),
        "full_attention_interval": metadata.get("%s.full_attention_interval" % architecture),
        "recurrent_layers": _per_layer(metadata.get("%s.attention.recurrent_layers" % architecture)),
        "nextn_predict_layers": metadata.get("%s.nextn_predict_layers" % architecture),
        "ssm": {name: metadata.get("%s.ssm.%s" % (architecture, name))
                for name in ("conv_kernel", "inner_size", "state_size", "group_count")},
    }


def tokenizer_summary(gguf: Dict[str, Any]) -> Dict[str, Any]:
    """What llama.cpp compares before a model drafts for another, from read_gguf_metadata(token_digests=True):
    the vocabulary type, and whether it adds a BOS and an EOS token and which, as llama.cpp resolves them
    (_special_tokens)."""
    metadata = gguf["metadata"]
    model = metadata.get("tokenizer.ggml.model")
    tokens = gguf["array_lengths"].get(TOKENS_KEY)
    add_bos, add_eos, bos, eos = _special_tokens(model, metadata.get("tokenizer.ggml.pre") or "default",
                                                 metadata, tokens)
    return {"model": model, "vocab_type": VOCAB_TYPES.get(model, model), "add_bos": add_bos, "add_eos": add_eos,
            "bos": bos, "eos": eos, "tokens": tokens, "digests": gguf.get("token_digests") or {}}


# llama_vocab::impl::load at 0c1e57098 (src/llama-vocab.cpp): each tokenizer model's default BOS and EOS ids
# (1971-2143), whether it adds them (2430-2452; BPE adds a BOS for these pre-tokenizers only, 2174-2185, 2307,
# 2333, and none with chatglm's, 2286-2293), then the header's keys (2594-2595, 2641-2645; an id outside the
# vocabulary keeps the default, 2627-2632), then Gemma 4 always adds a BOS (2649-2656).
DEFAULT_SPECIAL_TOKENS = {"SPM": (True, False, 1, 2), "WPM": (True, False, 101, None), "BPE": (False, False, 11, 11),
                          "UGM": (False, True, None, 1), "RWKV": (False, False, None, None),
                          "PLaMo2": (False, False, 1, 2)}
BPE_PRE_ADDING_BOS = ("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                      "jina-v5-nano", "tekken", "chameleon")
BPE_PRE_WITHOUT_BOS = ("chatglm-bpe", "glm4", "glm5")
GEMMA4_PRE = ("gemma4", "granite-embed-multi-311m")


def _special_tokens(model: Any, pre: str, metadata: Dict[str, Any], tokens: Optional[int]) -> Tuple[Any, ...]:
    """(add_bos, add_eos, bos id, eos id) as llama.cpp resolves them; None for an id it leaves unset."""
    if model == "gemma4":
        pre = "gemma4"
    add_bos, add_eos, bos, eos = DEFAULT_SPECIAL_TOKENS.get(VOCAB_TYPES.get(model, ""), (False, False, None, None))
    if model == "gemma4":
        bos = eos = None
    elif VOCAB_TYPES.get(model) == "BPE":
        add_bos = pre in BPE_PRE_ADDING_BOS
        bos = None if pre in BPE_PRE_WITHOUT_BOS else bos

    def stated(key: str, default: Any) -> Any:
        value = metadata.get(key)
        in_range = default is None or tokens is None or default < tokens
        return value if value is not None and (tokens is None or value < tokens) else default if in_range else None

    bos, eos = stated("tokenizer.ggml.bos_token_id", bos), stated("tokenizer.ggml.eos_token_id", eos)
    add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", add_bos)) or pre in GEMMA4_PRE
    add_eos = bool(metadata.get("tokenizer.ggml.add_eos_token", add_eos))
    return add_bos, add_eos, bos, eos


def draft_vocab_refusal(target: Dict[str, Any], draft: Dict[str, Any]) -> Optional[str]:
    """Why llama.cpp would not draft with `draft` (a tokenizer_summary) for `target`, or None: the checks of
    common_speculative_are_compatible (common/speculative.cpp:67-127 at 0c1e57098), made on the headers.
    llama-server does not refuse such a draft: it logs the error and serves without drafting
    (tools/server/server-context.cpp:1239-1261)."""
    if draft["vocab_type"] != target["vocab_type"]:
        return "its vocabulary type is %s (tokenizer.ggml.model %s), the model's %s (%s)" % (
            draft["vocab_type"], draft["model"], target["vocab_type"], target["model"])
    for use, token in (("add_bos", "bos"), ("add_eos", "eos")):
        if target[use] != draft[use]:
            return "it %s a %s token and the model %s (tokenizer.ggml.%s_token)" % (
                _adds(draft[use]), token.upper(), _adds(target[use]), use)
        if target[use] and target[token] != draft[token]:
            return "its %s token is %s, the model's %s (tokenizer.ggml.%s_token_id)" % (
                token.upper(), draft[token], target[token], token)
    target_size, draft_size = target["tokens"], draft["tokens"]
    if target_size is None or draft_size is None:
        return None
    if abs(target_size - draft_size) > VOCAB_MAX_SIZE_DIFFERENCE:
        return "its vocabulary has %d tokens, the model's %d: more than %d apart" % (
            draft_size, target_size, VOCAB_MAX_SIZE_DIFFERENCE)
    common = min(target_size, draft_size)
    if common > VOCAB_CHECK_START_TOKEN_ID and target["digests"].get(common) != draft["digests"].get(common):
        return "the texts of its tokens %d to %d differ from the model's" % (VOCAB_CHECK_START_TOKEN_ID, common - 1)
    return None


def _adds(value: Any) -> str:
    return "adds" if value else "does not add"


def _per_layer(value: Any) -> Any:
    return list(value) if isinstance(value, list) and value else None


def split_paths(path: str, gguf: Dict[str, Any]) -> List[str]:
    """Every file of the model whose part 1 is `path`: itself, or all parts of a split set.

    As llama.cpp's loader finds them (src/llama-model-loader.cpp and llama_split_prefix in src/llama.cpp at the
    pinned commit): split.count in part 1's metadata (split.no 0: it refuses to load from another part), and
    part N named <prefix>-<N:05d>-of-<count:05d>.gguf.
    """
    count = gguf["metadata"].get("split.count") or 1
    if count < 2:
        return [path]
    number = gguf["metadata"].get("split.no")
    if number is None:
        raise GGUFError("%s says split.count %d but has no split.no, which llama.cpp requires" % (path, count))
    if number != 0:
        raise GGUFError("%s is part %d of a split set of %d files: llama.cpp loads a split model from its part 1 "
                        "(...-00001-of-%05d.gguf)" % (path, number + 1, count, count))
    suffix = "-00001-of-%05d.gguf" % count
    if not path.endswith(suffix):
        raise GGUFError("%s is part of a split set of %d files but not named as its part 1 (...%s): llama.cpp "
                        "cannot find the other parts" % (path, count, suffix))
    folder, name = posixpath.split(path)
    return [posixpath.join(folder, part) for part in split_parts(name)]

