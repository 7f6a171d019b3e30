"""memory_plan.choose_slots: the most slots that keep a context floor, then longer slots.

Shapes are real: Gemma-3-27B's and Qwen2.5-32B-Instruct's config.json (64 layers, 8 KV heads,
head_dim 128, vocabulary 152064, FFN 27648, trained context 32768) with its
Q4_K_M file size, and a Llama-3-8B shape (32 layers, 8 KV heads, trained
context 131072) as in tests/gpu/make_bench_model.py.
"""
from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    KvLayout,
    ModelShape,
    choose_slots,
    estimate_compute_buffer_mib,
    kv_layout,
    plan_memory,
    swa_layer_flags,
    unsized_slots,
)

QWEN25_32B = ModelShape(architecture="qwen2", layers=64, kv_heads=8, head_dim=128, attention_heads=40,
                        embedding_length=5120, feed_forward_length=27648, vocab_size=152064, context_length=32768)
QWEN25_32B_Q4_K_M_BYTES = 19851336256
LLAMA3_8B = ModelShape(architecture="llama", layers=32, kv_heads=8, head_dim=128, attention_heads=32,
                       embedding_length=4096, feed_forward_length=14336, vocab_size=128256, context_length=131072)
LLAMA3_8B_Q4_K_M_BYTES = 4920734016
V100_32GB_MIB = 32768
H200_MIB = 143771


def sizer(shape, weights_bytes, gpu_memory_mib, kv_cache_type="f16", ubatch=512, flash_attention=True, gpu_count=1):
    def plan_for(slots, context_per_slot):
        return plan_memory(
            "m", layers=shape.layers, kv_heads=shape.kv_heads, head_dim=shape.head_dim, weights_bytes=weights_bytes,
            context_per_slot=context_per_slot, slots=slots, gpu_memory_mib=gpu_memory_mib,
            kv_cache_type=kv_cache_type, gpu_count=gpu_count, layout=shape.kv_layout, ubatch=ubatch,
            compute_buffer_mib=estimate_compute_buffer_mib(shape, context_per_slot, ubatch, flash_attention))
    return plan_for


def choose(plan_for, slots_min=1, slots_max=16, context_min=8192, context_max=32768, n_ctx_train=None):
    return choose_slots(plan_for, slots_min=slots_min, slots_max=slots_max, context_min=context_min,
                        context_max=context_max, n_ctx_train=n_ctx_train)


def test_a_32b_q4_k_m_on_one_v100_gets_five_slots():
    # KV budget: 32768 - weights 18932 - compute 307 - overhead 700 - margin 1024 = 11805 MiB; a token costs
    # 2 x 64 x 8 x 128 x 2 bytes = 0.25 MiB, so 5 x 8192 tokens (10240 MiB) fit, 6 do not; then each of the 5
    # slots grows to 9216 tokens (11520 MiB).
    plan, chosen = choose(sizer(QWEN25_32B, QWEN25_32B_Q4_K_M_BYTES, V100_32GB_MIB), n_ctx_train=32768)
    assert (chosen.slots, chosen.context_per_slot) == (5, 9216)
    assert plan.fits and plan.kv_cache_mib == 11520 and plan.required_mib == 32483
    assert chosen.reason == ("5 slots x 9216 tokens: the most slots (at most 16) that each keep 8192 tokens "
                             "(6 would need 33251 MiB of 32768 MiB), then each slot grown to 9216 tokens "
                             "(at most 32768) with the memory left")


def test_a_q8_0_cache_nearly_doubles_the_slots():
    _, chosen = choose(sizer(QWEN25_32B, QWEN25_32B_Q4_K_M_BYTES, V100_32GB_MIB, kv_cache_type="q8_0"))
    # 2 x 64 x 8 x 128 x 34/32 bytes = 0.1328 MiB a token: 10 slots of 8192 (10880 MiB), then 8704 each.
    assert (chosen.slots, chosen.context_per_slot) == (10, 8704)


def test_two_gpus_split_the_layers_and_hold_more_slots():
    _, chosen = choose(sizer(QWEN25_32B, QWEN25_32B_Q4_K_M_BYTES, V100_32GB_MIB, gpu_count=2))
    assert chosen.slots == 16
    assert chosen.context_per_slot > 8192 and chosen.context_per_slot % 256 == 0


def test_spare_memory_lengthens_the_slots_up_to_the_ceiling():
    plan, chosen = choose(sizer(LLAMA3_8B, LLAMA3_8B_Q4_K_M_BYTES, H200_MIB), n_ctx_train=131072)
    assert (chosen.slots, chosen.context_per_slot) == (16, 32768)
    assert plan.fits and plan.kv_cache_mib == 16 * 32768 // 8
    assert chosen.reason.endswith(", then each slot grown to 32768 tokens (at most 32768) with the memory left")


def test_growth_stops_where_the_memory_ends():
    # 8B Q4_K_M on one V100: 16 slots of 8192 fit (16384 MiB of KV), and each slot grows to what is left.
    plan, chosen = choose(sizer(LLAMA3_8B, LLAMA3_8B_Q4_K_M_BYTES, V100_32GB_MIB), n_ctx_train=131072)
    assert chosen.slots == 16 and 8192 < chosen.context_per_slot < 32768
    assert plan.fits and plan.headroom_mib < 16 * 256 // 8  # one more step of 256 tokens per slot would not fit
    longer = sizer(LLAMA3_8B, LLAMA3_8B_Q4_K_M_BYTES, V100_32GB_MIB)(16, chosen.context_per_slot + 256)
    assert not longer.fits


def test_the_trained_context_caps_the_ceiling():
    _, chosen = choose(sizer(LLAMA3_8B, LLAMA3_8B_Q4_K_M_BYTES, H200_MIB), n_ctx_train=12000)
    assert (chosen.slots, chosen.context_per_slot) == (16, 11776)


def test_a_trained_context_below_the_floor_is_an_error_not_a_shorter_slot():
    # llama-server would cap the slots there and answer 400 to the longest requests: memory_sizing refuses it,
    # naming the variables (trained_context_refusal); choose_slots never plans it.
    with pytest.raises(ValueError, match="trained context .4096 tokens. is less than context_min .8192."):
        choose(sizer(LLAMA3_8B, LLAMA3_8B_Q4_K_M_BYTES, H200_MIB), n_ctx_train=4096)


def test_without_gpu_memory_llama_servers_own_count_at_the_floor():
    chosen = unsized_slots(1, 16, 8192, 32768, 131072, "no GPU")
    assert (chosen.slots, chosen.context_per_slot) == (4, 8192)
    assert "not sized (no GPU)" in chosen.reason
    short = unsized_slots(1, 2, 2048, 32768, 2048, "no GPU")
    assert (short.slots, short.context_per_slot) == (2, 2048)
    assert unsized_slots(6, 6, 8192, 32768, None, "no GPU").slots == 6


@pytest.mark.parametrize(("arguments", "complaint"), [
    (dict(slots_min=0), "slots must be positive"),
    (dict(slots_min=4, slots_max=2), "slots_min <= slots_max"),
    (dict(context_min=0), "slot contexts must be positive"),
    (dict(context_min=8192, context_max=4096), "context_min <= context_max"),
])
def test_bad_bounds_raise(arguments, complaint):
    with pytest.raises(ValueError, match=complaint):
        choose(sizer(QWEN25_32B, QWEN25_32B_Q4_K_M_BYTES, V100_32GB_MIB), **arguments)


# --- sliding-window and hybrid layers ------------------------------------------------------------------------

# Gemma-3-27B's config.json: 62 layers, 16 KV heads of 128, sliding window 1024 on five of every six layers
# (gemma3's default pattern in llama.cpp), vocabulary 262144, trained context 131072. The weights are taken
# as 16.5 GB, about what a Q4_K_M of this shape weighs.
GEMMA3_27B_LAYOUT = kv_layout("gemma3", 62, 16, None, 1024, None)
GEMMA3_27B = ModelShape(architecture="gemma3", layers=62, kv_heads=16, head_dim=128, attention_heads=32,
                        embedding_length=5376, feed_forward_length=21504, vocab_size=262144,
                        context_length=131072, kv_layout=GEMMA3_27B_LAYOUT)


def test_gemma3_keeps_the_whole_context_on_every_sixth_layer_only():
    # set_swa_pattern(6): layers 5, 11, ..., 59 are global, the 52 others slide.
    assert swa_layer_flags(12, 6) == [True] * 5 + [False] + [True] * 5 + [False]
    assert GEMMA3_27B_LAYOUT == KvLayout(full_heads=10 * 16, swa_heads=52 * 16, sliding_window=1024)


def test_without_a_window_key_or_for_other_architectures_every_layer_is_counted_whole():
    assert kv_layout("gemma3", 62, 16, None, None, None) == KvLayout(full_heads=62 * 16)
    assert kv_layout("gemma3", 62, 16, None, 0, None) == KvLayout(full_heads=62 * 16)
    # qwen2's config names a sliding window, but llama.cpp gives qwen2 no sliding-window cache.
    assert kv_layout("qwen2", 64, 8, None, 4096, None) == KvLayout(full_heads=64 * 8)


def test_the_gguf_pattern_wins_over_the_default():
    assert kv_layout("gemma3", 4, 2, None, 512, [True, False, True, False]) == KvLayout(4, 4, 512)
    assert kv_layout("gemma2", 4, 2, None, 512, 4) == KvLayout(full_heads=2, swa_heads=6, sliding_window=512)


def test_per_layer_kv_heads_are_summed_and_a_hybrid_is_counted_whole():
    assert kv_layout("openelm", 4, 8, [2, 4, 6, 8], None, None) == KvLayout(full_heads=20)
    # A hybrid model's recurrent layers (head_count_kv 0) keep a recurrent state per slot that the planner does
    # not size: every layer is counted with the most heads instead.
    assert kv_layout("granitehybrid", 8, 8, [0, 0, 0, 8, 0, 0, 0, 8], None, None) == KvLayout(full_heads=64)


def test_a_pattern_list_of_another_length_counts_every_layer_whole():
    assert kv_layout("gemma3", 6, 2, None, 512, [True, True]) == KvLayout(full_heads=12, sliding_window=512)


def test_sliding_window_layers_cost_the_window_plus_a_micro_batch():
    plan = plan_memory("g", layers=62, kv_heads=16, head_dim=128, weights_bytes=0, context_per_slot=8192, slots=1,
                       gpu_memory_mib=32768, layout=GEMMA3_27B_LAYOUT)
    # Global: 10 x 16 x 128 x 2 x 2 bytes x 8192 = 640 MiB; sliding: 52 layers x pad256(1024 + 512) = 1536 cells.
    assert plan.swa_cells == 1536 and plan.kv_cache_mib == 640 + 624
    assert "sliding-window layers 1536 tokens" in plan.arithmetic()
    full = plan_memory("g", layers=62, kv_heads=16, head_dim=128, weights_bytes=0, context_per_slot=8192, slots=1,
                       gpu_memory_mib=32768, layout=GEMMA3_27B_LAYOUT, swa_full=True)
    assert full.kv_cache_mib == 62 * 16 * 128 * 4 * 8192 // 2**20


def test_a_gemma3_27b_gets_nearly_four_times_the_slots_its_full_count_would_give():
    plan, chosen = choose(sizer(GEMMA3_27B, 16_500_000_000, V100_32GB_MIB), n_ctx_train=131072)
    assert (chosen.slots, chosen.context_per_slot) == (11, 9216) and plan.fits
    every_layer = dataclasses.replace(GEMMA3_27B, kv_layout=None)
    _, counted_whole = choose(sizer(every_layer, 16_500_000_000, V100_32GB_MIB), n_ctx_train=131072)
    assert counted_whole.slots == 3
