"""llama_server_instances -> unit command lines, schedules and memory plans."""
from __future__ import annotations

import json

import pytest
from conftest import RECORDED

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import (
    draft_max,
    local_base_url,
    memory_refusal,
    plan_instances,
    refused_extra_args,
    split_row_warnings,
    staggered_calendar,
    unfetched_models,
)
from sample_llama_server import llama_server_settings, planned

MODELS = {"qwen": {"path": "/srv/models/qwen.gguf", "sha256": "a" * 64},
          "small": {"path": "/srv/models/small.gguf", "sha256": "b" * 64},
          "qwen-folder": {"path": "/srv/models/qwen-folder", "sha256": "", "folder": True}}


def plan(instances, **changes):
    return planned(instances, llama_server_settings(**changes), MODELS)


def test_one_instance_per_gpu_gets_its_own_device_and_a_staggered_restart():
    result = plan([{"name": "a", "model": "qwen", "port": 8081, "gpus": [0]},
                   {"name": "b", "model": "qwen", "port": 8082, "gpus": [1]}])
    assert result["errors"] == []
    first, second = result["instances"]
    assert first["environment"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0"}
    assert second["environment"]["CUDA_VISIBLE_DEVICES"] == "1"
    assert first["restart_calendar"] == "*-*-* 04:00:00"
    assert second["restart_calendar"] == "*-*-* 04:15:00"
    assert first["argv"] == [
        "/opt/llama.cpp/b1-abc/bin/llama-server", "--model", "/srv/models/qwen.gguf", "--alias", "qwen",
        "--host", "127.0.0.1", "--port", "8081", "--ctx-size", "8192", "--parallel", "1",
        "--no-kv-unified", "--batch-size", "2048", "--ubatch-size", "512", "--cache-type-k", "f16", "--cache-type-v", "f16", "--flash-attn", "on", "--cache-ram", "0", "--no-cache-idle-slots", "--fit", "off", "--gpu-layers", "999",
        "--metrics", "--no-webui"]
    assert "--split-mode" not in first["argv"]
    assert first["unit"] == "llama-server-a" and first["health_url"] == "http://127.0.0.1:8081/health"
    assert first["model_sha256"] == "a" * 64


def test_one_instance_split_over_two_gpus():
    result = plan([{"name": "big", "model": "qwen", "port": 8081, "gpus": [0, 1], "tensor_split": [3, 2]}])
    instance = result["instances"][0]
    assert instance["environment"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    argv = instance["argv"]
    assert argv[argv.index("--split-mode") + 1] == "layer"
    assert argv[argv.index("--tensor-split") + 1] == "3,2"
    assert instance["memory_plan"]["gpu_count"] == 2


def test_an_instance_without_gpus_sees_the_serving_gpus_only_beside_a_display_card():
    instance = [{"name": "a", "model": "qwen", "port": 8081}]
    # GPU 0 is a display card (nvidia_serving_gpu_indexes [1, 2]): the instance sees the V100s.
    beside = plan(instance, gpu_count=3, serving_gpus=[1, 2])["instances"][0]
    assert beside["environment"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1,2"}
    assert "--split-mode" not in beside["argv"]  # llama.cpp's own default over what it sees
    # Every GPU serves (or nothing is known): no CUDA_VISIBLE_DEVICES, as before.
    assert plan(instance, gpu_count=2, serving_gpus=[0, 1])["instances"][0]["environment"] == {}
    assert plan(instance)["instances"][0]["environment"] == {}


def test_an_instance_may_name_a_display_card_on_purpose():
    result = plan([{"name": "a", "model": "qwen", "port": 8081, "gpus": [0]}], gpu_count=3, serving_gpus=[1, 2])
    assert result["errors"] == []
    assert result["instances"][0]["environment"]["CUDA_VISIBLE_DEVICES"] == "0"


def test_row_split_is_selectable_with_a_warning():
    planned_row = plan([{"name": "big", "model": "qwen", "port": 8081, "gpus": [0, 1], "split_mode": "row"},
                        {"name": "layer", "model": "qwen", "port": 8082, "gpus": [0, 1]}])
    argv = planned_row["instances"][0]["argv"]
    assert argv[argv.index("--split-mode") + 1] == "row"
    assert split_row_warnings(planned_row) == [
        "llama_server_instances big uses split_mode: row, which llama.cpp's docs/multi-gpu.md (at the pinned commit) "
        "deprecates for its poor performance. Use split_mode: layer, or tensor."]


def test_an_instance_whose_model_file_is_not_verified_on_the_host_is_named():
    instances = [{"name": "a", "model": "qwen", "port": 8081}, {"name": "b", "model": "/srv/other.gguf", "port": 8082}]
    planned_two = plan(instances)
    assert unfetched_models(planned_two, MODELS) == ["a"]  # b names a path, not a models_list entry
    assert unfetched_models(planned_two, {"qwen": dict(MODELS["qwen"], verified=True)}) == []


def test_a_fixed_size_is_judged_by_the_slot_llama_cpp_pads_it_to():
    # 40800 / 2 = 20400 < 20480, but llama.cpp gives each slot pad256(pad256(40800) // 2) = 20480 cells.
    workload = {"prompt_tokens_max": 16384, "answer_tokens_max": 4096}
    fits = plan([{"name": "a", "model": "qwen", "port": 1, "ctx_size": 40800, "parallel": 2}], **workload)
    assert fits["errors"] == []
    auto = plan([{"name": "a", "model": "qwen", "port": 1, "ctx_size": 40800, "parallel": "auto"}], **workload)
    assert auto["instances"][0]["sizing"] == {"ctx_size": 40800, "parallel": 2}
    short = plan([{"name": "a", "model": "qwen", "port": 1, "ctx_size": 40448, "parallel": 2}], **workload)
    assert "leaves each slot 20224 tokens" in short["errors"][0]


def test_the_memory_plan_takes_the_context_per_slot_and_the_larger_cache_type():
    instance = plan([{"name": "a", "model": "qwen", "port": 1, "gpus": [0], "ctx_size": 24577, "parallel": 3,
                      "cache_type_k": "q8_0", "cache_type_v": "q4_0"}])["instances"][0]
    assert instance["memory_plan"] == {
        "name": "llama_server_instances a (qwen)", "gguf_path": "/srv/models/qwen.gguf",
        # llama.cpp pads -c to 256 cells (24832), then each slot's share (8277) to 256 again.
        "context_per_slot": 8448, "slots": 3, "kv_cache_type": "q8_0", "gpus": [0], "gpu_count": 1,
        "tensor_split": None, "split_mode": "layer", "flash_attention": True, "ubatch": 512, "swa_full": False,
        "request": {"tokens": 6144 + 2048, "variable": "llama_server_prompt_tokens_max + llama_server_answer_tokens_max"}}


def test_an_instance_without_gpus_is_planned_over_every_serving_gpu():
    # llama.cpp splits the layers over every GPU it sees.
    (every,) = plan([{"name": "a", "model": "qwen", "port": 1}])["instances"]
    assert (every["memory_plan"]["gpus"], every["memory_plan"]["gpu_count"]) == ([], 2)
    (serving,) = plan([{"name": "a", "model": "qwen", "port": 1}], gpu_count=3, serving_gpus=[1, 2])["instances"]
    assert serving["memory_plan"]["gpu_count"] == 2


def test_a_cpu_build_gets_no_gpu_flags_and_refuses_gpus():
    result = plan([{"name": "a", "model": "qwen", "port": 1}], backend="cpu", gpu_count=0)
    argv = result["instances"][0]["argv"]
    assert "--gpu-layers" not in argv and result["instances"][0]["environment"] == {}
    refused = plan([{"name": "a", "model": "qwen", "port": 1, "gpus": [0]}], backend="cpu", gpu_count=0)
    assert refused["instances"] == []
    assert "llama.cpp here is a cpu build" in refused["errors"][0]


def test_a_key_is_passed_by_file_never_on_the_command_line():
    instance = plan([{"name": "a", "model": "qwen", "port": 1, "api_key": "s3cret"}])["instances"][0]
    assert instance["key_file"] == "/etc/llama-server/a.key"
    assert instance["argv"][-2:] == ["--api-key-file", "/etc/llama-server/a.key"]
    assert "s3cret" not in repr(instance)


def test_listening_beyond_loopback_needs_a_key():
    refused = plan([{"name": "a", "model": "qwen", "port": 1, "host": "0.0.0.0"}])
    assert "listens beyond this machine without an API key" in refused["errors"][0]
    assert "llama_server_api_key" in refused["errors"][0]
    allowed = plan([{"name": "a", "model": "qwen", "port": 1, "host": "0.0.0.0"}], api_key_set=True)
    # The role-wide address is named as the variable the user set.
    role_wide = plan([{"name": "a", "model": "qwen", "port": 1}], host="0.0.0.0")
    assert role_wide["errors"][0].startswith("llama_server_host=0.0.0.0 listens beyond this machine")
    assert allowed["errors"] == []
    assert allowed["instances"][0]["health_url"] == "http://127.0.0.1:1/health"
    assert plan([{"name": "a", "model": "qwen", "port": 1, "host": "127.0.0.2"}])["errors"] == []


@pytest.mark.parametrize(("instance", "expected"), [
    ({"name": "A", "model": "qwen", "port": 1}, "is not an instance name"),
    ({"name": "a-health", "model": "qwen", "port": 1}, "not ending in -health"),
    ({"name": "a", "model": "qwen", "port": 70000}, "is not a TCP port"),
    ({"name": "a", "model": "mistral", "port": 1}, "(known: qwen, small)"),
    ({"name": "a", "model": "qwen-folder", "port": 1}, "is a Hugging Face model folder (for vllm_server_model)"),
    ({"name": "a", "model": "qwen", "port": 1, "gpus": [2]}, "it has 2 (indexes 0-1)"),
    ({"name": "a", "model": "qwen", "port": 1, "gpus": [0, 0]}, "distinct GPU indexes"),
    ({"name": "a", "model": "qwen", "port": 1, "gpus": [0], "split_mode": "layer"}, "fewer than two"),
    ({"name": "a", "model": "qwen", "port": 1, "gpus": [0, 1], "tensor_split": [1]}, "one non-negative share per GPU"),
    ({"name": "a", "model": "qwen", "port": 1, "kv_cache_type": "q3_k"}, "is not a KV cache type"),
    ({"name": "a", "model": "qwen", "port": 1, "cache_type_v": "q8_0", "flash_attention": False}, "needs flash attention"),
    ({"name": "a", "model": "qwen", "port": 1, "extra_args": ["--port", "9"]}, "--port (set port instead)"),
    ({"name": "a", "model": "qwen", "port": 1, "extra_args": ["--api-key=x"]}, "set api_key instead"),
    ({"name": "a", "model": "qwen", "port": 1, "ctx": 4096}, "unknown keys ctx"),
    ({"name": "a", "model": "qwen", "port": 1, "ctx_size": 0}, "ctx_size=0 must be a positive"),
])
def test_bad_instances_are_refused_with_the_key_and_what_to_do(instance, expected):
    result = plan([instance])
    assert result["instances"] == []
    assert any(expected in error for error in result["errors"]), result["errors"]


def test_clashing_names_ports_and_schedules_are_refused():
    result = plan([{"name": "a", "model": "qwen", "port": 1}, {"name": "a", "model": "qwen", "port": 1}])
    assert "2 instances with name a" in " ".join(result["errors"])
    assert "2 instances with port 1" in " ".join(result["errors"])
    same = plan([{"name": "a", "model": "qwen", "port": 1, "restart_schedule": "Sun 03:00"},
                 {"name": "b", "model": "qwen", "port": 2, "restart_schedule": "Sun 03:00"}])
    assert "a and b would restart together" in same["errors"][0]


def test_a_stagger_past_midnight_is_refused():
    result = plan([{"name": "a", "model": "qwen", "port": 1}, {"name": "b", "model": "qwen", "port": 2}],
                  restart_schedule="*-*-* 23:50:00")
    assert "passes midnight" in result["errors"][0]
    assert "llama_server_restart_stagger_minutes" in result["errors"][0]


def test_no_schedule_means_no_restart_timer():
    assert plan([{"name": "a", "model": "qwen", "port": 1}], restart_schedule="")["instances"][0][
        "restart_calendar"] == ""


def test_an_absolute_model_path_is_used_as_it_is():
    instance = plan([{"name": "a", "model": "/data/m.gguf", "port": 1}])["instances"][0]
    assert instance["model_path"] == "/data/m.gguf" and instance["model_sha256"] == ""
    assert instance["argv"][instance["argv"].index("--alias") + 1] == "a"


@pytest.mark.parametrize(("base", "minutes", "expected"), [
    ("*-*-* 04:00:00", 0, "*-*-* 04:00:00"),
    ("*-*-* 04:00:00", 75, "*-*-* 05:15:00"),
    ("Sun *-*-* 04:30", 30, "Sun *-*-* 05:00:00"),
    ("daily", 10, "*-*-* 00:10:00"),
    ("weekly", 0, "Mon *-*-* 00:00:00"),
    ("03:05:07", 1, "03:06:07"),
])
def test_staggered_calendar_shifts_the_time_of_day(base, minutes, expected):
    assert staggered_calendar(base, minutes) == expected


@pytest.mark.parametrize("base", ["hourly", "*-*-* *:00:00", "*-*-* 25:00", "Mon..Fri"])
def test_staggered_calendar_refuses_what_has_no_fixed_time(base):
    with pytest.raises(ValueError):
        staggered_calendar(base, 15)


def test_health_urls():
    assert local_base_url("::", 8080) == "http://[::1]:8080"
    assert local_base_url("10.0.0.5", 8080) == "http://10.0.0.5:8080"
    assert local_base_url("fd00::5", 8080) == "http://[fd00::5]:8080"


def test_refused_extra_args():
    assert refused_extra_args(["-t", "8", "--mlock"]) == []
    assert refused_extra_args(["-c", "4096"]) == ["-c (set ctx_size instead)"]


def test_a_refused_extra_arg_is_named_by_its_flag_not_its_value():
    result = plan([{"name": "a", "model": "qwen", "port": 1, "extra_args": ["--api-key=sk-secret"]}])
    assert "sk-secret" not in " ".join(result["errors"])
    assert "--api-key (set api_key instead)" in result["errors"][0]


# --- slots: ctx_size / parallel "auto", kv_unified, batch sizes ---------------------------------------------


def test_auto_asks_the_host_to_choose_the_slots():
    (instance,) = plan_instances([{"name": "a", "model": "qwen", "port": 1, "gpus": [0]}],
                                 llama_server_settings(ctx_size="auto", parallel="auto"), MODELS)["instances"]
    assert "argv" not in instance
    assert instance["memory_plan"]["choose_slots"] == {
        "slots_min": 1, "slots_max": 16, "context_min": 6144 + 2048, "context_max": 32768,
        "floor_variable": "llama_server_prompt_tokens_max + llama_server_answer_tokens_max"}
    assert instance["memory_plan"]["kv_unified"] is False
    assert "context_per_slot" not in instance["memory_plan"]


def test_auto_takes_the_slots_the_host_chose():
    sized = [{"name": "llama_server_instances a (qwen)", "chosen_slots": 6, "chosen_context_per_slot": 8192,
              "choice": "6 slots x 8192 tokens: ..."}]
    (instance,) = planned([{"name": "a", "model": "qwen", "port": 1}],
                          llama_server_settings(ctx_size="auto", parallel="auto"), MODELS, sized)["instances"]
    argv = instance["argv"]
    assert argv[argv.index("--ctx-size") + 1] == "49152" and argv[argv.index("--parallel") + 1] == "6"
    assert (instance["ctx_size"], instance["parallel"]) == (49152, 6)
    assert instance["slot_choice"] == "6 slots x 8192 tokens: ..."


def test_auto_without_a_sized_plan_is_refused():
    result = planned([{"name": "a", "model": "qwen", "port": 1}],
                     llama_server_settings(ctx_size="auto", parallel="auto"), MODELS, [])
    assert result["instances"] == []
    assert result["errors"] == [
        "llama_server_instances a: its slots were not sized (no memory plan came back): give the instance ctx_size "
        "and parallel as numbers, or run the role again with its model and GPU facts there."]


def test_a_fixed_slot_count_with_auto_context():
    (instance,) = plan_instances([{"name": "a", "model": "qwen", "port": 1, "parallel": 4}],
                                 llama_server_settings(ctx_size="auto", parallel="auto"), MODELS)["instances"]
    assert instance["memory_plan"]["choose_slots"]["slots_min"] == 4
    assert instance["memory_plan"]["choose_slots"]["slots_max"] == 4


@pytest.mark.parametrize(("ctx_size", "slots"), [(65536, 8), (8192, 1), (1_000_000, 16)])
def test_a_fixed_context_with_auto_slots_keeps_the_floor_per_slot(ctx_size, slots):
    (instance,) = plan([{"name": "a", "model": "qwen", "port": 1, "ctx_size": ctx_size}], parallel="auto")[
        "instances"]
    assert (instance["ctx_size"], instance["parallel"]) == (ctx_size, slots)
    assert instance["memory_plan"]["slots"] == slots


def test_a_unified_cache_is_one_pool_of_the_whole_context():
    (instance,) = plan([{"name": "a", "model": "qwen", "port": 1, "ctx_size": 32768, "parallel": 4,
                         "kv_unified": True}])["instances"]
    assert "--kv-unified" in instance["argv"] and "--no-kv-unified" not in instance["argv"]
    assert (instance["memory_plan"]["context_per_slot"], instance["memory_plan"]["slots"]) == (32768, 1)
    assert instance["memory_plan"]["sequences_per_stream"] == 4


def test_the_micro_batch_is_counted_up_to_the_batch():
    (instance,) = plan([{"name": "a", "model": "qwen", "port": 1, "batch_size": 4096, "ubatch_size": 1024}])[
        "instances"]
    argv = instance["argv"]
    assert argv[argv.index("--batch-size") + 1] == "4096" and argv[argv.index("--ubatch-size") + 1] == "1024"
    assert instance["memory_plan"]["ubatch"] == 1024
    # llama.cpp runs micro-batches of at most the batch (src/llama-context.cpp).
    (small,) = plan([{"name": "a", "model": "qwen", "port": 1, "batch_size": 256, "ubatch_size": 1024}])["instances"]
    assert small["memory_plan"]["ubatch"] == 256


@pytest.mark.parametrize(("instance", "expected"), [
    ({"parallel": "many"}, "parallel='many' must be a positive whole number, or auto"),
    ({"ubatch_size": 0}, "ubatch_size=0 must be a positive whole number"),
    ({"kv_unified": "yes"}, "kv_unified='yes' must be true or false"),
    ({"extra_args": ["-kvu"]}, "-kvu (set kv_unified instead)"),
    ({"extra_args": ["-ub", "1024"]}, "-ub (set ubatch_size instead)"),
])
def test_bad_slot_settings_are_refused(instance, expected):
    result = plan([dict({"name": "a", "model": "qwen", "port": 1}, **instance)])
    assert any(expected in error for error in result["errors"]), result["errors"]


def test_split_mode_none_is_planned_on_the_first_gpu_alone():
    (instance,) = plan([{"name": "a", "model": "qwen", "port": 1, "gpus": [1, 0], "split_mode": "none"}])[
        "instances"]
    assert (instance["memory_plan"]["gpus"], instance["memory_plan"]["gpu_count"]) == ([1], 1)


def test_a_tensor_split_reaches_the_memory_plan():
    (instance,) = plan([{"name": "a", "model": "qwen", "port": 1, "gpus": [0, 1], "tensor_split": [3, 1]}])[
        "instances"]
    assert instance["memory_plan"]["tensor_split"] == [3, 1] and instance["memory_plan"]["gpu_count"] == 2


@pytest.mark.parametrize(("changes", "expected"), [
    ({"prompt_tokens_max": 32768}, "llama_server_prompt_tokens_max + llama_server_answer_tokens_max = 34816 "
                                   "tokens is more than llama_server_slot_context_max=32768: raise the maximum, or "
                                   "lower the longest prompt or answer."),
    ({"answer_tokens_max": 0}, "llama_server_answer_tokens_max=0 must be a positive whole number."),
    ({"slots_max": 0}, "llama_server_slots_max=0 must be a positive whole number."),
])
def test_bad_slot_bounds_are_refused_by_their_variable(changes, expected):
    assert plan([{"name": "a", "model": "qwen", "port": 1}], **changes)["errors"] == [expected]


def test_a_bad_role_wide_value_is_named_by_its_variable():
    errors = plan([{"name": "a", "model": "qwen", "port": 1}], kv_unified=None, gpu_layers=-1)["errors"]
    assert "llama_server_kv_unified=None must be true or false." in errors
    assert any(error.startswith("llama_server_gpu_layers=-1 must be a whole number of layers") for error in errors)


def test_a_split_always_names_its_shares():
    # Without -ts llama.cpp splits by each GPU's free memory at start, which the plan cannot know.
    (named,) = plan([{"name": "a", "model": "qwen", "port": 1, "gpus": [0, 1]}])["instances"]
    assert named["argv"][named["argv"].index("--tensor-split") + 1] == "1,1"
    (every,) = plan([{"name": "a", "model": "qwen", "port": 1}])["instances"]
    assert every["argv"][every["argv"].index("--tensor-split") + 1] == "1,1"
    (alone,) = plan([{"name": "a", "model": "qwen", "port": 1, "gpus": [0, 1], "split_mode": "none"}])["instances"]
    assert "--tensor-split" not in alone["argv"]
    assert "-mg (set gpus and split_mode instead)" in plan(
        [{"name": "a", "model": "qwen", "port": 1, "extra_args": ["-mg", "1"]}])["errors"][0]


TENSOR = {"name": "big", "model": "qwen", "port": 8081, "gpus": [0, 1], "split_mode": "tensor"}


def test_tensor_split_mode_passes_its_mode_and_equal_shares_to_llama_cpp_and_the_memory_plan():
    result = plan([TENSOR])
    assert result["errors"] == []
    instance = result["instances"][0]
    argv = instance["argv"]
    assert argv[argv.index("--split-mode") + 1] == "tensor" and argv[argv.index("--tensor-split") + 1] == "1,1"
    assert argv[argv.index("--fit") + 1] == "off" and argv[argv.index("--flash-attn") + 1] == "on"
    assert instance["memory_plan"]["split_mode"] == "tensor"


@pytest.mark.parametrize(("changes", "models", "expected"), [
    ({"flash_attention": False}, MODELS,
     "llama_server_instances[0] (big).split_mode=tensor needs flash attention, which is off"),
    ({"cache_type_k": "q8_0"}, MODELS, "with cache_type_k=q8_0 and cache_type_v=f16: with two cache types"),
    ({"cache_type_k": "bf16"}, MODELS, "with cache_type_k=bf16 and cache_type_v=f16: with two cache types"),
    ({"kv_cache_type": "iq4_nl"}, MODELS, "split_mode=tensor cannot use the KV cache type iq4_nl"),
    ({}, {"qwen": dict(MODELS["qwen"], gguf={"architecture": "deepseek2"})},
     "split_mode=tensor is not implemented for the deepseek2 architecture of model qwen"),
])
def test_tensor_split_mode_is_refused_where_llama_cpp_stops_or_answers_otherwise(changes, models, expected):
    result = planned([dict(TENSOR, **changes)], llama_server_settings(), models)
    assert result["instances"] == [] and any(expected in error for error in result["errors"]), result["errors"]


@pytest.mark.parametrize("kv_cache_type", ["f16", "bf16", "f32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0"])
def test_tensor_split_mode_takes_one_kv_cache_type_for_k_and_v(kv_cache_type):
    # Stale docs/multi-gpu.md at the pinned commit says a quantized cache stops it; its source does not, and
    # on two H200s f16, q8_0, q5_1 and q4_0 gave the tokens of split_mode layer (docs/BENCHMARKS.md, "Two
    # GPUs"). bf16, f32, q5_0 and q4_1 were not tried: accepted by extension.
    result = plan([dict(TENSOR, kv_cache_type=kv_cache_type)])
    assert result["errors"] == []
    argv = result["instances"][0]["argv"]
    assert argv[argv.index("--cache-type-k") + 1] == argv[argv.index("--cache-type-v") + 1] == kv_cache_type


def recorded_split_tokens():
    """tests/gpu/split_tokens.py's rows from the two-GPU run (tests/fixtures/recorded/SOURCES.md, 12)."""
    return json.loads((RECORDED / "llama-server_split-tokens_h200_x2_0c1e570.json").read_text())


@pytest.mark.parametrize("row", [row for row in recorded_split_tokens() if row["flash_attn"] == "on"
                                 and not row["environment"]], ids=lambda row: "%(cache_type_k)s-%(cache_type_v)s" % row)
def test_tensor_split_mode_is_refused_exactly_where_its_tokens_parted_from_layer_mode(row):
    # The short prompt's sums go over the GPUs in FP32; the long one's in BF16, which parts from layer mode for
    # most types (tests/gpu/split_tokens.py), so only the short one tells settings apart.
    errors = plan([dict(TENSOR, cache_type_k=row["cache_type_k"], cache_type_v=row["cache_type_v"])])["errors"]
    assert bool(errors) == (row["tensor"]["short"] != row["layer"]["short"]), errors


def test_tensor_split_mode_without_flash_attention_stopped_llama_server_as_refused():
    (row,) = [row for row in recorded_split_tokens() if row["flash_attn"] == "off"]
    assert row["tensor"] == {"error": "did not start (exit 1)"} and "short" in row["layer"]
    assert "llama_init_from_model: SPLIT_MODE_TENSOR requires flash_attn to be enabled" in row["tensor_log"]
    assert plan([dict(TENSOR, flash_attention=False)])["errors"]


def test_an_architecture_llama_cpp_splits_by_tensor_is_accepted():
    models = {"qwen": dict(MODELS["qwen"], gguf={"architecture": "qwen2"})}
    assert planned([TENSOR], llama_server_settings(), models)["errors"] == []


def test_an_instance_environment_reaches_its_unit_and_cannot_override_the_role():
    result = plan([{"name": "a", "model": "qwen", "port": 8081, "gpus": [0],
                    "environment": {"GGML_CUDA_DISABLE_GRAPHS": 1}}])
    assert result["instances"][0]["environment"] == {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0", "GGML_CUDA_DISABLE_GRAPHS": "1"}
    for environment, expected in (({"CUDA_VISIBLE_DEVICES": "1"}, "sets CUDA_VISIBLE_DEVICES, which the role sets"),
                                  ({"1BAD": "x"}, "'1BAD', which is not a variable name"),
                                  ({"X": True}, "environment.X=True must be a string or number"),
                                  ({"LLAMA_ARG_MAIN_GPU": "1"}, "sets LLAMA_ARG_MAIN_GPU, which llama-server reads"),
                                  ({"LLAMA_API_KEY": "k"}, "sets LLAMA_API_KEY, which llama-server reads"),
                                  (["X=1"], "must be a mapping")):
        errors = plan([{"name": "a", "model": "qwen", "port": 8081, "environment": environment}])["errors"]
        assert any(expected in error for error in errors), errors


def test_an_absolute_split_part_1_restarts_the_server_when_any_part_changes():
    instance = plan([{"name": "a", "model": "/data/Q-00001-of-00002.gguf", "port": 8081}])["instances"][0]
    assert {"/data/Q-00001-of-00002.gguf", "/data/Q-00002-of-00002.gguf"} <= set(instance["inputs"])


# --- the workload: every slot holds one request (llama_server_prompt_tokens_max + _answer_tokens_max) -----------

IDE = {"prompt_tokens_max": 16384, "answer_tokens_max": 4096}


@pytest.mark.parametrize(("instance", "settings", "expected"), [
    # The example inventory's commented instance before issue 35: 2 slots of 8192.
    ({"ctx_size": 16384}, dict(IDE, parallel=2),
     "llama_server_instances[0] (a).ctx_size=16384 with llama_server_parallel=2 leaves each slot 8192 tokens, less "
     "than one request needs: llama_server_prompt_tokens_max + llama_server_answer_tokens_max = 16384 + 4096 = "
     "20480 (a longer prompt gets HTTP 400 from llama-server). Set ctx_size to auto, or to at least 40960, or "
     "fewer parallel slots; or lower llama_server_prompt_tokens_max and llama_server_answer_tokens_max to what "
     "the clients send."),
    # parallel auto still gives one slot: of 16384 tokens, short of 20480.
    ({"ctx_size": 16384}, dict(IDE, parallel="auto"),
     "ctx_size=16384 with llama_server_parallel=auto (1 slot) leaves each slot 16384 tokens"),
    # The role-wide ctx_size is named as the role variable.
    ({"parallel": 4}, dict(IDE, ctx_size=65536), "llama_server_ctx_size=65536 with llama_server_instances[0] "
                                                 "(a).parallel=4 leaves each slot 16384 tokens"),
    # A unified pool lets one request take all of it: only the whole pool must hold one.
    ({"ctx_size": 16384, "parallel": 4, "kv_unified": True}, IDE, "at least 20480, or fewer"),
])
def test_a_fixed_size_that_leaves_a_slot_less_than_one_request_is_refused(instance, settings, expected):
    result = plan([dict({"name": "a", "model": "qwen", "port": 1}, **instance)], **settings)
    assert result["instances"] == []
    assert len(result["errors"]) == 1 and expected in result["errors"][0], result["errors"]


@pytest.mark.parametrize("instance", [
    {"ctx_size": 20480},
    {"ctx_size": 40960, "parallel": 2},
    {"ctx_size": 20480, "parallel": 4, "kv_unified": True},
    {"ctx_size": 100000},  # parallel auto: 4 slots of 25000
])
def test_a_fixed_size_that_holds_one_request_a_slot_is_kept(instance):
    result = plan([dict({"name": "a", "model": "qwen", "port": 1}, **instance)], parallel="auto", **IDE)
    assert result["errors"] == []
    assert result["instances"][0]["ctx_size"] == instance["ctx_size"]



@pytest.mark.parametrize("key", ["two\nkeys", "   ", "tab\tin"])
def test_an_instance_key_that_llama_server_would_misread_is_refused(key):
    errors = plan([{"name": "a", "model": "qwen", "port": 1, "api_key": key}])["errors"]
    assert errors == ["llama_server_instances[0] (a).api_key is blank or holds a control character (a newline from "
                      "a vault file?): llama-server would read it as other keys. Strip it."]


def test_an_instance_restart_schedule_is_checked_where_it_names_a_time():
    errors = plan([{"name": "a", "model": "qwen", "port": 1, "restart_schedule": "*-*-* 25:00"}])["errors"]
    assert errors == ["llama_server_instances[0] (a).restart_schedule='*-*-* 25:00' has no such time of day: systemd "
                      "would refuse the timer. Give an OnCalendar expression such as '*-*-* 04:00:00', or \"\" for "
                      "no scheduled restart."]
    for fine in ("hourly", "Mon..Fri *-*-* 03:30", ""):
        assert plan([{"name": "a", "model": "qwen", "port": 1, "restart_schedule": fine}])["errors"] == []


def test_speculative_decoding_is_off_unless_asked_and_an_instance_may_choose_its_own_type():
    """--spec-type and the type names of common/arg.cpp:4249 and common/speculative.cpp:33-45 at 0c1e570."""
    off, ide = plan([{"name": "chat", "model": "qwen", "port": 8081, "gpus": [0]},
                     {"name": "ide", "model": "qwen", "port": 8082, "gpus": [1], "speculative": "ngram-mod"}]
                    )["instances"]
    assert "--spec-type" not in off["argv"]
    assert ide["argv"][ide["argv"].index("--spec-type") + 1] == "ngram-mod"
    # The role-wide setting, and an instance turning it off.
    both = plan([{"name": "a", "model": "qwen", "port": 8081, "gpus": [0]},
                 {"name": "b", "model": "qwen", "port": 8082, "gpus": [1], "speculative": "off"}],
                speculative="ngram-map-k4v")["instances"]
    assert both[0]["argv"][both[0]["argv"].index("--spec-type") + 1] == "ngram-map-k4v"
    assert "--spec-type" not in both[1]["argv"]
    # benchmark.yml's plain command line, to which it adds each type it compares.
    assert ide["endpoint"]["engine"]["server_argv"] == [arg for arg in ide["argv"] if arg not in ("--spec-type",
                                                                                                   "ngram-mod")]
    # The n-gram types add nothing the GPU memory plan counts.
    assert ide["memory_plan"] == dict(off["memory_plan"], name=ide["memory_plan"]["name"], gpus=[1])


@pytest.mark.parametrize("instance, settings, expected", [
    ({"speculative": "ngram"}, {}, "llama_server_instances[0] (a).speculative='ngram' is not a speculative decoding "
     "type the role plans: use off, one of ngram-mod, ngram-simple, ngram-map-k, ngram-map-k4v, draft-mtp, or "
     "{draft: <models_list name>}."),
    ({}, {"speculative": "draft-simple"}, "llama_server_speculative='draft-simple' is not a speculative decoding "
     "type the role plans: use off, one of ngram-mod, ngram-simple, ngram-map-k, ngram-map-k4v, draft-mtp, or "
     "{draft: <models_list name>} (a draft model is given as {draft: <models_list name>}, which the memory plan "
     "then counts)."),
    ({"speculative": "draft-eagle3"}, {}, "llama_server_instances[0] (a).speculative='draft-eagle3' is not a "
     "speculative decoding type the role plans: use off, one of ngram-mod, ngram-simple, ngram-map-k, "
     "ngram-map-k4v, draft-mtp, or {draft: <models_list name>} (its converted draft heads are not planned)."),
    ({"speculative": {"draft": "nowhere"}}, {}, "llama_server_instances[0] (a).speculative.draft='nowhere' is "
     "neither a models_list name of a .gguf file (known: qwen, small) nor an absolute path to one."),
    ({"speculative": {"draft": "small", "n_max": 8}}, {}, "llama_server_instances[0] (a).speculative={'draft': "
     "'small', 'n_max': 8} is not a draft model setting: give {draft: <models_list name>} and nothing else (more "
     "drafted tokens: --spec-draft-n-max in extra_args)."),
    ({"speculative": {"draft": "small"}, "extra_args": ["-md", "/srv/other.gguf"]}, {},
     "llama_server_instances[0] (a).speculative={'draft': 'small'} and extra arguments -md both choose how "
     "llama-server speculates: keep one (the role sets the draft context's flags from it and from the KV cache types)."),
    ({"speculative": {"draft": "small"}, "extra_args": ["-ctkd", "q4_0", "-devd", "CUDA1"]}, {},
     "llama_server_instances[0] (a).speculative={'draft': 'small'} and extra arguments -ctkd, -devd both choose how "
     "llama-server speculates: keep one (the role sets the draft context's flags from it and from the KV cache "
     "types)."),
    ({"speculative": "draft-mtp", "extra_args": ["--spec-draft-model=/srv/other.gguf"]}, {},
     "llama_server_instances[0] (a).speculative=draft-mtp and extra arguments --spec-draft-model both choose how "
     "llama-server speculates: keep one (the role sets the draft context's flags from it and from the KV cache types)."),
    ({"speculative": False}, {}, "llama_server_instances[0] (a).speculative=False is not a speculative decoding "
     "type the role plans: use off, one of ngram-mod, ngram-simple, ngram-map-k, ngram-map-k4v, draft-mtp, or "
     '{draft: <models_list name>} (YAML reads an unquoted off as false: write "off").'),
    ({"speculative": "ngram-mod", "extra_args": ["--spec-type=ngram-simple"]}, {},
     "llama_server_instances[0] (a).speculative=ngram-mod and extra arguments --spec-type both choose how "
     "llama-server speculates: keep one (the role sets the draft context's flags from it and from the KV cache types)."),
    ({}, {"speculative": "ngram-map-k", "extra_args": ["--spec-default"]},
     "llama_server_speculative=ngram-map-k and extra arguments --spec-default both choose how llama-server "
     "speculates: keep one (the role sets the draft context's flags from it and from the KV cache types)."),
    ({"speculative": "ngram-cache"}, {}, "llama_server_instances[0] (a).speculative='ngram-cache' is not a "
     "speculative decoding type the role plans: use off, one of ngram-mod, ngram-simple, ngram-map-k, "
     "ngram-map-k4v, draft-mtp, or {draft: <models_list name>} (its per-slot cache is not reset between requests at the pinned commit, so it drafts from "
     "earlier requests (common/speculative.cpp:2091-2116))."),
    ({"speculative": "ngram-mod,ngram-simple"}, {}, "llama_server_instances[0] (a).speculative='ngram-mod,"
     "ngram-simple' is not a speculative decoding type the role plans: use off, one of ngram-mod, ngram-simple, "
     "ngram-map-k, ngram-map-k4v, draft-mtp, or {draft: <models_list name>} (one type: llama-server's comma-separated list is not planned)."),
])
def test_a_speculative_type_the_role_does_not_plan_or_chosen_twice_is_refused(instance, settings, expected):
    result = plan([dict({"name": "a", "model": "qwen", "port": 8081}, **instance)], **settings)
    assert result["errors"] == [expected]


def test_a_draft_model_is_planned_from_models_list_and_mtp_from_the_model():
    """--spec-draft-model, --spec-draft-ngl and --spec-type draft-simple/draft-mtp at common/arg.cpp:4222-4249
    (0c1e570); -md alone does not draft (common/arg.cpp:566-572)."""
    drafted, mtp = plan([
        {"name": "a", "model": "qwen", "port": 8081, "gpus": [0], "speculative": {"draft": "small"}},
        {"name": "b", "model": "qwen", "port": 8082, "gpus": [1], "speculative": "draft-mtp",
         "extra_args": ["--spec-draft-n-max=5"]}], kv_cache_type="q8_0")["instances"]
    start = drafted["argv"].index("--spec-type")
    # The draft's K and V as the model's: q8_0 here.
    assert drafted["argv"][start:start + 10] == [
        "--spec-type", "draft-simple", "--spec-draft-model", "/srv/models/small.gguf", "--spec-draft-type-k", "q8_0",
        "--spec-draft-type-v", "q8_0", "--spec-draft-ngl", "all"]
    assert drafted["memory_plan"]["draft"] == {"gguf_path": "/srv/models/small.gguf", "kv_cache_type": "q8_0"}
    # A changed draft file restarts the server, as a changed model does.
    assert "/srv/models/small.gguf" in drafted["inputs"]
    assert mtp["argv"][mtp["argv"].index("--spec-type") + 1] == "draft-mtp"
    # MTP's memory depends on the tokens it drafts at most (--spec-draft-n-max, 3 unless given).
    assert mtp["memory_plan"]["draft"] == {"mtp": True, "kv_cache_type": "q8_0", "draft_max": 5}
    # benchmark.yml's plain command line has neither; its `planned` comparison adds the instance's own flags.
    engine = drafted["endpoint"]["engine"]
    assert not {"--spec-type", "--spec-draft-model"} & set(engine["server_argv"])
    assert engine["speculative_argv"] == drafted["argv"][start:start + 10]
    assert engine["speculative"] == "draft-simple small"
    assert (mtp["endpoint"]["engine"]["speculative_argv"], mtp["endpoint"]["engine"]["speculative"]) == (
        ["--spec-type", "draft-mtp", "--spec-draft-type-k", "q8_0", "--spec-draft-type-v", "q8_0"], "draft-mtp")
    assert draft_max(["--spec-draft-n-max", "8"]) == 8 and draft_max([]) == 3
    # On the CPU nothing is offloaded, the draft's layers neither.
    cpu = plan([{"name": "a", "model": "qwen", "port": 8081, "speculative": {"draft": "/srv/d.gguf"}}],
               backend="cpu")["instances"][0]
    assert "--spec-draft-ngl" not in cpu["argv"] and "/srv/d.gguf" in cpu["argv"]
    # A draft model not fetched as its stamp says keeps the server from starting on it, as the model's does.
    assert unfetched_models(plan([{"name": "a", "model": "qwen", "port": 1, "speculative": {"draft": "small"}}]),
                            {"qwen": {"verified": True}, "small": {"verified": False}}) == ["a"]


def test_a_draft_model_through_extra_args_is_left_to_the_owner():
    result = plan([{"name": "a", "model": "qwen", "port": 8081,
                    "extra_args": ["-md", "/srv/models/draft.gguf", "--spec-type", "draft-simple"]}])
    assert result["errors"] == [] and result["instances"][0]["argv"][-2:] == ["--spec-type", "draft-simple"]
    # benchmark.yml then has no plain command line to compare the types with.
    assert result["instances"][0]["endpoint"]["engine"]["server_argv_speculates"] is True
    assert plan([{"name": "a", "model": "qwen", "port": 8081, "speculative": "ngram-mod"}])["instances"][0][
        "endpoint"]["engine"]["server_argv_speculates"] is False


def test_a_memory_refusal_names_the_instances_own_settings():
    """gpu_memory_plan's remedies (memory/plan.py) name context_per_slot, slots and gpu_count."""
    instance = plan([{"name": "a", "model": "qwen", "port": 1, "ctx_size": 65000, "parallel": 2}])["instances"][0]
    assert instance["memory_plan"]["context_per_slot"] == 32512  # 65000 padded to 65024 cells, halved
    message = memory_refusal(
        "memory_plans=llama_server_instances a (qwen) does not fit: needs 36735 MiB per GPU (...). Lower "
        "context_per_slot to 24832 (from 32512); or lower slots to 1 (from 2); or set kv_cache_type=q8_0 (KV cache "
        "16384 -> 8704 MiB per GPU); or add GPUs: gpu_count=2 (each then needs 19629 MiB)", instance)
    # Without a unified cache the cells are ctx_size whatever parallel is: one slot fewer frees memory only with
    # ctx_size lowered too.
    assert message == (
        "llama_server_instances a (qwen) does not fit: needs 36735 MiB per GPU (...). Lower its ctx_size to 49664 "
        "(24832 tokens a slot, from 65000); or lower its parallel to 1 and its ctx_size to 32512 (from 2 and 65000); "
        "or set its kv_cache_type=q8_0 (KV cache 16384 -> 8704 MiB per GPU); or give it 2 GPUs (its gpus) (each "
        "then needs 19629 MiB)")
    unified = plan([{"name": "u", "model": "qwen", "port": 1, "ctx_size": 65536, "parallel": 2,
                     "kv_unified": True}])["instances"][0]
    assert "Lower its ctx_size to 24832 (from 65536)" in memory_refusal(
        "Lower context_per_slot to 24832 (from 65536)", unified)
