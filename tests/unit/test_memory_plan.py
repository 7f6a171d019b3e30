"""memory_plan: the KV formula against llama.cpp's own numbers, fits at the boundary, remedies that work.

LLAMA_CPP_* values were printed by llama.cpp 0c1e57098 (built from the
llama-cpp-python 0.3.36 sdist, CPU backend) loading the real
SmolLM2-135M-Instruct.Q4_1.gguf: `llama_kv_cache: size = ...` and
`sched_reserve: CPU compute buffer size = ...`.
"""
from __future__ import annotations

import pytest

from ansible_collections.v100.llm.plugins.module_utils.models.gguf import read_gguf_metadata
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    DEFAULT_COMPUTE_BUFFER_MIB,
    KV_CACHE_TYPES,
    MIB,
    DraftModel,
    KvLayout,
    ModelShape,
    estimate_compute_buffer_mib,
    kv_cache_bytes,
    plan_memory,
    shape_from_gguf,
    shape_from_hf_config,
)
from conftest import FIXTURES

SMOLLM2 = FIXTURES / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix"

# (context_per_slot, slots, kv type) -> llama.cpp's KV cache size in MiB. `-c 8192 -np 4`
# gave n_ctx_seq = 2048 and 4 sequences: context_per_slot 2048 x 4 slots.
LLAMA_CPP_KV_MIB = {
    (2048, 1, "f16"): 45.00,
    (8192, 1, "f16"): 180.00,
    (2048, 4, "f16"): 180.00,
    (8192, 1, "q8_0"): 95.62,
    (8192, 1, "q4_0"): 50.62,
}

# (flash attention, context, ubatch) -> llama.cpp's compute buffer in MiB.
LLAMA_CPP_COMPUTE_MIB = {
    (True, 2048, 256): 51.26, (True, 2048, 512): 102.51, (True, 2048, 1024): 205.03,
    (True, 8192, 256): 49.13, (True, 8192, 512): 98.25, (True, 8192, 1024): 196.50,
    (True, 32768, 256): 49.13, (True, 32768, 512): 98.25, (True, 32768, 1024): 196.50,
    (False, 2048, 256): 49.69, (False, 2048, 512): 99.38, (False, 2048, 1024): 198.75,
    (False, 8192, 256): 83.19, (False, 8192, 512): 166.38, (False, 8192, 1024): 332.77,
    (False, 32768, 256): 323.19, (False, 32768, 512): 646.38, (False, 32768, 1024): 1292.77,
}

# Qwen2.5-32B-Instruct: 64 layers, 40 attention heads but 8 KV heads, head_dim 128.
QWEN25_32B = dict(layers=64, kv_heads=8, head_dim=128)
QWEN25_32B_Q4_K_M_BYTES = 19851336256


@pytest.fixture(scope="module")
def smollm2():
    return shape_from_gguf(read_gguf_metadata(SMOLLM2, max_array_items=0))


# --- KV cache -------------------------------------------------------------------------


@pytest.mark.parametrize("context, slots, kv_type", sorted(LLAMA_CPP_KV_MIB))
def test_kv_cache_matches_llama_cpp(smollm2, context, slots, kv_type):
    size = kv_cache_bytes(smollm2.layers, smollm2.kv_heads, smollm2.head_dim, context, slots, kv_type)
    assert round(size / MIB, 2) == pytest.approx(LLAMA_CPP_KV_MIB[(context, slots, kv_type)], abs=0.01)


def test_kv_cache_uses_kv_heads_not_attention_heads():
    """GQA: 8 KV heads of 40; f16 at 32768 tokens is 8 GiB, not 40 GiB."""
    assert kv_cache_bytes(context_per_slot=32768, slots=1, kv_cache_type="f16", **QWEN25_32B) == 8 * 1024 * MIB


@pytest.mark.parametrize("kv_type, bytes_per_32_elements", [
    ("f32", 128), ("f16", 64), ("bf16", 64), ("q8_0", 34), ("q4_0", 18), ("q4_1", 20), ("q5_0", 22),
    ("q5_1", 24), ("iq4_nl", 18)])
def test_kv_cache_type_sizes(kv_type, bytes_per_32_elements):
    # 1 layer x 1 head x 16 dims x 1 token x 1 slot x (K and V) = 32 elements
    assert kv_cache_bytes(1, 1, 16, 1, 1, kv_type) == bytes_per_32_elements
    assert set(KV_CACHE_TYPES) == {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"}


def test_unknown_kv_cache_type():
    with pytest.raises(ValueError, match="kv_cache_type 'q3_k' is not one of f32, f16"):
        kv_cache_bytes(1, 1, 32, 1, 1, "q3_k")


# --- compute buffer ----------------------------------------------------------------------


@pytest.mark.parametrize("flash_attention, context, ubatch", sorted(LLAMA_CPP_COMPUTE_MIB))
def test_compute_buffer_estimate_within_5_percent_of_llama_cpp(smollm2, flash_attention, context, ubatch):
    estimate = estimate_compute_buffer_mib(smollm2, context, ubatch, flash_attention)
    assert estimate == pytest.approx(LLAMA_CPP_COMPUTE_MIB[(flash_attention, context, ubatch)], rel=0.05)


def test_compute_buffer_without_flash_attention_spans_one_kv_stream(smollm2):
    # llama-server 0c1e57098, -fa off, SmolLM2: 166.38 MiB for -c 8192 -np 1, -c 32768 -np 4 and
    # -c 131072 -np 16 (8192 cells a stream), 646.38 MiB for -c 32768 -np 4 --kv-unified (one stream).
    per_slot = estimate_compute_buffer_mib(smollm2, 8192, flash_attention=False)
    assert per_slot == pytest.approx(166.38, rel=0.05)
    assert estimate_compute_buffer_mib(smollm2, 32768, flash_attention=False) == pytest.approx(646.38, rel=0.05)


def test_compute_buffer_default_for_an_incomplete_shape():
    shape = ModelShape(architecture="llama", **QWEN25_32B)
    assert estimate_compute_buffer_mib(shape, 4096) == DEFAULT_COMPUTE_BUFFER_MIB


# --- plans ------------------------------------------------------------------------------


def qwen_plan(**changes):
    # The overhead and margin of the defaults before they were measured on CUDA (700 and 1024 now):
    # these tests are about the arithmetic.
    inputs = dict(QWEN25_32B, weights_bytes=QWEN25_32B_Q4_K_M_BYTES, context_per_slot=16384, slots=1,
                  gpu_memory_mib=32768, compute_buffer_mib=307, overhead_mib=600, safety_margin_mib=512)
    inputs.update(changes)
    return plan_memory("qwen2.5-32b", **inputs)


def test_plan_terms_add_up():
    plan = qwen_plan()
    assert plan.weights_mib == 18932  # 19851336256 bytes, rounded up
    assert plan.kv_cache_mib == 4096
    assert (plan.compute_buffer_mib, plan.overhead_mib, plan.safety_margin_mib) == (307, 600, 512)
    assert plan.required_mib == 18932 + 4096 + 307 + 600 + 512 == 24447
    assert plan.headroom_mib == 32768 - 24447
    assert plan.fits and plan.refusal() is None and plan.remedies() == []
    assert plan.message() == (
        "qwen2.5-32b fits on 1 GPU with 8321 MiB to spare: weights 18932 + KV cache 4096 (f16, 1 slot x 16384 "
        "tokens) + compute buffer 307 + overhead 600 + safety margin 512 = 24447 MiB of 32768 MiB per GPU")


def test_fits_exactly_at_the_limit_and_not_one_mib_below():
    required = qwen_plan().required_mib
    just_fits = qwen_plan(gpu_memory_mib=required)
    assert just_fits.fits and just_fits.headroom_mib == 0
    just_short = qwen_plan(gpu_memory_mib=required - 1)
    assert not just_short.fits and just_short.headroom_mib == -1
    assert just_short.message().startswith("qwen2.5-32b does not fit on 1 GPU, 1 MiB short: ")


def test_context_is_padded_to_256_cells_like_llama_cpp():
    assert qwen_plan(context_per_slot=16129).kv_cache_mib == qwen_plan(context_per_slot=16384).kv_cache_mib
    assert qwen_plan(context_per_slot=16385).kv_cache_mib == qwen_plan(context_per_slot=16640).kv_cache_mib


def test_layers_split_across_gpus_size_the_busiest_gpu():
    # llama.cpp splits 64 layers + the output over two GPUs: the first holds 33 (il / 65 < 1/2).
    plan = qwen_plan(gpu_count=2)
    assert plan.layers_per_gpu == 33
    assert plan.weights_mib == 9762 and plan.kv_cache_mib == 2112
    uneven = plan_memory("smol", layers=30, kv_heads=3, head_dim=64, weights_bytes=30 * MIB, context_per_slot=2048,
                         slots=1, gpu_memory_mib=1024, gpu_count=4)
    assert uneven.layers_per_gpu == 8
    assert uneven.weights_mib == 8
    assert uneven.kv_cache_mib == 12  # 8 of 30 layers of 45 MiB


def test_tensor_split_puts_the_largest_share_of_every_layer_on_the_busiest_gpu():
    # --split-mode tensor splits each layer's weights and KV cache: half of each on two equal GPUs (32 of 64
    # layers' worth), not the 33 whole layers the layer split gives the first.
    even = qwen_plan(gpu_count=2, split_mode="tensor")
    assert even.layers_per_gpu == 32 and even.split_mode == "tensor"
    assert even.kv_cache_mib * 2 == qwen_plan().kv_cache_mib
    three_to_one = qwen_plan(gpu_count=2, split_mode="tensor", tensor_split=[3, 1])
    assert three_to_one.layers_per_gpu == 48
    too_long = qwen_plan(gpu_count=2, split_mode="tensor", context_per_slot=131072, slots=2)
    assert "add GPUs: gpu_count=3" in too_long.refusal().message()


def test_refusal_says_which_knob_to_lower_with_numbers():
    plan = qwen_plan(context_per_slot=32768, slots=2)
    assert not plan.fits
    refusal = plan.refusal()
    assert (refusal.variable, refusal.value) == ("memory_plans", "qwen2.5-32b")
    message = refusal.message()
    assert message.startswith("memory_plans=qwen2.5-32b does not fit: needs 36735 MiB per GPU, 3967 MiB more "
                              "than there is (weights 18932 + KV cache 16384 (f16, 2 slots x 32768 tokens)")
    assert "Lower context_per_slot to 24832 (from 32768)" in message
    assert "or lower slots to 1 (from 2)" in message
    assert "or set kv_cache_type=q8_0 (KV cache 16384 -> 8704 MiB per GPU" in message
    assert "or use a smaller quantization, with weights of at most 14965 MiB (now 18932 MiB)" in message
    assert "or add GPUs: gpu_count=2 (each then needs 19629 MiB)" in message


def test_every_remedy_really_fits():
    plan = qwen_plan(context_per_slot=32768, slots=2)
    assert qwen_plan(context_per_slot=24832, slots=2).required_mib == 32767
    assert not qwen_plan(context_per_slot=24832 + 256, slots=2).fits
    assert qwen_plan(context_per_slot=32768, slots=1).fits
    assert qwen_plan(context_per_slot=32768, slots=2, kv_cache_type="q8_0").fits
    assert qwen_plan(context_per_slot=32768, slots=2, weights_bytes=14965 * MIB).fits
    assert not qwen_plan(context_per_slot=32768, slots=2, weights_bytes=14966 * MIB).fits
    assert qwen_plan(context_per_slot=32768, slots=2, gpu_count=2).fits
    assert len(plan.remedies()) == 5


def test_only_remedies_that_help_are_offered():
    plan = qwen_plan(context_per_slot=32768, slots=1, kv_cache_type="q4_0", gpu_memory_mib=20000)
    remedies = plan.remedies()
    assert not any("slots" in remedy or "kv_cache_type" in remedy for remedy in remedies)
    assert any(remedy.startswith("add GPUs: gpu_count=2") for remedy in remedies)


def test_a_model_larger_than_every_gpu_asks_for_a_smaller_model():
    plan = qwen_plan(gpu_memory_mib=1024)
    assert plan.remedies() == []
    assert plan.refusal().message().endswith(
        "Pick a smaller model: its weights alone do not fit. [source: memory/plan.py formula, checked against "
        "llama.cpp 0c1e57098 llama_kv_cache and compute buffer sizes; VOLTA_FACTS.md, GPUs (memory)]")


def test_as_dict_carries_every_term_the_message_and_remedies():
    result = qwen_plan(context_per_slot=32768, slots=2).as_dict()
    for key in ("weights_mib", "kv_cache_mib", "compute_buffer_mib", "overhead_mib", "safety_margin_mib",
                "required_mib", "headroom_mib", "fits", "message", "remedies", "context_per_slot", "slots"):
        assert key in result
    assert result["fits"] is False and len(result["remedies"]) == 5


@pytest.mark.parametrize("changes, complaint", [
    ({"layers": 0}, "layers must be a positive whole number"),
    ({"slots": -1}, "slots must be a positive whole number"),
    ({"gpu_memory_mib": True}, "gpu_memory_mib must be a positive whole number"),
    ({"context_per_slot": 1.5}, "context_per_slot must be a positive whole number"),
    ({"weights_bytes": -1}, "weights_bytes must be zero or a positive whole number"),
    ({"kv_cache_type": "fp8"}, "kv_cache_type 'fp8' is not one of"),
])
def test_invalid_plan_inputs(changes, complaint):
    with pytest.raises(ValueError, match=complaint):
        qwen_plan(**changes)


# --- model shapes -----------------------------------------------------------------------


def test_shape_from_the_real_gguf(smollm2):
    assert smollm2 == ModelShape(
        architecture="llama", layers=30, kv_heads=3, head_dim=64, attention_heads=9, embedding_length=576,
        feed_forward_length=1536, vocab_size=49152, context_length=8192, dtype=None, quantization="Q4_1",
        source="gguf", kv_layout=KvLayout(full_heads=30 * 3))


def qwen25_32b_config():
    """Qwen2.5-32B-Instruct's config.json (the keys the planner reads)."""
    return {
        "architectures": ["Qwen2ForCausalLM"], "hidden_size": 5120, "intermediate_size": 27648,
        "max_position_embeddings": 32768, "num_attention_heads": 40, "num_hidden_layers": 64,
        "num_key_value_heads": 8, "torch_dtype": "bfloat16", "vocab_size": 152064,
    }


def test_shape_from_hf_config_derives_head_dim():
    shape = shape_from_hf_config(qwen25_32b_config())
    assert (shape.architecture, shape.layers, shape.kv_heads, shape.head_dim) == ("Qwen2ForCausalLM", 64, 8, 128)
    assert (shape.context_length, shape.dtype, shape.vocab_size) == (32768, "bfloat16", 152064)
    assert shape.quantization is None and shape.feed_forward_length == 27648


def test_shape_from_hf_config_prefers_an_explicit_head_dim():
    """Qwen3-32B: 64 heads of 128 on a 5120 hidden size (5120 / 64 would say 80)."""
    config = dict(qwen25_32b_config(), architectures=["Qwen3ForCausalLM"], num_attention_heads=64, head_dim=128,
                  max_position_embeddings=40960)
    assert shape_from_hf_config(config).head_dim == 128


def test_shape_from_hf_config_without_gqa_and_with_quantization():
    config = dict(qwen25_32b_config(), quantization_config={"quant_method": "gptq", "bits": 4}, dtype="float16")
    del config["num_key_value_heads"], config["torch_dtype"]
    shape = shape_from_hf_config(config)
    assert shape.kv_heads == 40
    assert shape.quantization == "gptq"
    assert shape.dtype == "float16"


def test_shape_from_a_multimodal_config_reads_text_config():
    config = {"architectures": ["Gemma3ForConditionalGeneration"], "torch_dtype": "bfloat16",
              "text_config": {"num_hidden_layers": 62, "num_attention_heads": 32, "num_key_value_heads": 16,
                              "head_dim": 128, "hidden_size": 5376, "max_position_embeddings": 131072}}
    shape = shape_from_hf_config(config)
    assert (shape.architecture, shape.layers, shape.kv_heads, shape.head_dim) == (
        "Gemma3ForConditionalGeneration", 62, 16, 128)
    assert shape.dtype == "bfloat16"


def test_shape_from_hf_config_missing_fields():
    with pytest.raises(ValueError, match="config.json has no usable num_hidden_layers"):
        shape_from_hf_config({"num_attention_heads": 8, "hidden_size": 512})
    with pytest.raises(ValueError, match="neither head_dim nor hidden_size"):
        shape_from_hf_config({"num_attention_heads": 8, "num_hidden_layers": 2})


def test_mtp_on_a_model_that_rolls_back_its_recurrent_state_keeps_draft_max_more_states():
    """n_rs_seq = draft n_max with MTP (common/common.h:396-402); the recurrent cache then has
    mem_size x (1 + n_rs_seq) rows (src/llama-memory-recurrent.cpp:101) on qwen35 (src/llama-arch.cpp:1123-1132).
    Shapes of a Qwen3.5-27B-like model: 64 layers, 16 of them attention, 4 KV heads x 256."""
    layout = KvLayout(full_heads=16 * 4, recurrent_bytes=3 * MIB)
    inputs = dict(layers=64, kv_heads=4, head_dim=256, weights_bytes=16 * 1024 * MIB, context_per_slot=20480,
                  slots=4, gpu_memory_mib=32768, layout=layout, compute_buffer_mib=600)
    plain = plan_memory("plain", **inputs)
    head = DraftModel(label="MTP head (1 layer)", weights_bytes=0, compute_buffer_mib=600, spread=False,
                      rollback_states=3, shape=ModelShape(architecture="qwen35", layers=1, kv_heads=4, head_dim=256,
                                                          kv_layout=KvLayout(full_heads=4)))
    mtp = plan_memory("mtp", draft=head, **inputs)
    assert plain.recurrent_mib == 4 * 3  # 3 MiB a sequence, 4 sequences
    assert mtp.recurrent_mib == 4 * plain.recurrent_mib
    # One nextn layer's f16 KV cache of the same cells, and its compute buffer; no weights.
    assert mtp.draft_kv_cache_mib == 2 * 4 * 256 * 20480 * 4 * 2 // MIB
    assert mtp.draft_mib == mtp.draft_kv_cache_mib + 600
    assert mtp.required_mib == plain.required_mib + 3 * plain.recurrent_mib + mtp.draft_mib
