"""The role's default plan for the workloads its users run (issue 35), and hybrid models counted right.

Every case of scripts/workload_plans.py (a ~27B model on one or two V100s, a 14B on a 16GB card, the
models' GGUF header values in tests/fixtures/models/workload-models.json) must give each slot room for
one request, llama_server_prompt_tokens_max + llama_server_answer_tokens_max tokens, or be refused before
any change; docs/BENCHMARKS.md carries the table as the script prints it.
"""
from __future__ import annotations

import importlib.util

import pytest

from ansible_collections.v100.llm.plugins.module_utils.models.gguf import model_summary
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    KvLayout,
    hybrid_recurrent_flags,
    kv_layout,
    plan_memory,
    recurrent_state_bytes,
    shape_from_gguf,
)
from conftest import PROJECT_ROOT

SPEC = importlib.util.spec_from_file_location("workload_plans", PROJECT_ROOT / "scripts" / "workload_plans.py")
workload_plans = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(workload_plans)
ROWS = workload_plans.rows()


@pytest.mark.parametrize("row", ROWS, ids=lambda row: "%s %s" % (row["case"]["host"], row["case"]["model"]))
def test_every_slot_of_the_default_plan_holds_one_ide_request(row):
    assert "refused" not in row, row["refused"]
    instance = row["instance"]
    assert row["request"] == 16384 + 4096
    assert instance["ctx_size"] // instance["parallel"] >= row["request"]
    assert row["sized"]["fits"] and row["sized"]["headroom_mib"] >= 0
    assert "--cache-ram" in instance["argv"] and instance["argv"][instance["argv"].index("--cache-ram") + 1] == "0"
    assert instance["prompt_cache"].startswith("prompt cache off (--cache-ram 0)")


def test_the_table_in_the_benchmarks_is_current():
    assert workload_plans.table(ROWS) in (PROJECT_ROOT / "docs" / "BENCHMARKS.md").read_text(), \
        "docs/BENCHMARKS.md is stale: paste in what scripts/workload_plans.py prints"


# --- hybrid models: a KV cache on the attention layers only, a recurrent state per sequence -----------------

QWEN35 = next(row for row in ROWS if row["case"]["model"] == "qwen3.5-27b-q4_k_m")


def test_qwen35_keeps_a_kv_cache_on_every_fourth_layer_and_a_recurrent_state_on_the_others():
    shape = QWEN35["sized"]
    # 16 of 64 layers x 4 KV heads; 48 recurrent layers of 4 x (3 x (6144 + 2 x 16 x 128) + 128 x 6144) bytes.
    assert (shape["full_heads"], shape["swa_heads"]) == (16 * 4, 0)
    assert shape["recurrent_bytes"] == 48 * 3_268_608
    slots = QWEN35["instance"]["parallel"]
    assert shape["recurrent_mib"] == -(-48 * 3_268_608 * slots // 2**20)
    assert "+ recurrent state %d (%d sequences)" % (shape["recurrent_mib"], slots) in shape["message"]


def test_counting_every_layer_would_have_given_a_quarter_of_the_slots():
    # What the planner did before: all 64 layers with a KV cache, no recurrent state.
    whole = plan_memory("q", layers=64, kv_heads=4, head_dim=256, weights_bytes=16_600_000_000,
                        context_per_slot=20480, slots=10, gpu_memory_mib=32510)
    assert not whole.fits and whole.kv_cache_mib == 4 * QWEN35["sized"]["kv_cache_mib"] * 20480 // 20736


def test_the_recurrent_layers_follow_the_gguf():
    assert hybrid_recurrent_flags("qwen35", 8, 4, None, None) == [True, True, True, False] * 2
    assert hybrid_recurrent_flags("qwen35", 8, None, None, None) == [True, True, True, False] * 2  # default 4
    assert hybrid_recurrent_flags("qwen3next", 6, 3, None, None) == [True, True, False] * 2
    # An explicit list wins over the interval; the MTP layers at the end keep no recurrent state.
    assert hybrid_recurrent_flags("qwen35moe", 4, 4, [True, False, True, True], None) == [True, False, True, True]
    assert hybrid_recurrent_flags("qwen35", 9, 4, None, 1) == [True, True, True, False] * 2 + [False]
    assert hybrid_recurrent_flags("llama", 8, 4, None, None) is None


def test_without_the_state_sizes_a_hybrid_is_counted_whole():
    flags = hybrid_recurrent_flags("qwen35", 64, 4, None, None)
    assert recurrent_state_bytes({"conv_kernel": 4, "inner_size": 6144, "state_size": 128}) is None
    assert kv_layout("qwen35", 64, 4, None, None, None, flags, None) == KvLayout(full_heads=64 * 4)
    assert kv_layout("qwen35", 64, 4, None, None, None, flags, 100) == KvLayout(full_heads=16 * 4,
                                                                                 recurrent_bytes=48 * 100)


def test_the_gguf_keys_reach_the_shape():
    header = dict(workload_plans.json.loads(workload_plans.CASES.read_text())["models"]["qwen3.5-27b-q4_k_m"][
        "header"])
    gguf = {"metadata": header, "array_lengths": {}, "parameter_count": None}
    assert model_summary(gguf)["ssm"] == {"conv_kernel": 4, "inner_size": 6144, "state_size": 128, "group_count": 16}
    assert shape_from_gguf(gguf).kv_layout == KvLayout(full_heads=64, recurrent_bytes=48 * 3_268_608)
