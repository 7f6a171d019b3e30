"""The gpu_memory_plan module end to end: main() with module args, the JSON it prints."""
from __future__ import annotations

import pytest
import sample_gpus
from module_main import emitted_warnings, run_main
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    DEFAULT_OVERHEAD_MIB,
    DEFAULT_SAFETY_MARGIN_MIB,
    busiest_gpu_layers,
    plan_memory,
)
from ansible_collections.v100.llm.plugins.modules import gpu_memory_plan
from conftest import FIXTURES
from test_gguf_metadata import build_gguf, llama_kvs, split_kvs

SMOLLM2_PREFIX = FIXTURES / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix"


def v100_pcie_32gb(index=0):
    return sample_gpus.v100_pcie_32gb(index, driver=True)


def v100s_pcie_32gb(index=0):
    return sample_gpus.v100s_pcie_32gb(index, driver=True)


def module_args(**changes):
    return dict({"gpus": [v100_pcie_32gb()]}, **changes)


def run(capsys, args):
    return run_main(capsys, gpu_memory_plan.main, args)


def test_no_plans_no_sizes(capsys):
    assert run(capsys, module_args()) == (0, {"changed": False, "memory_plans": [], "refusals": [],
                                               "invocation": {"module_args": {"gpus": [v100_pcie_32gb()],
                                                                              "memory_plans": []}}})


def test_a_display_card_beside_the_v100_is_not_sized_against(capsys):
    gt1030 = dict(sample_gpus.geforce_gt_1030(0), memory_total_mib=2048)
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 2048, "slots": 4}
    code, result = run(capsys, module_args(gpus=[gt1030, v100_pcie_32gb(1)], memory_plans=[plan]))
    assert code == 0, result
    assert result["memory_plans"][0]["gpu_memory_mib"] == 32768  # the V100's, not the GT 1030's 2048


def test_memory_plan_from_a_real_gguf_header(capsys):
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 2048, "slots": 4}
    code, result = run(capsys, module_args(gpus=[v100_pcie_32gb(0), v100s_pcie_32gb(1)], memory_plans=[plan]))
    assert code == 0, result
    [sized] = result["memory_plans"]
    assert sized["name"] == "smollm2" and sized["fits"] is True
    assert (sized["layers"], sized["kv_heads"], sized["head_dim"]) == (30, 3, 64)
    assert sized["weights_bytes"] == SMOLLM2_PREFIX.stat().st_size
    assert sized["kv_cache_mib"] == 180  # llama.cpp: 180.00 MiB for -c 8192 -np 4
    assert sized["compute_buffer_mib"] == 98  # estimated from vocab 49152 at -ub 512
    assert sized["gpu_memory_mib"] == 32510  # the smaller of the two cards
    assert sized["message"].startswith("smollm2 fits on 1 GPU with ")


def test_memory_plan_that_does_not_fit_is_refused_with_remedies(capsys):
    plan = {"name": "qwen2.5-32b", "layers": 64, "kv_heads": 8, "head_dim": 128, "weights_mib": 18932,
            "context_per_slot": 32768, "slots": 2, "compute_buffer_mib": 307}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert result["msg"].startswith("The memory plans do not fit; nothing on the host was changed:\n"
                                    "- memory_plans=qwen2.5-32b does not fit: needs 37347 MiB per GPU")
    assert "Lower context_per_slot to 23552 (from 32768)" in result["msg"]
    assert result["memory_plans"][0]["fits"] is False
    assert result["refusals"][0]["variable"] == "memory_plans"


def test_gguf_not_downloaded_yet_skips_the_plan_with_a_warning(capsys, tmp_path):
    missing = tmp_path / "model.gguf"
    plan = {"name": "later", "gguf_path": str(missing), "context_per_slot": 4096}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0
    assert result["memory_plans"] == [{"name": "later", "skipped": True, "skip_reason":
                                       "%s does not exist yet (the models stage fetches it); sized on the next "
                                       "run" % missing}]
    assert emitted_warnings(result) == ["Memory plan later skipped: %s does not exist yet (the models stage "
                                        "fetches it); sized on the next run." % missing]


def test_a_split_set_is_sized_with_the_weights_of_all_its_parts(capsys, tmp_path):
    part_1 = tmp_path / "Q-00001-of-00002.gguf"
    part_1.write_bytes(build_gguf(llama_kvs() + split_kvs(0, 2)))
    plan = {"name": "split", "gguf_path": str(part_1), "context_per_slot": 4096}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1 and "- memory_plans=split cannot read gguf_path" in result["msg"]
    assert "Q-00002-of-00002.gguf" in result["msg"]
    (tmp_path / "Q-00002-of-00002.gguf").write_bytes(build_gguf(split_kvs(1, 2)) + bytes(3 * 1048576))
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0, result
    assert result["memory_plans"][0]["weights_bytes"] == sum(
        path.stat().st_size for path in tmp_path.iterdir()) > 3 * 1048576


def test_a_file_that_is_not_gguf_is_refused(capsys):
    plan = {"name": "broken", "gguf_path": str(FIXTURES / "models" / "SOURCES.md"), "context_per_slot": 4096}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert "- memory_plans=broken cannot read gguf_path" in result["msg"]
    assert "not a GGUF file" in result["msg"]
    assert "give layers, kv_heads, head_dim and weights_mib instead" in result["msg"]


def test_unknown_gpu_memory_skips_the_plan(capsys):
    plan = {"name": "p", "layers": 2, "kv_heads": 1, "head_dim": 64, "weights_mib": 10, "context_per_slot": 256}
    code, result = run(capsys, module_args(gpus=[], memory_plans=[plan]))
    assert code == 0
    assert result["memory_plans"][0]["skip_reason"] == (
        "no GPU memory size is known: no serving GPU, and no gpu_memory_mib")
    plan["gpu_memory_mib"] = 16384
    code, result = run(capsys, module_args(gpus=[], memory_plans=[plan]))
    assert result["memory_plans"][0]["fits"] is True


def test_invalid_plan_numbers_are_refused(capsys):
    plan = {"name": "zero", "layers": 0, "kv_heads": 1, "head_dim": 64, "weights_mib": 10, "context_per_slot": 256}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert "- memory_plans=zero cannot be sized: layers must be a positive whole number (got 0)" in result["msg"]


@pytest.mark.parametrize("plan, complaint", [
    ({"name": "x", "gguf_path": "/m.gguf", "layers": 2, "context_per_slot": 1}, "mutually exclusive"),
    ({"name": "x", "layers": 2, "context_per_slot": 1}, "required together"),
    ({"name": "x", "context_per_slot": 1}, "one of the following is required"),
])
def test_plan_shape_options_are_validated(capsys, plan, complaint):
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1 and complaint in result["msg"]


# The slot floor these tests were written for (the module's default is one IDE request, 20480 tokens).
FLOOR_8K = {"context_min": 8192}


def test_a_model_trained_for_less_than_the_floor_is_refused_before_any_sizing(capsys):
    # SmolLM2-135M's GGUF says 8192 tokens: one request of 16384 + 4096 cannot fit a slot of it.
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX),
            "choose_slots": {"floor_variable": "llama_server_prompt_tokens_max + llama_server_answer_tokens_max"}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert ("- memory_plans=smollm2 is trained for 8192 tokens of context, less than the 20480 each slot must keep "
            "(llama_server_prompt_tokens_max + llama_server_answer_tokens_max)") in result["msg"]
    assert "Lower llama_server_prompt_tokens_max + llama_server_answer_tokens_max to at most 8192" in result["msg"]
    # Without GPU memory to size against, the same refusal (the unsized count would serve 400s too).
    code, result = run(capsys, module_args(gpus=[], memory_plans=[plan]))
    assert code == 1 and "is trained for 8192 tokens" in result["msg"]


def test_a_fixed_plan_whose_model_is_trained_for_less_than_one_request_is_refused(capsys):
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 16384, "slots": 2,
            "request": {"tokens": 12000, "variable": "llama_server_prompt_tokens_max + llama_server_answer_tokens_max"}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1 and "- memory_plans=smollm2 is trained for 8192 tokens of context, less than the 12000" in result["msg"]
    assert run(capsys, module_args(memory_plans=[dict(plan, request={"tokens": 8192})]))[0] == 0


def test_choose_slots_sizes_from_the_real_gguf_and_the_gpu(capsys):
    # SmolLM2-135M was trained on 8192 tokens: the floor and the ceiling stop there.
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "choose_slots": FLOOR_8K}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0, result
    [sized] = result["memory_plans"]
    assert (sized["chosen_slots"], sized["chosen_context_per_slot"]) == (16, 8192) and sized["fits"] is True
    assert sized["choice"] == "16 slots x 8192 tokens: the most slots (at most 16) that each keep 8192 tokens"
    assert sized["message"].startswith(sized["choice"] + "; smollm2 fits on 1 GPU")


def test_choose_slots_that_cannot_fit_one_slot_is_refused(capsys):
    plan = {"name": "big", "layers": 64, "kv_heads": 8, "head_dim": 128, "weights_mib": 30000,
            "choose_slots": {"context_min": 8192}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert "- memory_plans=big does not fit: needs " in result["msg"]
    assert (result["memory_plans"][0]["slots"], result["memory_plans"][0]["context_per_slot"]) == (1, 8192)


def test_choose_slots_without_gpu_memory_takes_llama_servers_own_count(capsys):
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "choose_slots": dict(FLOOR_8K, slots_max=16)}
    code, result = run(capsys, module_args(gpus=[], memory_plans=[plan]))
    assert code == 0, result
    [sized] = result["memory_plans"]
    assert sized["skipped"] is True and (sized["chosen_slots"], sized["chosen_context_per_slot"]) == (4, 8192)
    assert sized["choice"].startswith("4 slots x 8192 tokens, not sized (no GPU memory size is known")
    assert any("Memory plan smollm2: 4 slots x 8192 tokens, not sized" in w for w in emitted_warnings(result))


def test_a_plan_needs_a_context_or_a_slot_choice(capsys):
    plan = {"name": "x", "layers": 2, "kv_heads": 1, "head_dim": 64, "weights_mib": 10}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1 and "has neither context_per_slot nor choose_slots" in result["msg"]


# With the overhead and margin given, so the sums below read as before the defaults were measured on CUDA.
QWEN_32B_Q4 = {"layers": 64, "kv_heads": 8, "head_dim": 128, "weights_mib": 18932, "compute_buffer_mib": 307,
               "overhead_mib": 600, "safety_margin_mib": 512}


def test_the_module_defaults_are_the_planner_s():
    assert gpu_memory_plan.MEMORY_PLAN_SPEC["overhead_mib"]["default"] == DEFAULT_OVERHEAD_MIB == 700
    assert gpu_memory_plan.MEMORY_PLAN_SPEC["safety_margin_mib"]["default"] == DEFAULT_SAFETY_MARGIN_MIB == 1024


def test_a_choice_of_one_f16_slot_says_what_q8_0_would_hold(capsys):
    # 3000 MiB left for KV: one f16 slot of 8192 tokens (2048 MiB), two q8_0 ones (1088 MiB each).
    plan = dict(QWEN_32B_Q4, name="tight", weights_mib=32768 - 512 - 600 - 307 - 3000, choose_slots=FLOOR_8K)
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0, result
    [sized] = result["memory_plans"]
    assert sized["chosen_slots"] == 1 and sized["kv_cache_type"] == "f16"  # the plan keeps its type
    assert sized["choice"].endswith("(kv_cache_type q8_0 would hold 2 slots x 11264 tokens, each decoding 7-22 % "
                                    "slower: docs/BENCHMARKS.md)")
    # Not said where q8_0 is already set, or where one slot is all that was asked.
    for quiet in (dict(plan, kv_cache_type="q8_0"), dict(plan, choose_slots=dict(FLOOR_8K, slots_max=1))):
        assert "would hold" not in run(capsys, module_args(memory_plans=[quiet]))[1]["memory_plans"][0]["choice"]


def test_two_auto_plans_on_one_gpu_split_it(capsys):
    plans = [dict(QWEN_32B_Q4, name=name, gpus=[0], weights_mib=4000, choose_slots=FLOOR_8K) for name in ("a", "b")]
    code, result = run(capsys, module_args(gpus=[v100_pcie_32gb(0), v100_pcie_32gb(1)], memory_plans=plans))
    assert code == 0, result
    first, second = result["memory_plans"]
    # (32768 - 512) // 2 + 512 = 16640 MiB each: 16 slots of 8192 need 4000 + 32768 + ... : fewer fit.
    assert first["gpu_memory_mib"] == second["gpu_memory_mib"] == 16640
    assert first["chosen_slots"] == second["chosen_slots"] == 5
    assert first["choice"].endswith(", within 16640 MiB, its share of GPU 0 beside 1 other plan")
    assert first["required_mib"] + second["required_mib"] - 512 <= 32768


def test_an_auto_plan_gets_what_a_fixed_plan_on_its_gpu_leaves(capsys):
    fixed = dict(QWEN_32B_Q4, name="fixed", gpus=[0], weights_mib=4000, context_per_slot=8192, slots=2)
    auto = dict(QWEN_32B_Q4, name="auto", gpus=[0], weights_mib=4000, choose_slots=FLOOR_8K)
    code, result = run(capsys, module_args(memory_plans=[auto, fixed]))
    assert code == 0, result
    chosen, sized = result["memory_plans"]  # in the order given
    assert sized["required_mib"] == 4000 + 4096 + 307 + 600 + 512
    assert chosen["gpu_memory_mib"] == 32768 - (sized["required_mib"] - 512)
    # KV room: 23765 - 4000 - 307 - 600 - 512 = 18346 MiB; 8192 f16 tokens of this shape take 2048 MiB.
    assert chosen["chosen_slots"] == 8
    assert chosen["choice"].endswith(", within 23765 MiB, its share of GPU 0 beside 1 other plan (fixed)")


def test_fixed_plans_that_overfill_a_shared_gpu_are_refused_together(capsys):
    plans = [dict(QWEN_32B_Q4, name=name, gpus=[0], context_per_slot=8192, slots=2) for name in ("a", "b")]
    code, result = run(capsys, module_args(gpus=[v100_pcie_32gb(0), v100_pcie_32gb(1)], memory_plans=plans))
    assert code == 1
    assert all(plan["fits"] for plan in result["memory_plans"])  # each alone fits
    # Each: weights 18932 + KV 4096 + compute 307 + overhead 600 = 23935 MiB, beside one safety margin.
    assert ("- memory_plans=GPU 0 is shared by 2 llama_server_instances that need 48382 MiB together, 15614 MiB "
            "more than it has: a 23935 + b 23935 + safety margin 512 = 48382 MiB of 32768 MiB") in result["msg"]
    assert "Give them different gpus" in result["msg"]
    apart = [dict(plans[0], gpus=[0]), dict(plans[1], gpus=[1])]
    assert run(capsys, module_args(gpus=[v100_pcie_32gb(0), v100_pcie_32gb(1)], memory_plans=apart))[0] == 0


def test_the_busiest_gpu_of_an_uneven_split_is_sized(capsys):
    # llama.cpp (src/llama-model.cpp): layer il of n goes to the first GPU whose cumulative share is above
    # il / (n + 1); 40 layers on [1, 1]: 21 on the first.
    assert busiest_gpu_layers(40, 2) == 21 and busiest_gpu_layers(40, 2, [3, 1]) == 31
    assert busiest_gpu_layers(64, 2, [3, 1]) == 49 and busiest_gpu_layers(62, 2, [1, 1]) == 32
    assert busiest_gpu_layers(5, 3, [0.5, 0.25, 0.25]) == 3
    even, uneven = (plan_memory("p", layers=64, kv_heads=8, head_dim=128, weights_bytes=18932 * 2**20,
                                context_per_slot=8192, slots=4, gpu_memory_mib=32768, gpu_count=2,
                                tensor_split=split) for split in (None, [3, 1]))
    assert (even.layers_per_gpu, uneven.layers_per_gpu) == (33, 49)
    assert uneven.kv_cache_mib == even.kv_cache_mib * 49 // 33
    # Through the module: 16 slots fit split evenly over two V100s; with 3:1 the first GPU holds too much.
    plan = dict(QWEN_32B_Q4, name="split", gpus=[0, 1], gpu_count=2, context_per_slot=8192, slots=16)
    two = [v100_pcie_32gb(0), v100_pcie_32gb(1)]
    assert run(capsys, module_args(gpus=two, memory_plans=[plan]))[0] == 0
    code, result = run(capsys, module_args(gpus=two, memory_plans=[dict(plan, tensor_split=[3.0, 1.0])]))
    assert code == 1 and "memory_plans=split does not fit" in result["msg"] and "add GPUs" not in result["msg"]


def test_a_display_card_named_on_purpose_is_sized_by_its_own_memory(capsys):
    gt1030 = dict(sample_gpus.geforce_gt_1030(0), memory_total_mib=2048, serving=False)
    plans = [dict(QWEN_32B_Q4, name="on-the-display-card", gpus=[0], weights_mib=1000, choose_slots=FLOOR_8K)]
    code, result = run(capsys, module_args(gpus=[gt1030, v100_pcie_32gb(1)],
                                           memory_plans=plans))
    assert code == 1, result
    assert result["memory_plans"][0]["gpu_memory_mib"] == 2048


def test_an_auto_plan_left_no_memory_by_fixed_ones_is_refused_by_name(capsys):
    fixed = [dict(QWEN_32B_Q4, name=name, gpus=[0], weights_mib=12000, context_per_slot=8192, slots=2)
             for name in ("f1", "f2")]
    auto = dict(QWEN_32B_Q4, name="auto", gpus=[0], weights_mib=4000, choose_slots=FLOOR_8K)
    code, result = run(capsys, module_args(memory_plans=fixed + [auto]))
    assert code == 1
    assert "- memory_plans=auto has no memory left on GPU 0: the plans with fixed sizes there take it all" \
        in result["msg"]
    assert "Give it other gpus, or lower the context or slots of the fixed plans there" in result["msg"]


def test_an_auto_plan_that_does_not_fit_its_share_says_so_in_the_role_s_words(capsys):
    fixed = dict(QWEN_32B_Q4, name="fixed", gpus=[0], weights_mib=20000, context_per_slot=8192, slots=2)
    auto = dict(QWEN_32B_Q4, name="auto", gpus=[0], weights_mib=6000,
                choose_slots=dict(FLOOR_8K, floor_variable="llama_server_prompt_tokens_max + "
                                                            "llama_server_answer_tokens_max"))
    code, result = run(capsys, module_args(memory_plans=[fixed, auto]))
    assert code == 1
    line = next(line for line in result["msg"].splitlines() if line.startswith("- memory_plans=auto"))
    # What fixed leaves: 32768 - (20000 + 4096 + 307 + 600) = 7765 MiB.
    assert "(its memory is 7765 MiB, its share of GPU 0 beside 1 other plan (fixed))" in line
    assert "Lower llama_server_prompt_tokens_max + llama_server_answer_tokens_max to 1280 (from 8192)" in line
    assert "context_per_slot" not in line
    assert "add GPUs" not in line and "give it other gpus" in line


def test_a_unified_auto_plan_is_one_stream_of_every_slot(capsys):
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "choose_slots": FLOOR_8K, "kv_unified": True,
            "flash_attention": False}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0, result
    [sized] = result["memory_plans"]
    assert (sized["chosen_slots"], sized["chosen_context_per_slot"]) == (16, 8192)
    assert (sized["slots"], sized["context_per_slot"], sized["sequences_per_stream"]) == (1, 16 * 8192, 16)


def test_without_gpus_an_auto_plan_takes_llama_servers_own_count(capsys):
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "choose_slots": FLOOR_8K}
    code, result = run(capsys, module_args(gpus=[], memory_plans=[plan]))
    assert code == 0, result
    assert result["memory_plans"][0]["chosen_slots"] == 4


def smollm2_tokenizer_kvs(change=None):
    """The real SmolLM2 tokenizer keys, its 49152 token texts with `change` ({id: text}) applied."""
    from ansible_collections.v100.llm.plugins.module_utils.models.gguf import read_gguf_metadata
    metadata = read_gguf_metadata(str(SMOLLM2_PREFIX), max_array_items=60000)["metadata"]
    tokens = list(metadata["tokenizer.ggml.tokens"])
    for position, text in (change or {}).items():
        tokens[position] = text
    return [("tokenizer.ggml.model", "str", "gpt2"), ("tokenizer.ggml.pre", "str", "smollm"),
            ("tokenizer.ggml.tokens", ("array", "str"), tokens),
            ("tokenizer.ggml.bos_token_id", "u32", metadata["tokenizer.ggml.bos_token_id"]),
            ("tokenizer.ggml.eos_token_id", "u32", metadata["tokenizer.ggml.eos_token_id"]),
            ("tokenizer.ggml.add_bos_token", "bool", False)]


def test_a_draft_model_adds_its_weights_kv_cache_and_compute_buffer(capsys):
    """SmolLM2 drafting for itself: the draft context has the target's cells (common/speculative.cpp:2530)."""
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 2048, "slots": 4}
    code, alone = run(capsys, module_args(memory_plans=[plan]))
    code, drafted = run(capsys, module_args(memory_plans=[dict(plan, draft={"gguf_path": str(SMOLLM2_PREFIX)})]))
    assert code == 0, drafted
    alone, drafted = alone["memory_plans"][0], drafted["memory_plans"][0]
    weights_mib = -(-SMOLLM2_PREFIX.stat().st_size // 1048576)
    assert drafted["draft_kv_cache_mib"] == alone["kv_cache_mib"] == 180
    assert drafted["draft_mib"] == weights_mib + 180 + alone["compute_buffer_mib"]
    assert drafted["required_mib"] == alone["required_mib"] + drafted["draft_mib"]
    assert drafted["draft"] == "draft model SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix"
    assert "+ draft model SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix %d (KV cache 180) +" % (
        drafted["draft_mib"]) in drafted["message"]


@pytest.mark.parametrize("draft_kvs, why", [
    (llama_kvs(**{"tokenizer.ggml.model": ("str", "llama")}),
     "its vocabulary type is SPM (tokenizer.ggml.model llama), the model's BPE (gpt2)"),
    (llama_kvs() + smollm2_tokenizer_kvs({100: "changed"}),
     "the texts of its tokens 5 to 49151 differ from the model's"),
])
def test_a_draft_model_llama_server_would_refuse_is_refused_from_both_headers(capsys, tmp_path, draft_kvs, why):
    draft = tmp_path / "draft.gguf"
    draft.write_bytes(build_gguf(draft_kvs))
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 2048,
            "draft": {"gguf_path": str(draft)}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert "- memory_plans=smollm2 cannot draft with %s: %s. llama.cpp does not draft with such a model" % (
        draft, why) in result["msg"]
    assert "Draft with a smaller model of the same family" in result["msg"]


def test_a_draft_model_with_the_same_tokens_drafts(capsys, tmp_path):
    draft = tmp_path / "draft.gguf"
    draft.write_bytes(build_gguf(llama_kvs() + smollm2_tokenizer_kvs({2: "a control token, not compared"})))
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 2048,
            "draft": {"gguf_path": str(draft)}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0, result["msg"]
    # The draft's own shape: 64 layers x 8 KV heads x 128 of llama_kvs, f16, 2048 cells.
    assert result["memory_plans"][0]["draft_kv_cache_mib"] == 2 * 64 * 8 * 128 * 2048 * 2 // 1048576


def test_mtp_needs_the_models_nextn_layers_and_counts_their_kv_cache(capsys, tmp_path):
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 2048, "draft": {"mtp": True}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 1
    assert "- memory_plans=smollm2 cannot use draft-mtp: %s has no multi-token prediction layers " \
           "(llama.nextn_predict_layers is absent or 0)" % SMOLLM2_PREFIX in result["msg"]
    model = tmp_path / "mtp.gguf"
    model.write_bytes(build_gguf(llama_kvs(**{"llama.nextn_predict_layers": ("u32", 1)})))
    code, result = run(capsys, module_args(memory_plans=[dict(plan, gguf_path=str(model))]))
    assert code == 0, result["msg"]
    sized = result["memory_plans"][0]
    # One nextn layer of 8 KV heads x 128, f16, 2048 cells; its weights are the model's.
    assert sized["draft_kv_cache_mib"] == 2 * 1 * 8 * 128 * 2048 * 2 // 1048576
    assert sized["draft"] == "MTP head (1 layer)"
    assert sized["draft_mib"] == sized["draft_kv_cache_mib"] + sized["compute_buffer_mib"]


def test_a_draft_trained_for_fewer_tokens_than_a_slot_holds_is_warned_about(capsys, tmp_path):
    """llama.cpp only warns when n_ctx_seq exceeds the draft's trained context (src/llama-context.cpp:327-330)."""
    draft = tmp_path / "draft.gguf"
    draft.write_bytes(build_gguf(llama_kvs(**{"llama.context_length": ("u32", 4096)}) + smollm2_tokenizer_kvs()))
    plan = {"name": "smollm2", "gguf_path": str(SMOLLM2_PREFIX), "context_per_slot": 8192, "slots": 2,
            "draft": {"gguf_path": str(draft)}}
    code, result = run(capsys, module_args(memory_plans=[plan]))
    assert code == 0, result["msg"]
    assert emitted_warnings(result) == [
        "Memory plan smollm2: its draft model draft.gguf was trained for 4096 tokens, and a slot holds up to 8192: "
        "past 4096 its drafts degrade (llama.cpp only warns). Pick a draft trained for longer, or fewer tokens a "
        "slot."]
    code, result = run(capsys, module_args(memory_plans=[dict(plan, context_per_slot=4096)]))
    assert emitted_warnings(result) == []
