# -*- coding: utf-8 -*-
"""Will a model, its KV cache and llama.cpp's buffers fit in GPU memory?

Per GPU, in MiB (each term rounded up):

    required = weights + kv_cache + compute_buffer + overhead + safety_margin
    kv_cache (all GPUs) = 2 (K and V) x layers x kv_heads x head_dim
                          x context_per_slot x slots x bytes_per_element

kv_heads is the number of KEY/VALUE heads (GQA), not attention heads. With
gpu_count > 1 the layers are split across the GPUs (llama.cpp `-sm layer`);
the busiest GPU holds ceil(layers / gpu_count) layers and that share of the
weights and of the KV cache, which is the GPU the plan sizes.

context_per_slot and slots are explicit on purpose: how llama-server's `-c`
and `-np` map onto them is wired by the caller. At llama.cpp 0c1e57098,
`llama-completion -c 8192 -np 4` allocates 4 sequences of 2048 cells
(n_ctx_seq = 2048, KV 180 MiB for SmolLM2-135M), i.e. context_per_slot = c / np.

The KV sizes and the compute-buffer estimate were checked against llama.cpp
0c1e57098's own log lines (llama_kv_cache size, sched_reserve compute buffer
size) for SmolLM2-135M (CPU backend) at several contexts, batch sizes, KV types
and flash-attention settings (18 cases): KV sizes match exactly, the
compute-buffer estimate is within 5 % (4.9 % under to 3.4 % over). That is one
small model on the CPU backend; CUDA's own pool and context are the separate
overhead term.
"""
from __future__ import annotations

import posixpath
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.v100.llm.plugins.module_utils.models.gguf import (
    draft_vocab_refusal,
    model_summary,
    tokenizer_summary,
)
from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import Refusal

MIB = 1024 * 1024

# KV cache type -> (bytes per block, elements per block): ggml's block layouts
# (ggml/src/ggml-common.h, llama.cpp 0c1e57098), e.g. q8_0 = fp16 scale + 32 int8.
KV_CACHE_TYPES: Dict[str, Tuple[int, int]] = {
    "f32": (4, 1),
    "f16": (2, 1),
    "bf16": (2, 1),
    "q8_0": (34, 32),
    "q4_0": (18, 32),
    "q4_1": (20, 32),
    "q5_0": (22, 32),
    "q5_1": (24, 32),
    "iq4_nl": (18, 32),
}
SMALLER_KV_CACHE_TYPE = "q8_0"

# Per GPU: the CUDA context, cuBLAS workspace and llama.cpp's CUDA memory pool,
# none of which llama.cpp reports as model, KV or compute buffer. Measured on
# the lent H200 (CUDA 13, docs/BENCHMARKS.md "A packed plan on CUDA"): 614 MiB
# beside llama-server's own buffers, whose compute buffer was 26 MiB above the
# estimate; 700 covers both.
DEFAULT_OVERHEAD_MIB = 700
# Per GPU: memory the driver keeps from CUDA (616 MiB between nvidia-smi's
# total and CUDA's on the same H200, driver 580) and allocator fragmentation.
DEFAULT_SAFETY_MARGIN_MIB = 1024
# When the model's shape is unknown: covers the logits of a 250k-token
# vocabulary at the default micro-batch with flash attention on.
DEFAULT_COMPUTE_BUFFER_MIB = 512
DEFAULT_UBATCH = 512  # llama.cpp -ub default
# llama.cpp pads the context (n_ctx and the per-sequence n_ctx_seq) to a
# multiple of 256 cells (src/llama-context.cpp, GGML_PAD(..., 256)).
CONTEXT_STEP = 256
MAX_GPUS_TO_SUGGEST = 8
SOURCE = ("memory/plan.py formula, checked against llama.cpp 0c1e57098 llama_kv_cache and compute buffer "
          "sizes; VOLTA_FACTS.md, GPUs (memory)")


@dataclass(frozen=True)
class ModelShape:
    """What the planner needs to know about a model; architecture and dtype also feed
    the stack rules (vllm_model_architecture, vllm_model_dtype)."""

    architecture: str
    layers: int
    kv_heads: int
    head_dim: int
    attention_heads: Optional[int] = None
    embedding_length: Optional[int] = None
    feed_forward_length: Optional[int] = None
    vocab_size: Optional[int] = None
    context_length: Optional[int] = None
    dtype: Optional[str] = None
    quantization: Optional[str] = None
    source: str = ""
    kv_layout: Optional["KvLayout"] = None


def shape_from_gguf(gguf: Mapping[str, Any]) -> ModelShape:
    """From models/gguf.py read_gguf_metadata()'s result."""
    summary = model_summary(dict(gguf))
    layers = _required(summary, "block_count", "GGUF")
    kv_heads = _required(summary, "head_count_kv", "GGUF")
    return ModelShape(
        architecture=summary["architecture"],
        layers=layers,
        kv_heads=kv_heads,
        head_dim=_required(summary, "head_dim", "GGUF"),
        attention_heads=summary["head_count"],
        embedding_length=summary["embedding_length"],
        feed_forward_length=summary["feed_forward_length"],
        vocab_size=summary["vocab_size"],
        context_length=summary["context_length"],
        quantization=summary["quantization"],
        source="gguf",
        kv_layout=kv_layout(summary["architecture"], layers, kv_heads, summary["kv_heads_per_layer"],
                            summary["sliding_window"], summary["sliding_window_pattern"],
                            recurrent_flags=hybrid_recurrent_flags(
                                summary["architecture"], layers, summary.get("full_attention_interval"),
                                summary.get("recurrent_layers"), summary.get("nextn_predict_layers")),
                            recurrent_layer_bytes=recurrent_state_bytes(summary.get("ssm") or {})),
    )


# Architectures whose sliding-window layers llama.cpp gives a short KV cache
# (llama_kv_cache_iswa) when the GGUF names a window (<arch>.attention.
# sliding_window > 0), with the layer pattern each takes when the GGUF has no
# <arch>.attention.sliding_window_pattern: load_swa_pattern(ml, n) in
# src/models/{gemma2,gemma3,cohere2,openai-moe,olmo2}.cpp at 0c1e57098. Other
# architectures, and these without a window key, are counted as if every layer
# kept the whole context: more than llama.cpp allocates, never less.
SWA_DEFAULT_PATTERNS = {"gemma2": 2, "gemma3": 6, "cohere2": 4, "gpt-oss": 2, "olmo2": 4}


# Hybrid attention/recurrent architectures whose attention layers are every n-th (<arch>.full_attention_interval,
# default n where the GGUF has none) unless the GGUF lists <arch>.attention.recurrent_layers: at 0c1e57098
# src/models/qwen3next.cpp, qwen35.cpp and qwen35moe.cpp (layer il is recurrent when (il + 1) % n != 0; the
# last nextn_predict_layers layers, the MTP head, keep neither in the main model's memory; counted here as
# attention layers: more, never less).
HYBRID_ATTENTION_INTERVALS = {"qwen3next": 4, "qwen35": 4, "qwen35moe": 4}
# Of those, the ones whose recurrent state llama.cpp rolls back after rejected drafts (llm_arch_supports_rs_rollback,
# src/llama-arch.cpp:1123-1132 at 0c1e57098), keeping n_rs_seq more rows per sequence.
RECURRENT_ROLLBACK_ARCHITECTURES = frozenset(("qwen35", "qwen35moe"))
# Recurrent state elements are float32 (src/llama-model.cpp create_memory at 0c1e57098).
RECURRENT_STATE_BYTES = 4


@dataclass(frozen=True)
class KvLayout:
    """KV heads summed over the layers that keep the whole context, and over the
    sliding-window layers, which keep sliding_window tokens (plus a micro-batch);
    and the recurrent state one sequence keeps over a hybrid model's recurrent
    layers, whatever its context."""

    full_heads: int
    swa_heads: int = 0
    sliding_window: int = 0
    recurrent_bytes: int = 0


@dataclass(frozen=True)
class DraftModel:
    """What speculative decoding with a second model adds to a llama-server instance (llama_server's
    `speculative`), at 0c1e57098 (common_speculative_init_result, common/speculative.cpp:2512-2565): a context
    with the target's cells and sequences (n_ctx, n_seq_max, kv_unified), K and V in f16 (-ctkd/-ctvd's
    default, common/common.h:343-344) and its own compute buffer. A draft model adds its weights, split over
    the GPUs as the target's are (it inherits the devices, split mode and -ts: common_base_params_to_speculative,
    speculative.cpp:2446-2481). An MTP context runs on the target's weights and keeps a KV cache for the nextn
    layers only (src/llama-model.cpp:2660-2664 and 2794-2803 for Qwen3.5): `shape` is those layers, all counted
    on the busiest GPU. With MTP the target's own recurrent state keeps n_max more rows per sequence on the
    architectures that roll it back (n_rs_seq: common/common.h:396-402, src/llama-context.cpp:105-110,
    src/llama-memory-recurrent.cpp:101): `rollback_states`. kv_cache_type is -ctkd/-ctvd's, which the role sets
    to the target's."""

    label: str
    shape: ModelShape
    weights_bytes: int
    compute_buffer_mib: int
    spread: bool
    kv_cache_type: str = "f16"
    rollback_states: int = 0


def draft_model_read(target_gguf: Mapping[str, Any], draft_gguf: Mapping[str, Any], draft_path: str,
                     draft_weights_bytes: int) -> Dict[str, Any]:
    """A draft model for size_plan's `draft_read`, or why llama.cpp would not draft with it (both headers read
    with token_digests)."""
    why = draft_vocab_refusal(tokenizer_summary(dict(target_gguf)), tokenizer_summary(dict(draft_gguf)))
    if why:
        return {"refusal": "cannot draft with %s: %s. llama.cpp does not draft with such a model "
                           "(common_speculative_are_compatible, common/speculative.cpp:67-127 at 0c1e57098): "
                           "llama-server would log an error and serve without drafting" % (draft_path, why),
                "fix": "Draft with a smaller model of the same family, which shares its tokenizer, or set "
                       "speculative to off or an n-gram type"}
    shape = shape_from_gguf(draft_gguf)
    return {"label": "draft model %s" % posixpath.basename(draft_path), "shape": shape,
            "weights_bytes": draft_weights_bytes, "spread": True, "compute_shape": shape}


def mtp_read(target_gguf: Mapping[str, Any], target_path: str, draft_max: int) -> Dict[str, Any]:
    """The MTP context for size_plan's `draft_read`, or why the model has none: llama.cpp creates it only for
    a model with nextn layers (<arch>.nextn_predict_layers; src/llama-context.cpp:3881 at 0c1e57098).
    draft_max: the tokens drafted at most (--spec-draft-n-max)."""
    summary = model_summary(dict(target_gguf))
    nextn = summary.get("nextn_predict_layers") or 0
    if not nextn:
        return {"refusal": "cannot use draft-mtp: %s has no multi-token prediction layers (%s.nextn_predict_layers "
                           "is absent or 0), and llama-server then fails to create the MTP context" % (
                               target_path, summary["architecture"]),
                "fix": "Use a GGUF converted with its MTP layers (Qwen3.5's, GLM's), or set speculative to off or "
                       "an n-gram type"}
    shape = shape_from_gguf(target_gguf)
    return {"label": "MTP head (%d layer%s)" % (nextn, "" if nextn == 1 else "s"), "weights_bytes": 0,
            "spread": False, "compute_shape": shape,
            "shape": replace(shape, layers=nextn, kv_layout=KvLayout(full_heads=nextn * shape.kv_heads)),
            "rollback_states": draft_max if summary["architecture"] in RECURRENT_ROLLBACK_ARCHITECTURES else 0}


def hybrid_recurrent_flags(architecture: str, layers: int, interval: Any, recurrent_layers: Any,
                           nextn_layers: Any) -> Optional[List[bool]]:
    """Which layers of a HYBRID_ATTENTION_INTERVALS model keep a recurrent state instead of a KV cache
    (True), as llama.cpp's loader decides; None for other architectures."""
    if architecture not in HYBRID_ATTENTION_INTERVALS:
        return None
    nextn = nextn_layers if _positive(nextn_layers) and nextn_layers < layers else 0
    if isinstance(recurrent_layers, list) and len(recurrent_layers) == layers:
        return [bool(flag) for flag in recurrent_layers[:layers - nextn]] + [False] * nextn
    every = interval if _positive(interval) else HYBRID_ATTENTION_INTERVALS[architecture]
    return [(il + 1) % every != 0 for il in range(layers - nextn)] + [False] * nextn


def recurrent_state_bytes(ssm: Mapping[str, Any]) -> Optional[int]:
    """One sequence's recurrent state on one layer (llama_hparams::n_embd_r + n_embd_s, src/llama-hparams.cpp at
    0c1e57098, for the gated delta net of qwen3next/qwen35): the convolution's (conv_kernel - 1) x (inner_size
    + 2 x group_count x state_size) values and the state_size x inner_size state, float32. None when a key is
    missing."""
    values = [ssm.get(name) for name in ("conv_kernel", "inner_size", "state_size", "group_count")]
    if not all(_positive(value) for value in values):
        return None
    conv_kernel, inner, state, groups = values
    return RECURRENT_STATE_BYTES * ((conv_kernel - 1) * (inner + 2 * groups * state) + state * inner)


def swa_layer_flags(layers: int, pattern: int) -> List[bool]:
    """llama_hparams::set_swa_pattern(n) (src/llama-hparams.cpp): layer il slides
    when il % n < n - 1, so every n-th layer keeps the whole context; n = 0: all slide."""
    return [pattern == 0 or il % pattern < pattern - 1 for il in range(layers)]


def kv_layout(architecture: str, layers: int, kv_heads: int, kv_heads_per_layer: Optional[Sequence[int]],
              sliding_window: Any, sliding_window_pattern: Any, recurrent_flags: Optional[Sequence[bool]] = None,
              recurrent_layer_bytes: Optional[int] = None) -> KvLayout:
    """Which layers keep a KV cache of how many heads, and which of those only a sliding window.

    A per-layer head_count_kv gives each layer's heads. A hybrid model whose
    recurrent layers are known (recurrent_flags, hybrid_recurrent_flags) and
    whose state size is (recurrent_layer_bytes) keeps a KV cache on its
    attention layers only and a recurrent state per sequence on the others
    (src/llama-memory-hybrid.cpp, llama-memory-recurrent.cpp). Other hybrids,
    a per-layer head_count_kv with zeros, count every layer with the most
    heads as if it kept a KV cache: more, never less."""
    if recurrent_flags is not None and recurrent_layer_bytes and len(recurrent_flags) == layers:
        return KvLayout(full_heads=kv_heads * sum(1 for recurrent in recurrent_flags if not recurrent),
                        recurrent_bytes=recurrent_layer_bytes * sum(1 for recurrent in recurrent_flags if recurrent))
    heads = list(kv_heads_per_layer) if kv_heads_per_layer and len(kv_heads_per_layer) == layers \
        and min(kv_heads_per_layer) > 0 else [kv_heads] * layers
    window = sliding_window if architecture in SWA_DEFAULT_PATTERNS and isinstance(sliding_window, int) \
        and not isinstance(sliding_window, bool) and sliding_window > 0 else 0
    if not window:
        return KvLayout(full_heads=sum(heads))
    if isinstance(sliding_window_pattern, list):
        # A list of another length leaves llama.cpp's other layers as they were: count them all whole.
        flags = [bool(flag) for flag in sliding_window_pattern] if len(sliding_window_pattern) == layers \
            else [False] * layers
    elif isinstance(sliding_window_pattern, int) and not isinstance(sliding_window_pattern, bool) \
            and sliding_window_pattern >= 0:
        flags = swa_layer_flags(layers, sliding_window_pattern)
    else:
        flags = swa_layer_flags(layers, SWA_DEFAULT_PATTERNS[architecture])
    return KvLayout(full_heads=sum(head for head, slides in zip(heads, flags) if not slides),
                    swa_heads=sum(head for head, slides in zip(heads, flags) if slides), sliding_window=window)


def shape_from_hf_config(config: Mapping[str, Any]) -> ModelShape:
    """From a Hugging Face config.json (multimodal configs: their text_config).

    num_key_value_heads falls back to num_attention_heads (no GQA) and head_dim
    to hidden_size / num_attention_heads, as transformers does.
    """
    text = config.get("text_config") if "num_hidden_layers" not in config else None
    text = text if isinstance(text, Mapping) else config
    attention_heads = _required(text, "num_attention_heads", "config.json")
    hidden_size = text.get("hidden_size")
    head_dim = text.get("head_dim") or (hidden_size // attention_heads if hidden_size else None)
    if not head_dim:
        raise ValueError("config.json has neither head_dim nor hidden_size")
    architectures = config.get("architectures") or [""]
    quantization = (config.get("quantization_config") or {}).get("quant_method")
    return ModelShape(
        architecture=architectures[0],
        layers=_required(text, "num_hidden_layers", "config.json"),
        kv_heads=text.get("num_key_value_heads") or attention_heads,
        head_dim=head_dim,
        attention_heads=attention_heads,
        embedding_length=hidden_size,
        feed_forward_length=text.get("intermediate_size"),
        vocab_size=text.get("vocab_size") or config.get("vocab_size"),
        context_length=vllm_derived_max_len(text),
        # transformers >= 4.56 writes "dtype"; older releases "torch_dtype".
        dtype=config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype"),
        quantization=quantization,
        source="hf_config",
    )


# The config.json keys vLLM 0.5.4 takes the model's maximum length from (the smallest present), the length it
# assumes without any, and the RoPE scaling types it does not multiply by their factor
# (vllm/config.py _get_and_verify_max_len).
VLLM_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                     "max_sequence_length", "max_seq_length", "seq_len")
VLLM_DEFAULT_MAX_LEN = 2048
VLLM_UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3")


def vllm_derived_max_len(config: Mapping[str, Any]) -> int:
    """The longest max_model_len vLLM 0.5.4 accepts for this config (its default when none is given): the
    smallest of its length keys (2048 without any), times rope_scaling's factor (from
    original_max_position_embeddings for yarn) unless the type is su, longrope or llama3. (A sliding window
    turned off with --disable-sliding-window lowers it further; the role does not read extra args for that.)"""
    lengths = [int(config[key]) for key in VLLM_MAX_LEN_KEYS if isinstance(config.get(key), (int, float))]
    derived = min(lengths) if lengths else VLLM_DEFAULT_MAX_LEN
    scaling = config.get("rope_scaling")
    if isinstance(scaling, Mapping):
        rope_type = scaling.get("type") or scaling.get("rope_type")
        if rope_type not in VLLM_UNSCALED_ROPE_TYPES and isinstance(scaling.get("factor"), (int, float)):
            if rope_type == "yarn" and scaling.get("original_max_position_embeddings"):
                derived = int(scaling["original_max_position_embeddings"])
            derived = int(derived * scaling["factor"])
    return derived


def _required(fields: Mapping[str, Any], key: str, where: str) -> int:
    value = fields.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError("%s has no usable %s (got %r)" % (where, key, value))
    return value


def _ceil_mib(size_bytes: float) -> int:
    return int(-(-size_bytes // MIB))


def llama_server_kv_cells(ctx_size: int, parallel: int, kv_unified: bool, n_ctx_train: int) -> Tuple[int, int]:
    """(cells per stream, streams) that llama-server allocates for `-c`, `-np` and `-kvu`.

    Measured on llama.cpp 0c1e57098 (tests/fixtures/llama_cpp/): `-c` is the
    total over all slots and 0 means the model's training context. A unified
    cache is one stream of `-c` cells that every slot shares; otherwise each
    slot gets a stream of its share (slot_cells).
    """
    total = ctx_size or n_ctx_train
    return slot_cells(total, parallel, kv_unified), 1 if kv_unified else parallel


def slot_cells(ctx_size: int, parallel: int, kv_unified: bool) -> int:
    """Cells each slot of `-c ctx_size -np parallel` gets (src/llama-context.cpp at 0c1e57098): `-c` padded to
    256 cells; with --kv-unified every slot may use the whole pool, otherwise each gets its share, padded to 256
    again."""
    total = _pad_cells(ctx_size)
    return total if kv_unified else _pad_cells(total // parallel)


def _pad_cells(cells: int) -> int:
    return -(-cells // CONTEXT_STEP) * CONTEXT_STEP


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, context_per_slot: int, slots: int,
                   kv_cache_type: str) -> int:
    """2 x layers x kv_heads x head_dim x context_per_slot x slots x bytes per element."""
    if kv_cache_type not in KV_CACHE_TYPES:
        raise ValueError("kv_cache_type %r is not one of %s" % (kv_cache_type, ", ".join(KV_CACHE_TYPES)))
    block_bytes, block_elements = KV_CACHE_TYPES[kv_cache_type]
    elements = 2 * layers * kv_heads * head_dim * context_per_slot * slots
    return -(-elements * block_bytes // block_elements)


def estimate_compute_buffer_mib(shape: ModelShape, stream_cells: int, ubatch: int = DEFAULT_UBATCH,
                                flash_attention: bool = True) -> int:
    """llama.cpp's compute buffer: the larger of the output step and one layer's step.

    Both are float32 tensors for one micro-batch of `ubatch` tokens:
      output: logits (vocab) plus the final hidden state (embedding);
      layer:  FFN activations (3 x feed_forward_length) plus the hidden state,
              and without flash attention the KQ scores (attention_heads x KV
              cells) and the mask over the cells of one KV stream (a slot's,
              or a unified cache's whole pool: llama-server at 0c1e57098
              reserved 166.38 MiB at -fa off for SmolLM2 with -c 8192 -np 1,
              -c 32768 -np 4 and -c 131072 -np 16, and 646.38 MiB with
              -c 32768 -np 4 --kv-unified), counted as float32.
    Shapes missing vocab/embedding/FFN sizes get DEFAULT_COMPUTE_BUFFER_MIB.
    """
    if not (shape.vocab_size and shape.embedding_length and shape.feed_forward_length):
        return DEFAULT_COMPUTE_BUFFER_MIB
    output = ubatch * (shape.vocab_size + shape.embedding_length) * 4
    layer = ubatch * (3 * shape.feed_forward_length + shape.embedding_length) * 4
    if not flash_attention:
        cells = _pad_cells(stream_cells)
        layer += cells * ubatch * ((shape.attention_heads or shape.kv_heads) + 1) * 4
    return _ceil_mib(max(output, layer))


@dataclass(frozen=True)
class MemoryPlan:
    """Every term per GPU in MiB, for the busiest GPU, plus the inputs behind them."""

    name: str
    layers: int
    kv_heads: int
    head_dim: int
    weights_bytes: int
    context_per_slot: int
    slots: int
    kv_cache_type: str
    gpu_count: int
    gpu_memory_mib: int
    layout: KvLayout
    ubatch: int
    sequences_per_stream: int
    swa_full: bool
    swa_cells: int
    tensor_split: Optional[Tuple[float, ...]]
    split_mode: str
    layers_per_gpu: int
    weights_mib: int
    kv_cache_mib: int
    recurrent_mib: int
    compute_buffer_mib: int
    overhead_mib: int
    safety_margin_mib: int
    required_mib: int
    headroom_mib: int
    fits: bool
    draft: Optional[DraftModel] = None
    draft_mib: int = 0
    draft_kv_cache_mib: int = 0

    def arithmetic(self) -> str:
        window = "; sliding-window layers %d tokens" % self.swa_cells if self.layout.swa_heads else ""
        sequences = self.slots * self.sequences_per_stream
        recurrent = " + recurrent state %d (%d sequence%s)" % (
            self.recurrent_mib, sequences, "" if sequences == 1 else "s") if self.recurrent_mib else ""
        draft = " + %s %d (KV cache %d)" % (self.draft.label, self.draft_mib, self.draft_kv_cache_mib) \
            if self.draft else ""
        return ("weights %d + KV cache %d (%s, %d slot%s x %d tokens%s)%s%s + compute buffer %d + overhead %d "
                "+ safety margin %d = %d MiB of %d MiB per GPU" % (
                    self.weights_mib, self.kv_cache_mib, self.kv_cache_type, self.slots,
                    "" if self.slots == 1 else "s", self.context_per_slot, window, recurrent, draft,
                    self.compute_buffer_mib, self.overhead_mib, self.safety_margin_mib, self.required_mib,
                    self.gpu_memory_mib))

    def message(self) -> str:
        where = "%d GPU%s" % (self.gpu_count, "" if self.gpu_count == 1 else "s")
        if self.fits:
            return "%s fits on %s with %d MiB to spare: %s" % (self.name, where, self.headroom_mib,
                                                               self.arithmetic())
        return "%s does not fit on %s, %d MiB short: %s" % (self.name, where, -self.headroom_mib,
                                                            self.arithmetic())

    def remedies(self) -> List[str]:
        """Each single change that makes the plan fit, with its numbers."""
        if self.fits:
            return []
        return [remedy for remedy in (
            _lower_context(self), _fewer_slots(self), _smaller_kv_cache(self),
            _smaller_weights(self), _more_gpus(self)) if remedy]

    def refusal(self) -> Optional[Refusal]:
        if self.fits:
            return None
        remedies = self.remedies()
        fix = "; or ".join(remedies) if remedies else "Pick a smaller model: its weights alone do not fit"
        fix = fix[0].upper() + fix[1:]
        return Refusal(
            variable="memory_plans",
            value=self.name,
            reason="does not fit: needs %d MiB per GPU, %d MiB more than there is (%s)" % (
                self.required_mib, -self.headroom_mib, self.arithmetic()),
            fix=fix,
            source=SOURCE,
        )

    def as_dict(self) -> Dict[str, Any]:
        result = asdict(self)
        result.update(result.pop("layout"))
        result["draft"] = self.draft.label if self.draft else None
        result["message"] = self.message()
        result["remedies"] = self.remedies()
        return result


def plan_memory(name: str, *, layers: int, kv_heads: int, head_dim: int, weights_bytes: int,
                context_per_slot: int, slots: int, gpu_memory_mib: int, kv_cache_type: str = "f16",
                gpu_count: int = 1, compute_buffer_mib: int = DEFAULT_COMPUTE_BUFFER_MIB,
                overhead_mib: int = DEFAULT_OVERHEAD_MIB,
                safety_margin_mib: int = DEFAULT_SAFETY_MARGIN_MIB, layout: Optional[KvLayout] = None,
                ubatch: int = DEFAULT_UBATCH, sequences_per_stream: int = 1, swa_full: bool = False,
                tensor_split: Optional[Sequence[float]] = None, split_mode: str = "layer",
                draft: Optional[DraftModel] = None) -> MemoryPlan:
    """Size one llama.cpp instance (see the module docstring for the formula).

    context_per_slot is rounded up to a multiple of 256, as llama.cpp allocates it.
    layout (default: every layer keeps kv_heads for the whole context) says
    which layers keep a KV cache and which only a sliding window: those keep
    min(cells, window x sequences_per_stream + ubatch) cells per stream,
    padded to 256 (src/llama-kv-cache-iswa.cpp at 0c1e57098; --swa-full
    gives them the whole context). sequences_per_stream is 1, or the slots
    of a unified cache (one stream). tensor_split (llama.cpp's -ts, one share
    per GPU) puts that share of the layers on each GPU; without it they are
    spread evenly. split_mode "tensor" splits every layer's weights and KV
    cache instead (docs/multi-gpu.md at 0c1e57098): the busiest GPU holds the
    largest share of each. draft: speculative decoding's second context (DraftModel), sized for the
    same cells.

    Raises ValueError for a non-positive dimension, count or memory size and for
    an unknown kv_cache_type.
    """
    for label, value in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim),
                         ("context_per_slot", context_per_slot), ("slots", slots),
                         ("gpu_count", gpu_count), ("gpu_memory_mib", gpu_memory_mib), ("ubatch", ubatch),
                         ("sequences_per_stream", sequences_per_stream)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError("%s must be a positive whole number (got %r)" % (label, value))
    for label, value in (("weights_bytes", weights_bytes), ("compute_buffer_mib", compute_buffer_mib),
                         ("overhead_mib", overhead_mib), ("safety_margin_mib", safety_margin_mib)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError("%s must be zero or a positive whole number (got %r)" % (label, value))
    layout = layout or KvLayout(full_heads=layers * kv_heads)
    if split_mode == "tensor":
        # Every layer on every GPU, each holding its share of each tensor: counted as that share of the layers.
        largest = _largest_share(gpu_count, tensor_split)
        layers_per_gpu = -(-layers * largest.numerator // largest.denominator)
    else:
        layers_per_gpu = busiest_gpu_layers(layers, gpu_count, tensor_split)
    share = layers_per_gpu / layers
    weights_mib = _ceil_mib(weights_bytes * share)
    cells_per_slot = _pad_cells(context_per_slot)
    swa_cells = cells_per_slot if swa_full else min(
        cells_per_slot, _pad_cells(layout.sliding_window * sequences_per_stream + ubatch))
    # The busiest GPU's share of the heads: ceil(layers / gpu_count) of the layers.
    full_heads = -(-layout.full_heads * layers_per_gpu // layers)
    swa_heads = -(-layout.swa_heads * layers_per_gpu // layers)
    kv_cache_mib = _ceil_mib(
        kv_cache_bytes(1, full_heads, head_dim, cells_per_slot, slots, kv_cache_type)
        + (kv_cache_bytes(1, swa_heads, head_dim, swa_cells, slots, kv_cache_type) if swa_heads else 0))
    # One recurrent state per sequence (a cell per slot: src/llama-model.cpp, mem_size = n_seq_max).
    rows = 1 + (draft.rollback_states if draft else 0)
    recurrent_mib = _ceil_mib(layout.recurrent_bytes * rows * layers_per_gpu * slots * sequences_per_stream / layers)
    drafted = plan_memory(
        "%s %s" % (name, draft.label), layers=draft.shape.layers, kv_heads=draft.shape.kv_heads,
        head_dim=draft.shape.head_dim, weights_bytes=draft.weights_bytes, context_per_slot=context_per_slot,
        slots=slots, gpu_memory_mib=gpu_memory_mib, kv_cache_type=draft.kv_cache_type,
        gpu_count=gpu_count if draft.spread else 1, compute_buffer_mib=draft.compute_buffer_mib, overhead_mib=0,
        safety_margin_mib=0, layout=draft.shape.kv_layout, ubatch=ubatch, sequences_per_stream=sequences_per_stream,
        swa_full=swa_full, tensor_split=tensor_split if draft.spread else None,
        split_mode=split_mode if draft.spread else "layer") if draft else None
    draft_mib = drafted.required_mib if drafted else 0
    required = weights_mib + kv_cache_mib + recurrent_mib + draft_mib + compute_buffer_mib + overhead_mib \
        + safety_margin_mib
    return MemoryPlan(
        name=name, layers=layers, kv_heads=kv_heads, head_dim=head_dim, weights_bytes=weights_bytes,
        context_per_slot=context_per_slot, slots=slots, kv_cache_type=kv_cache_type, gpu_count=gpu_count,
        gpu_memory_mib=gpu_memory_mib, layout=layout, ubatch=ubatch, sequences_per_stream=sequences_per_stream,
        swa_full=swa_full, swa_cells=swa_cells if layout.swa_heads else 0,
        tensor_split=tuple(tensor_split) if tensor_split else None, split_mode=split_mode,
        layers_per_gpu=layers_per_gpu,
        weights_mib=weights_mib, kv_cache_mib=kv_cache_mib, recurrent_mib=recurrent_mib,
        compute_buffer_mib=compute_buffer_mib,
        overhead_mib=overhead_mib, safety_margin_mib=safety_margin_mib, required_mib=required,
        headroom_mib=gpu_memory_mib - required, fits=required <= gpu_memory_mib,
        draft=draft, draft_mib=draft_mib, draft_kv_cache_mib=drafted.kv_cache_mib if drafted else 0,
    )


def _shares(gpu_count: int, tensor_split: Optional[Sequence[float]]) -> List[Fraction]:
    shares = [Fraction(str(share)) for share in tensor_split] if tensor_split else [Fraction(1)] * gpu_count
    if len(shares) != gpu_count or any(share < 0 for share in shares) or not sum(shares):
        raise ValueError("tensor_split must give one non-negative share per GPU, not all 0 (got %r)" % (
            list(tensor_split or ()),))
    return shares


def _largest_share(gpu_count: int, tensor_split: Optional[Sequence[float]]) -> Fraction:
    shares = _shares(gpu_count, tensor_split)
    return max(shares) / sum(shares)


def busiest_gpu_layers(layers: int, gpu_count: int, tensor_split: Optional[Sequence[float]] = None) -> int:
    """Layers on the GPU that holds most, as llama.cpp assigns them
    (src/llama-model.cpp at 0c1e57098): n_layer + 1 positions (the output
    layer is the last) over the cumulative shares of tensor_split, equal shares
    without it; layer il goes to the first GPU whose cumulative share is above
    il / (n_layer + 1). So with two equal GPUs the first holds one layer more
    than half of an even count."""
    shares = _shares(gpu_count, tensor_split)
    total, running, points = sum(shares), Fraction(0), []
    for share in shares:
        running += share
        points.append(running / total)
    counts = [0] * gpu_count
    for layer in range(layers):
        position = Fraction(layer, layers + 1)
        counts[next(gpu for gpu, point in enumerate(points) if point > position)] += 1
    return max(counts)


def _replan(plan: MemoryPlan, **changes: Any) -> MemoryPlan:
    inputs = dict(
        layers=plan.layers, kv_heads=plan.kv_heads, head_dim=plan.head_dim, weights_bytes=plan.weights_bytes,
        context_per_slot=plan.context_per_slot, slots=plan.slots, gpu_memory_mib=plan.gpu_memory_mib,
        kv_cache_type=plan.kv_cache_type, gpu_count=plan.gpu_count, compute_buffer_mib=plan.compute_buffer_mib,
        overhead_mib=plan.overhead_mib, safety_margin_mib=plan.safety_margin_mib, layout=plan.layout,
        ubatch=plan.ubatch, sequences_per_stream=plan.sequences_per_stream, swa_full=plan.swa_full,
        tensor_split=plan.tensor_split, split_mode=plan.split_mode, draft=plan.draft)
    inputs.update(changes)
    return plan_memory(plan.name, **inputs)


def _bytes_per_cell(plan: MemoryPlan) -> int:
    """KV bytes one more token of context costs on the busiest GPU (at least one layer's), the draft's
    counted whole."""
    heads = -(-plan.layout.full_heads * plan.layers_per_gpu // plan.layers)
    draft = kv_cache_bytes(1, plan.draft.shape.kv_layout.full_heads if plan.draft.shape.kv_layout else
                           plan.draft.shape.layers * plan.draft.shape.kv_heads, plan.draft.shape.head_dim, 1, 1,
                           plan.draft.kv_cache_type) if plan.draft else 0
    return kv_cache_bytes(1, heads or plan.kv_heads, plan.head_dim, 1, 1, plan.kv_cache_type) + draft


def _kv_cells_that_fit(plan: MemoryPlan) -> int:
    """KV cells (tokens over all slots) the busiest GPU has room for beside everything else."""
    budget_mib = plan.gpu_memory_mib - (plan.required_mib - plan.kv_cache_mib - plan.draft_kv_cache_mib)
    return max(0, budget_mib * MIB // _bytes_per_cell(plan))


def _lower_context(plan: MemoryPlan) -> Optional[str]:
    context = _kv_cells_that_fit(plan) // plan.slots // CONTEXT_STEP * CONTEXT_STEP
    if context < CONTEXT_STEP or not _replan(plan, context_per_slot=context).fits:
        return None
    return "lower context_per_slot to %d (from %d)" % (context, plan.context_per_slot)


def _fewer_slots(plan: MemoryPlan) -> Optional[str]:
    slots = _kv_cells_that_fit(plan) // plan.context_per_slot
    if slots < 1 or slots >= plan.slots or not _replan(plan, slots=slots).fits:
        return None
    return "lower slots to %d (from %d)" % (slots, plan.slots)


def smaller_kv_cache_saves(kv_cache_type: str) -> bool:
    """Whether SMALLER_KV_CACHE_TYPE takes less memory per element than kv_cache_type."""
    current_bytes, current_elements = KV_CACHE_TYPES[kv_cache_type]
    smaller_bytes, smaller_elements = KV_CACHE_TYPES[SMALLER_KV_CACHE_TYPE]
    return current_bytes * smaller_elements > smaller_bytes * current_elements


def _smaller_kv_cache(plan: MemoryPlan) -> Optional[str]:
    if not smaller_kv_cache_saves(plan.kv_cache_type):
        return None
    smaller = _replan(plan, kv_cache_type=SMALLER_KV_CACHE_TYPE)
    if not smaller.fits:
        return None
    return "set kv_cache_type=%s (KV cache %d -> %d MiB per GPU; a quantized V cache needs flash attention)" % (
        SMALLER_KV_CACHE_TYPE, plan.kv_cache_mib, smaller.kv_cache_mib)


def _smaller_weights(plan: MemoryPlan) -> Optional[str]:
    budget_mib = plan.gpu_memory_mib - (plan.required_mib - plan.weights_mib)
    if budget_mib <= 0:
        return None
    total_mib = budget_mib * plan.layers // plan.layers_per_gpu
    return "use a smaller quantization, with weights of at most %d MiB (now %d MiB)" % (
        total_mib, _ceil_mib(plan.weights_bytes))


def _more_gpus(plan: MemoryPlan) -> Optional[str]:
    if plan.tensor_split:
        return None  # the split names each GPU's share: more GPUs means a new split, not one number
    for gpu_count in range(plan.gpu_count + 1, min(MAX_GPUS_TO_SUGGEST, plan.layers) + 1):
        spread = _replan(plan, gpu_count=gpu_count)
        if spread.fits:
            return "add GPUs: gpu_count=%d (each then needs %d MiB)" % (gpu_count, spread.required_mib)
    return None


# Slot planning (llama_server's ctx_size/parallel "auto").
DEFAULT_SLOTS_MAX = 16
# One IDE request: a 16384-token prompt and a 4096-token answer (llama_server's defaults).
DEFAULT_SLOT_CONTEXT_MIN = 16384 + 4096
DEFAULT_SLOT_CONTEXT_MAX = 32768
# The slot count llama-server itself picks for -np auto (tools/server/server.cpp
# at 0c1e57098: "n_parallel is set to auto, using n_parallel = 4 and
# kv_unified = true"): the plan's count where there is no GPU memory to size
# against, each slot with its own pool of the floor (not llama-server's one
# shared pool of the trained context).
UNSIZED_SLOTS = 4


@dataclass(frozen=True)
class SlotChoice:
    """The slots and tokens per slot chosen for an instance, and why."""

    slots: int
    context_per_slot: int
    reason: str


def slot_context_bounds(context_min: int, context_max: int, n_ctx_train: Optional[int]) -> Tuple[int, int]:
    """(floor, ceiling) of tokens per slot: the floor rounded up to the 256
    cells llama.cpp pads a slot to, the ceiling not beyond the model's trained
    context (llama-server caps a slot at n_ctx_train:
    tools/server/server-context.cpp). A trained context below the floor is an
    error: no slot could keep context_min tokens (trained_context_refusal)."""
    if not (_positive(context_min) and _positive(context_max)) or context_max < context_min:
        raise ValueError("slot contexts must be positive with context_min <= context_max (got %r, %r)" % (
            context_min, context_max))
    if n_ctx_train and n_ctx_train < context_min:
        raise ValueError("the model's trained context (%d tokens) is less than context_min (%d)" % (
            n_ctx_train, context_min))
    floor, ceiling = _pad_cells(context_min), max(_pad_cells(context_min), context_max)
    if n_ctx_train:
        return min(floor, n_ctx_train), min(ceiling, n_ctx_train)
    return floor, ceiling


def trained_context_refusal(name: str, n_ctx_train: Optional[int], context_min: int,
                            floor_variable: str) -> Optional[Refusal]:
    """A model trained for fewer tokens than each slot must keep: llama-server caps every slot at its trained
    context, so the longest requests would get HTTP 400 whatever the memory."""
    if not n_ctx_train or n_ctx_train >= context_min:
        return None
    return Refusal(
        variable="memory_plans", value=name,
        reason="is trained for %d tokens of context, less than the %d each slot must keep (%s); llama-server caps "
               "a slot at the trained context, so longer requests would get HTTP 400" % (
                   n_ctx_train, context_min, floor_variable),
        fix="Lower %s to at most %d in total, or serve a model trained for a longer context" % (
            floor_variable, n_ctx_train),
        source="llama.cpp 0c1e57098 tools/server/server-context.cpp (n_ctx_slot capped at n_ctx_train)")


def unsized_slots(slots_min: int, slots_max: int, context_min: int, context_max: int,
                  n_ctx_train: Optional[int], why: str) -> SlotChoice:
    """Without GPU memory to size against: llama-server's own slot count, each at the floor."""
    floor, _ = slot_context_bounds(context_min, context_max, n_ctx_train)
    slots = max(slots_min, min(UNSIZED_SLOTS, slots_max))
    return SlotChoice(slots, floor, "%d slots x %d tokens, not sized (%s): the slot count llama-server picks "
                                    "itself (at most %d), each slot with its own %d tokens" % (
                                        slots, floor, why, slots_max, floor))


def choose_slots(plan_for: Callable[[int, int], MemoryPlan], *, slots_min: int, slots_max: int,
                 context_min: int, context_max: int,
                 n_ctx_train: Optional[int] = None) -> Tuple[MemoryPlan, Optional[SlotChoice]]:
    """The most slots (slots_min..slots_max) that each keep context_min tokens, then
    as many tokens per slot (up to context_max) as the memory left holds.

    plan_for(slots, context_per_slot) sizes one setting. Returns the chosen plan
    and the choice, or (the smallest setting's plan, None) when not even
    slots_min slots of context_min tokens fit: that plan's refusal says why.
    Throughput on a shared server comes from slots (docs/BENCHMARKS.md,
    "Slots": 16 streams on 16 slots gave 5.4-6.2x what one slot gave), so
    slots come first; a floor keeps real prompts (an IDE's few thousand
    tokens) inside one slot.
    """
    if not (_positive(slots_min) and _positive(slots_max)) or slots_max < slots_min:
        raise ValueError("slots must be positive with slots_min <= slots_max (got %r, %r)" % (slots_min, slots_max))
    floor, ceiling = slot_context_bounds(context_min, context_max, n_ctx_train)
    smallest = plan_for(slots_min, floor)
    if not smallest.fits:
        return smallest, None
    slots = next(count for count in range(slots_max, slots_min - 1, -1) if plan_for(count, floor).fits)
    context = floor
    plan = plan_for(slots, floor)
    spare_cells = plan.headroom_mib * MIB // _bytes_per_cell(plan) // slots
    for candidate in range(min(ceiling, floor + spare_cells) // CONTEXT_STEP * CONTEXT_STEP, floor, -CONTEXT_STEP):
        grown = plan_for(slots, candidate)
        if grown.fits:
            plan, context = grown, candidate
            break
    reason = "%d slot%s x %d tokens: the most slots (%s) that each keep %d tokens" % (
        slots, "" if slots == 1 else "s", context,
        "at most %d" % slots_max if slots_min < slots_max else "exactly %d, as asked" % slots_max, floor)
    if slots < slots_max:
        more = plan_for(slots + 1, floor)
        reason += " (%d would need %d MiB of %d MiB)" % (slots + 1, more.required_mib, more.gpu_memory_mib)
    if context > floor:
        reason += ", then each slot grown to %d tokens (at most %d) with the memory left" % (context, ceiling)
    return plan, SlotChoice(slots, context, reason)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


# GPUs shared by several plans (llama-server instances on one GPU).


@dataclass(frozen=True)
class GpuUse:
    """One plan's memory on each of its GPUs, without the safety margin (kept once per GPU)."""

    name: str
    gpus: Tuple[int, ...]
    mib: int


def shared_budget_mib(gpus: Sequence[int], fixed: Sequence[GpuUse], choosing: Mapping[int, int],
                      memory_mib: Mapping[int, int], safety_margin_mib: int) -> int:
    """GPU memory a plan that chooses its slots may plan with, safety margin included.

    On each of its GPUs: what the plans with fixed sizes leave, split evenly
    between the plans choosing their slots there (choosing: GPU index -> how
    many); the smallest over its GPUs, since a split plan sizes its busiest GPU.
    """
    return min((memory_mib[gpu] - safety_margin_mib - sum(use.mib for use in fixed if gpu in use.gpus))
               // choosing[gpu] + safety_margin_mib for gpu in gpus)


def overcommitted(uses: Sequence[GpuUse], memory_mib: Mapping[int, int], safety_margin_mib: int,
                  label: str = "llama_server_instances") -> List[Refusal]:
    """A refusal per GPU that two or more plans share and together overfill."""
    refusals = []
    for gpu in sorted(memory_mib):
        sharing = [use for use in uses if gpu in use.gpus]
        total = sum(use.mib for use in sharing) + safety_margin_mib
        if len(sharing) < 2 or total <= memory_mib[gpu]:
            continue
        refusals.append(Refusal(
            variable="memory_plans",
            value="GPU %d" % gpu,
            reason="is shared by %d %s that need %d MiB together, %d MiB more than it has: %s + safety margin "
                   "%d = %d MiB of %d MiB" % (
                       len(sharing), label, total, total - memory_mib[gpu],
                       " + ".join("%s %d" % (use.name, use.mib) for use in sharing), safety_margin_mib, total,
                       memory_mib[gpu]),
            fix="Give them different gpus, lower their ctx_size or parallel, or set both to auto (auto instances "
                "split what a GPU has left between them)",
            source=SOURCE,
        ))
    return refusals
