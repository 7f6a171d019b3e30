"""gguf_metadata: the real SmolLM2 header (tests/fixtures/models) and synthetic files.

Synthetic files are built with a small writer below, laid out as gguf.h
describes, to reach value types and byte orders the real file does not use.
"""
from __future__ import annotations

import hashlib
import io
import struct

import pytest

from ansible_collections.v100.llm.plugins.module_utils.models.gguf import (
    GGUFError,
    draft_vocab_refusal,
    model_summary,
    quantization_name,
    read_gguf_metadata,
    split_paths,
    tokenizer_summary,
)
from conftest import FIXTURES

SMOLLM2_PREFIX = FIXTURES / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix"
SMOLLM2_PREFIX_SHA256 = "cd2d87a25589b59f222688858608478fd7ed55b0cefdc3e96076591029713ce4"
SMOLLM2_KV_END = 1769507
SMOLLM2_TENSOR_INFO_END = 1785664


# --- a minimal GGUF writer --------------------------------------------------

TYPE_FORMATS = {"u8": (0, "B"), "i8": (1, "b"), "u16": (2, "H"), "i16": (3, "h"), "u32": (4, "I"),
                "i32": (5, "i"), "f32": (6, "f"), "bool": (7, "?"), "u64": (10, "Q"), "i64": (11, "q"),
                "f64": (12, "d")}


def _string(text: str, order: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack(order + "Q", len(data)) + data


def _value(kind: str, value, order: str) -> bytes:
    """kind: a TYPE_FORMATS name, "str", or ("array", element kind)."""
    if kind == "str":
        return _string(value, order)
    if isinstance(kind, tuple):
        element = kind[1]
        body = b"".join(_value(element, item, order) for item in value)
        return struct.pack(order + "IQ", _type_id(element), len(value)) + body
    return struct.pack(order + TYPE_FORMATS[kind][1], value)


def _type_id(kind) -> int:
    return 8 if kind == "str" else 9 if isinstance(kind, tuple) else TYPE_FORMATS[kind][0]


def build_gguf(kvs, tensors=(), version: int = 3, order: str = "<") -> bytes:
    """kvs: [(key, kind, value)]; tensors: [(name, dims)]."""
    out = b"GGUF" + struct.pack(order + "IQQ", version, len(tensors), len(kvs))
    for key, kind, value in kvs:
        out += _string(key, order) + struct.pack(order + "I", _type_id(kind)) + _value(kind, value, order)
    for name, dims in tensors:
        out += _string(name, order) + struct.pack(order + "I", len(dims))
        out += b"".join(struct.pack(order + "Q", dim) for dim in dims)
        out += struct.pack(order + "IQ", 0, 0)
    return out


def llama_kvs(**overrides):
    kvs = {
        "general.architecture": ("str", "llama"),
        "general.file_type": ("u32", 15),
        "llama.block_count": ("u32", 64),
        "llama.context_length": ("u32", 32768),
        "llama.embedding_length": ("u32", 5120),
        "llama.attention.head_count": ("u32", 40),
        "llama.attention.head_count_kv": ("u32", 8),
    }
    kvs.update(overrides)
    return [(key, kind, value) for key, (kind, value) in kvs.items() if kind is not None]


# --- the real file ----------------------------------------------------------


def test_fixture_is_the_documented_prefix():
    data = SMOLLM2_PREFIX.read_bytes()
    assert len(data) == SMOLLM2_TENSOR_INFO_END
    assert hashlib.sha256(data).hexdigest() == SMOLLM2_PREFIX_SHA256


def test_real_smollm2_header():
    gguf = read_gguf_metadata(SMOLLM2_PREFIX)
    assert gguf["version"] == 3
    assert gguf["tensor_count"] == 272
    assert gguf["kv_count"] == 33
    assert len(gguf["metadata"]) == 33
    assert gguf["kv_end_offset"] == SMOLLM2_KV_END
    assert gguf["tensor_info_end_offset"] == SMOLLM2_TENSOR_INFO_END
    assert gguf["parameter_count"] == 134515008
    metadata = gguf["metadata"]
    assert metadata["general.architecture"] == "llama"
    assert metadata["general.license"] == "apache-2.0"
    assert metadata["llama.rope.freq_base"] == 100000.0
    assert metadata["tokenizer.ggml.add_bos_token"] is False
    assert metadata["tokenizer.ggml.model"] == "gpt2"
    assert metadata["tokenizer.chat_template"].startswith("{% for message in messages %}")


def test_real_smollm2_arrays_are_counted_not_kept():
    gguf = read_gguf_metadata(SMOLLM2_PREFIX)
    assert gguf["array_lengths"] == {
        "general.languages": 1,
        "tokenizer.ggml.tokens": 49152,
        "tokenizer.ggml.token_type": 49152,
        "tokenizer.ggml.merges": 48900,
    }
    assert gguf["metadata"]["general.languages"] == ["en"]
    assert gguf["metadata"]["tokenizer.ggml.tokens"][:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert len(gguf["metadata"]["tokenizer.ggml.tokens"]) == 16
    assert len(gguf["metadata"]["tokenizer.ggml.token_type"]) == 16

    nothing_kept = read_gguf_metadata(SMOLLM2_PREFIX, max_array_items=0)
    assert nothing_kept["metadata"]["tokenizer.ggml.tokens"] == []
    assert nothing_kept["array_lengths"]["tokenizer.ggml.tokens"] == 49152
    assert nothing_kept["tensor_info_end_offset"] == SMOLLM2_TENSOR_INFO_END


def test_real_smollm2_summary():
    summary = model_summary(read_gguf_metadata(SMOLLM2_PREFIX))
    assert summary == {
        "architecture": "llama",
        "name": "Smollm2 135M 8k Lc100K Mix1 Ep2",
        "size_label": "135M",
        "block_count": 30,
        "head_count": 9,
        "head_count_kv": 3,
        "embedding_length": 576,
        "feed_forward_length": 1536,
        "context_length": 8192,
        "key_length": 64,
        "value_length": 64,
        "head_dim": 64,
        "vocab_size": 49152,
        "file_type": 3,
        "quantization": "Q4_1",
        "parameter_count": 134515008,
        "kv_heads_per_layer": None,
        "sliding_window": None,
        "sliding_window_pattern": None,
        "full_attention_interval": None,
        "recurrent_layers": None,
        "nextn_predict_layers": None,
        "ssm": {"conv_kernel": None, "inner_size": None, "state_size": None, "group_count": None},
    }


def test_reads_from_an_open_file_object():
    with SMOLLM2_PREFIX.open("rb") as stream:
        gguf = read_gguf_metadata(stream)
    assert gguf["metadata"]["llama.block_count"] == 30


def test_file_cut_after_the_metadata_is_reported_as_truncated():
    cut = io.BytesIO(SMOLLM2_PREFIX.read_bytes()[:SMOLLM2_KV_END])
    with pytest.raises(GGUFError, match=r"file ends at byte 1769507 while reading tensor info 0"):
        read_gguf_metadata(cut)


def test_file_cut_inside_the_vocabulary_is_reported_as_truncated():
    cut = io.BytesIO(SMOLLM2_PREFIX.read_bytes()[:500000])
    with pytest.raises(GGUFError, match=r"file ends at byte 500000 while reading tokenizer\.ggml\.tokens"):
        read_gguf_metadata(cut)


# --- synthetic files --------------------------------------------------------


def test_every_value_type_round_trips():
    kvs = [
        ("u8", "u8", 255), ("i8", "i8", -128), ("u16", "u16", 65535), ("i16", "i16", -32768),
        ("u32", "u32", 4294967295), ("i32", "i32", -2147483648), ("f32", "f32", 0.5),
        ("bool", "bool", True), ("u64", "u64", 2 ** 64 - 1), ("i64", "i64", -(2 ** 63)),
        ("f64", "f64", 0.1), ("str", "str", "héllo"),
        ("ints", ("array", "i32"), [1, -2, 3]),
        ("strs", ("array", "str"), ["a", "bc"]),
        ("nested", ("array", ("array", "u8")), [[1, 2], [3]]),
    ]
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(kvs)))
    metadata = gguf["metadata"]
    assert metadata["u8"] == 255 and metadata["i8"] == -128
    assert metadata["u16"] == 65535 and metadata["i16"] == -32768
    assert metadata["u32"] == 4294967295 and metadata["i32"] == -2147483648
    assert metadata["f32"] == 0.5 and metadata["f64"] == 0.1
    assert metadata["bool"] is True
    assert metadata["u64"] == 2 ** 64 - 1 and metadata["i64"] == -(2 ** 63)
    assert metadata["str"] == "héllo"
    assert metadata["ints"] == [1, -2, 3]
    assert metadata["strs"] == ["a", "bc"]
    assert metadata["nested"] == [[1, 2], [3]]
    assert gguf["array_lengths"] == {"ints": 3, "strs": 2, "nested": 2, "nested[0]": 2, "nested[1]": 1}


def test_long_arrays_are_skipped_past_every_element_type():
    kvs = [
        ("ints", ("array", "u64"), list(range(100))),
        ("strs", ("array", "str"), ["token%d" % n for n in range(100)]),
        ("nested", ("array", ("array", "u8")), [[n] for n in range(5)]),
        ("after", "str", "still read"),
    ]
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(kvs)), max_array_items=2)
    assert gguf["metadata"]["ints"] == [0, 1]
    assert gguf["metadata"]["strs"] == ["token0", "token1"]
    assert gguf["metadata"]["nested"] == [[0], [1]]
    assert gguf["array_lengths"]["ints"] == 100
    assert gguf["array_lengths"]["strs"] == 100
    assert gguf["array_lengths"]["nested"] == 5
    assert gguf["metadata"]["after"] == "still read"


def test_per_layer_lists_and_sliding_window_keys_are_kept_whole():
    # A hybrid model's KV heads per layer (0: no attention there) and a sliding-window pattern.
    kvs = llama_kvs(**{
        "llama.attention.head_count_kv": (("array", "u32"), [0, 8, 0, 8] * 16),
        "llama.attention.sliding_window": ("u32", 1024),
        "llama.attention.sliding_window_pattern": (("array", "bool"), [True, True, False] * 20),
        "tokenizer.ggml.scores": (("array", "f32"), [0.5] * 100),
    })
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(kvs)), max_array_items=0)
    assert gguf["metadata"]["tokenizer.ggml.scores"] == []
    summary = model_summary(gguf)
    assert summary["kv_heads_per_layer"] == [0, 8, 0, 8] * 16 and summary["head_count_kv"] == 8
    assert summary["sliding_window"] == 1024
    assert summary["sliding_window_pattern"] == [True, True, False] * 20


def test_version_2_and_big_endian_files():
    tensors = [("token_embd.weight", (5120, 152064)), ("blk.0.attn_norm.weight", (5120,))]
    for version, order in ((2, "<"), (3, ">")):
        gguf = read_gguf_metadata(io.BytesIO(build_gguf(llama_kvs(), tensors, version=version, order=order)))
        assert gguf["version"] == version
        assert gguf["metadata"]["llama.block_count"] == 64
        assert gguf["parameter_count"] == 5120 * 152064 + 5120


def test_not_a_gguf_file():
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_gguf_metadata(io.BytesIO(b"\x7fELF" + b"\0" * 20))


def test_version_1_is_refused():
    with pytest.raises(GGUFError, match="GGUF version 1 is not supported"):
        read_gguf_metadata(io.BytesIO(build_gguf([], version=1)))


def test_a_corrupt_length_fails_before_allocating():
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2 ** 40) + b"key"
    with pytest.raises(GGUFError, match="metadata key is 1099511627776 bytes long"):
        read_gguf_metadata(io.BytesIO(data))
    huge_string = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("k", "<") + struct.pack("<IQ", 8, 2 ** 50)
    with pytest.raises(GGUFError, match="needed"):
        read_gguf_metadata(io.BytesIO(huge_string))


def test_unknown_value_type():
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("k", "<") + struct.pack("<I", 99)
    with pytest.raises(GGUFError, match="key 'k' has unknown value type 99"):
        read_gguf_metadata(io.BytesIO(data))


def test_summary_defaults_follow_llama_cpp():
    """No head_count_kv -> no GQA; no key_length -> embedding / heads."""
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(llama_kvs(**{"llama.attention.head_count_kv": (None, None)}))))
    summary = model_summary(gguf)
    assert summary["head_count_kv"] == 40
    assert summary["head_dim"] == 128
    assert summary["quantization"] == "Q4_K_M"
    assert summary["vocab_size"] is None


def test_summary_prefers_explicit_key_length_and_vocab_from_tokens():
    kvs = llama_kvs(**{
        "llama.attention.key_length": ("u32", 256),
        "llama.attention.value_length": ("u32", 256),
        "tokenizer.ggml.tokens": (("array", "str"), ["a", "b", "c"]),
    })
    summary = model_summary(read_gguf_metadata(io.BytesIO(build_gguf(kvs))))
    assert summary["head_dim"] == summary["key_length"] == summary["value_length"] == 256
    assert summary["vocab_size"] == 3


def test_summary_takes_the_largest_per_layer_entry():
    kvs = llama_kvs(**{"llama.attention.head_count_kv": (("array", "i32"), [0, 8, 0, 4])})
    assert model_summary(read_gguf_metadata(io.BytesIO(build_gguf(kvs))))["head_count_kv"] == 8


def test_summary_needs_an_architecture():
    with pytest.raises(GGUFError, match="no general.architecture"):
        model_summary(read_gguf_metadata(io.BytesIO(build_gguf([("general.name", "str", "x")]))))


@pytest.mark.parametrize("file_type, name", [
    (0, "F32"), (1, "F16"), (2, "Q4_0"), (3, "Q4_1"), (7, "Q8_0"), (8, "Q5_0"), (9, "Q5_1"),
    (10, "Q2_K"), (11, "Q3_K_S"), (12, "Q3_K_M"), (13, "Q3_K_L"), (14, "Q4_K_S"), (15, "Q4_K_M"),
    (16, "Q5_K_S"), (17, "Q5_K_M"), (18, "Q6_K"), (25, "IQ4_NL"), (30, "IQ4_XS"), (32, "BF16"),
    (4, "unknown (4)"), (None, "unknown"),
])
def test_quantization_names_follow_llama_ftype(file_type, name):
    assert quantization_name(file_type) == name


# --- split sets (llama-gguf-split writes split.no and split.count as u16, split.tensors.count as i32) ---------


def split_kvs(number, count, tensors=272):
    return [("split.no", "u16", number), ("split.count", "u16", count), ("split.tensors.count", "i32", tensors)]


def test_a_single_file_is_its_own_set():
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(llama_kvs())))
    assert split_paths("/srv/models/m.gguf", gguf) == ["/srv/models/m.gguf"]


def test_part_1_names_every_part_as_llama_cpp_finds_them():
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(llama_kvs() + split_kvs(0, 3))))
    assert split_paths("/m/Q-00001-of-00003.gguf", gguf) == ["/m/Q-0000%d-of-00003.gguf" % n for n in (1, 2, 3)]


def test_a_part_other_than_1_or_a_misnamed_part_1_is_refused():
    later = read_gguf_metadata(io.BytesIO(build_gguf(split_kvs(1, 3))))
    with pytest.raises(GGUFError, match="is part 2 of a split set of 3 files: llama.cpp loads a split model from "
                                        "its part 1"):
        split_paths("/m/Q-00002-of-00003.gguf", later)
    first = read_gguf_metadata(io.BytesIO(build_gguf(llama_kvs() + split_kvs(0, 3))))
    with pytest.raises(GGUFError, match="not named as its part 1"):
        split_paths("/m/renamed.gguf", first)


def test_a_split_count_without_split_no_is_refused_as_llama_cpp_does():
    gguf = read_gguf_metadata(io.BytesIO(build_gguf(llama_kvs() + [("split.count", "u16", 2)])))
    with pytest.raises(GGUFError, match="has no split.no, which llama.cpp requires"):
        split_paths("/m/Q-00001-of-00002.gguf", gguf)


def _tokenizer(tokens, model="gpt2", pre=None, **keys):
    kvs = [("general.architecture", "str", "llama"), ("tokenizer.ggml.model", "str", model),
           ("tokenizer.ggml.tokens", ("array", "str"), tokens)]
    kvs += [("tokenizer.ggml.pre", "str", pre)] if pre else []
    kvs += [("tokenizer.ggml.%s" % key, "bool" if key.startswith("add_") else "u32", value)
            for key, value in keys.items()]
    return tokenizer_summary(read_gguf_metadata(io.BytesIO(build_gguf(kvs)), token_digests=True))


def test_a_draft_vocabulary_is_compared_as_llama_cpp_compares_it():
    """common_speculative_are_compatible (common/speculative.cpp:67-127 at 0c1e57098)."""
    tokens = ["t%d" % position for position in range(300)]
    bos = dict(add_bos_token=True, bos_token_id=1)
    target = _tokenizer(tokens, eos_token_id=2, **bos)
    assert target["tokens"] == 300 and sorted(target["digests"]) == list(range(172, 301))
    # Up to 128 tokens fewer or more, the same texts from id 5: the smaller vocabulary's digest is compared.
    assert draft_vocab_refusal(target, _tokenizer(tokens[:172], **bos)) is None
    assert draft_vocab_refusal(target, _tokenizer(tokens + ["x"] * 128, **bos)) is None
    # Ids 0-4 (control tokens) are not compared.
    assert draft_vocab_refusal(target, _tokenizer(["other"] + tokens[1:], **bos)) is None
    assert draft_vocab_refusal(target, _tokenizer(tokens[:171], **bos)) == (
        "its vocabulary has 171 tokens, the model's 300: more than 128 apart")
    assert draft_vocab_refusal(target, _tokenizer(tokens[:5] + ["other"] + tokens[6:], **bos)) == (
        "the texts of its tokens 5 to 299 differ from the model's")
    assert draft_vocab_refusal(target, _tokenizer(tokens, add_bos_token=False)) == (
        "it does not add a BOS token and the model adds (tokenizer.ggml.add_bos_token)")
    assert draft_vocab_refusal(target, _tokenizer(tokens, add_bos_token=True, bos_token_id=0)) == (
        "its BOS token is 0, the model's 1 (tokenizer.ggml.bos_token_id)")
    # The EOS id counts only where a model adds one.
    assert draft_vocab_refusal(target, _tokenizer(tokens, eos_token_id=7, **bos)) is None


def test_settings_a_header_leaves_out_are_llama_cpp_s_defaults():
    """src/llama-vocab.cpp at 0c1e57098: BPE adds no BOS but for some pre-tokenizers (2174-2185), SPM adds one
    (2430-2435), Gemma 4 always adds one (2649-2656), and a default id is 11 for BPE, 1 for SPM (2032, 1975)."""
    tokens = ["t%d" % position for position in range(300)]
    # Stated here, left to the default there: the same when the default agrees.
    assert draft_vocab_refusal(_tokenizer(tokens, add_bos_token=False), _tokenizer(tokens)) is None
    assert draft_vocab_refusal(_tokenizer(tokens, add_bos_token=True), _tokenizer(tokens)) == (
        "it does not add a BOS token and the model adds (tokenizer.ggml.add_bos_token)")
    assert draft_vocab_refusal(_tokenizer(tokens, pre="llama-bpe"),
                               _tokenizer(tokens, pre="llama-bpe", add_bos_token=True, bos_token_id=11)) is None
    assert draft_vocab_refusal(_tokenizer(tokens, model="llama"), _tokenizer(tokens, model="llama", bos_token_id=1,
                                                                             add_bos_token=True)) is None
    # Gemma 4 adds a BOS whatever its header says.
    assert draft_vocab_refusal(_tokenizer(tokens, pre="gemma4", add_bos_token=False),
                               _tokenizer(tokens, pre="gemma4", add_bos_token=True)) is None
    # An id outside the vocabulary keeps the default.
    assert draft_vocab_refusal(_tokenizer(tokens, model="llama", bos_token_id=1),
                               _tokenizer(tokens, model="llama", bos_token_id=4000)) is None
