"""vllm_server_plan: the vLLM 0.5.4 command line, environment and refusals."""
from __future__ import annotations

import json
import sys

import pytest
from conftest import PROJECT_ROOT
from sample_gpus import v100_pcie_32gb

from ansible_collections.v100.llm.plugins.module_utils.memory.plan import shape_from_hf_config, vllm_derived_max_len
from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import (
    effective_dtype,
    memory_verdict,
    plan_max_model_len,
    plan_memory,
    plan_on_model,
    plan_server,
    refused_extra_args,
    port_clash_errors,
    shared_gpu_errors,
    weights_bytes,
)

TWO_V100 = [v100_pcie_32gb(0, driver=True), v100_pcie_32gb(1, driver=True)]


def settings(**changes):
    base = dict(python="/opt/vllm/0.5.4-abcdef0123/bin/python", model="Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4",
                served_model_name="", host="127.0.0.1", port=8000, gpus=[0, 1], gpu_count=2, gpu_facts=TWO_V100,
                dtype="half", quantization="gptq", max_model_len=8192, gpu_memory_utilization=0.9,
                enforce_eager=True, extra_args=[], api_key_set=False, state_dir="/var/lib/vllm-server",
                hf_endpoint="", hf_offline=False)
    base.update(changes)
    return base


def test_two_v100s_get_the_volta_command_line():
    plan = plan_server(settings())
    assert plan["errors"] == []
    assert plan["argv"] == [
        "/opt/vllm/0.5.4-abcdef0123/bin/python", "-m", "vllm.entrypoints.openai.api_server",
        "--model", "Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4", "--served-model-name", "Qwen2.5-14B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4",
        "--host", "127.0.0.1", "--port", "8000", "--dtype", "half", "--tensor-parallel-size", "2",
        "--gpu-memory-utilization", "0.9", "--max-model-len", "8192", "--download-dir", "/var/lib/vllm-server/hf/hub",
        "--quantization", "gptq", "--enforce-eager", "--disable-log-requests", "--disable-frontend-multiprocessing"]
    assert plan["environment"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert plan["environment"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert plan["environment"]["VLLM_NO_USAGE_STATS"] == "1"
    assert "HF_HUB_OFFLINE" not in plan["environment"]
    # Still downloading: no IP allow-list.
    assert plan["ip_allow"] == []
    assert plan["base_url"] == "http://127.0.0.1:8000"


def test_auto_dtype_becomes_half_below_compute_capability_8():
    assert effective_dtype("auto", TWO_V100) == "half"
    assert effective_dtype("auto", [dict(compute_capability="8.0")]) == "auto"
    assert effective_dtype("auto", []) == "auto"
    assert plan_server(settings(dtype="auto"))["dtype"] == "half"


def test_bfloat16_on_volta_is_refused():
    errors = plan_server(settings(dtype="bfloat16"))["errors"]
    assert errors == ["vllm_dtype=bfloat16 cannot run below compute capability 8.0 (Volta): use half"]


def test_a_local_folder_or_a_fetched_repository_runs_offline():
    local = plan_server(settings(model="/srv/models/qwen2.5-14b-gptq"))
    assert local["environment"]["HF_HUB_OFFLINE"] == "1" and local["offline"]
    fetched = plan_server(settings(hf_offline=True, hf_endpoint="https://hf-mirror.com"))
    assert fetched["environment"]["HF_HUB_OFFLINE"] == "1" and fetched["ip_allow"] == ["localhost"]
    assert fetched["environment"]["HF_ENDPOINT"] == "https://hf-mirror.com"


def test_no_quantization_and_cuda_graphs_when_asked():
    argv = plan_server(settings(quantization="", enforce_eager=False, extra_args=["--max-num-seqs", "16"]))["argv"]
    assert "--quantization" not in argv and "--enforce-eager" not in argv
    assert argv[-2:] == ["--max-num-seqs", "16"]


@pytest.mark.parametrize("changes, message", [
    (dict(host="0.0.0.0"), "vllm_server_host=0.0.0.0 exposes the API beyond this host without a key"),
    (dict(model="qwen"), "vllm_server_model=qwen is neither an absolute path"),
    (dict(model="qwen", model_folders=["smol-folder"]), "models_list model folder (an hf_repo entry without hf_file; "
                                                         "those here: smol-folder)"),
    (dict(model=""), 'vllm_server_model="" is neither'),
    (dict(port=70000), "vllm_server_port=70000 must be 1-65535"),
    (dict(gpus=[]), "vllm_server_gpus=[] must be a list of GPU indexes"),
    (dict(gpus=[0, 0]), "vllm_server_gpus=[0, 0] names a GPU twice"),
    (dict(gpus=[2]), "vllm_server_gpus=[2]: this host has 2 GPU(s), indexes 0-1"),
    (dict(gpu_memory_utilization=1.0), "vllm_server_gpu_memory_utilization=1.0 must be between 0.1 and 0.98"),
    (dict(max_model_len=0), "vllm_server_max_model_len=0 must be auto (the longest that fits) or a whole number"),
    (dict(extra_args=["--api-key=x"]), "--api-key (set vllm_server_api_key instead)"),
    (dict(extra_args=["-tp", "4"]), "-tp (set vllm_server_gpus instead)"),
    # vLLM reads _ as - and argparse takes unambiguous prefixes.
    (dict(extra_args=["--api_key", "k"]), "--api_key (set vllm_server_api_key instead)"),
    (dict(extra_args=["--api-ke=k"]), "--api-ke (set vllm_server_api_key instead)"),
    (dict(extra_args=["--tensor_parallel_size", "1"]), "--tensor_parallel_size (set vllm_server_gpus instead)"),
    (dict(extra_args=["--max-model", "99999"]), "--max-model (set vllm_server_max_model_len instead)"),
])
def test_refusals_name_the_variable(changes, message):
    errors = plan_server(settings(**changes))["errors"]
    assert any(message in error for error in errors), errors


def test_an_exposed_server_with_a_key_is_fine():
    plan = plan_server(settings(host="0.0.0.0", api_key_set=True))
    assert plan["errors"] == [] and plan["base_url"] == "http://127.0.0.1:8000"


def test_an_exposed_offline_server_allows_loopback_and_its_client_networks():
    exposed = dict(host="0.0.0.0", api_key_set=True, hf_offline=True)
    assert plan_server(settings(**exposed, allowed_networks=["192.168.1.0/24"]))["ip_allow"] == [
        "localhost", "192.168.1.0/24"]
    # No networks listed: no allow-list (it would lock the clients out).
    assert plan_server(settings(**exposed))["ip_allow"] == []


def test_refused_extra_args_keep_other_flags():
    assert refused_extra_args(["--max-num-seqs", "8", "--swap-space", "4", "--max_num_batched_tokens", "4096"]) == []
    assert refused_extra_args(["--dtype=float16"]) == ["--dtype (set vllm_dtype instead)"]


# Qwen2.5-14B-Instruct's config.json fields (bf16 checkpoint, 29.5 GB of safetensors).
QWEN25_14B = {"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 48, "num_attention_heads": 40,
              "num_key_value_heads": 8, "hidden_size": 5120, "intermediate_size": 13824, "vocab_size": 152064,
              "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}


def test_fp16_14b_fits_one_v100_only_below_1300_tokens_and_the_verdict_says_so():
    shape = vars(shape_from_hf_config(QWEN25_14B))
    plan = plan_memory(shape, 29_540_000_000, 8192, 1, 32768, 0.9)
    assert not plan["fits"]
    assert plan["weights_mib"] == 28172 and plan["kv_cache_mib"] == 1536 and plan["budget_mib"] == 29491
    # Activations: 8192 x (2 x 13824 + 4 x 5120) x 2 B = 752 MiB, sampler 6 x 256 x 152064 x 4 B = 891 MiB.
    assert plan["activations_mib"] == 1643
    # Below 2048 tokens the profile batch stays at 2048 (1079 MiB); 1280 tokens of KV (240 MiB) fill the rest.
    assert plan["fitting_max_model_len"] == 1280
    verdict = memory_verdict(plan)
    assert verdict.startswith("does not fit: weights 28172 + activations 1643 + KV cache 1536 "
                              "(f16, 8192 tokens) = 31351 MiB of 29491 MiB (0.9 x 32768) per GPU, 1 GPU(s)")
    assert "lower vllm_server_max_model_len to 1280, give it more GPUs (vllm_server_gpus)" in verdict
    assert plan_memory(vars(shape_from_hf_config(QWEN25_14B)), 40_000_000_000, 8192, 1, 32768, 0.9)[
        "fitting_max_model_len"] == 0


def test_on_two_v100s_it_fits_and_a_too_long_context_gets_a_fitting_length():
    shape = vars(shape_from_hf_config(QWEN25_14B))
    two = plan_memory(shape, 29_540_000_000, 8192, 2, 32768, 0.9)
    assert two["fits"] and two["weights_mib"] == 14086 and two["kv_cache_mib"] == 768
    assert memory_verdict(two).startswith("fits: weights 14086")
    long = plan_memory(shape, 29_540_000_000, 400_000, 2, 32768, 0.9)
    assert not long["fits"]
    assert 8192 < long["fitting_max_model_len"] < 400_000 and long["fitting_max_model_len"] % 16 == 0
    assert plan_memory(shape, 29_540_000_000, long["fitting_max_model_len"], 2, 32768, 0.9)["fits"]
    assert "lower vllm_server_max_model_len to %d" % long["fitting_max_model_len"] in memory_verdict(long)


def test_max_model_len_auto_takes_the_models_maximum_or_the_longest_that_fits_down_to_a_floor():
    shape = vars(shape_from_hf_config(QWEN25_14B))
    # GPTQ-Int4 14B (~9.9 GB) on one V100: the model's whole 32768 tokens fit, with 512 MiB kept spare.
    gptq = plan_max_model_len(shape, 9_900_000_000, "auto", 1, 32768, 0.9)
    assert gptq["fits"] and gptq["chosen"] == "model" and gptq["max_model_len"] == 32768
    assert gptq["budget_mib"] == 29491 - 512 and "(0.9 x 32768 - 512 kept spare)" in memory_verdict(gptq)
    assert memory_verdict(gptq).endswith("; max_model_len auto: the model's own maximum")
    # fp16 14B on two V100s at 0.6 of their memory: 32768 do not fit; the longest that does, in steps of 256.
    two = plan_max_model_len(shape, 29_540_000_000, "auto", 2, 32768, 0.6)
    assert two["chosen"] == "fitted" and two["fits"] and 8192 < two["max_model_len"] < 32768
    assert two["max_model_len"] % 256 == 0
    exact = plan_memory(shape, 29_540_000_000, 32768, 2, 32768, 0.6)["fitting_max_model_len"]
    assert exact - 256 - 512 / 0.09375 < two["max_model_len"] < exact
    assert "the longest that fits (the model's own maximum is 32768)" in memory_verdict(two)
    # fp16 14B on one: 1280 tokens would fit; auto settles for no less than 4096, so it refuses, saying so.
    one = plan_max_model_len(shape, 29_540_000_000, "auto", 1, 32768, 0.9)
    assert one["chosen"] == "floor" and not one["fits"] and one["max_model_len"] == 4096
    assert "auto settles for no less than 4096 tokens. To fit: lower vllm_server_max_model_len to" in \
        memory_verdict(one)
    # A number is planned as given, without the spare.
    assert plan_max_model_len(shape, 29_540_000_000, 8192, 2, 32768, 0.9)["chosen"] == "set"


def test_a_number_beyond_the_models_maximum_is_refused_as_vllm_does_for_folders_and_repositories():
    assert plan_server(settings(max_model_len=40000, model_max_len=32768))["errors"] == [
        "vllm_server_max_model_len=40000 is longer than the model's own maximum of 32768 tokens (its config.json, "
        "as vLLM 0.5.4 derives it in config.py _get_and_verify_max_len; it refuses a longer one at start): lower "
        "it to 32768, or set auto"]
    assert plan_server(settings(max_model_len=32768, model_max_len=32768))["errors"] == []
    assert plan_server(settings(max_model_len=40000, model_max_len=0))["errors"] == []


def test_the_models_maximum_is_vllms():
    """vllm/config.py _get_and_verify_max_len at 0.5.4: the smallest length key, 2048 without any, times the
    RoPE scaling factor (yarn: from original_max_position_embeddings) except su, longrope and llama3."""
    assert vllm_derived_max_len({"max_position_embeddings": 32768}) == 32768
    assert vllm_derived_max_len({"max_position_embeddings": 32768, "seq_length": 8192}) == 8192
    assert vllm_derived_max_len({}) == 2048
    assert vllm_derived_max_len({"max_position_embeddings": 32768, "rope_scaling": {
        "type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}) == 131072
    assert vllm_derived_max_len({"max_position_embeddings": 131072, "rope_scaling": {
        "rope_type": "llama3", "factor": 8.0}}) == 131072
    assert shape_from_hf_config(dict(QWEN25_14B, seq_length=4096)).context_length == 4096


def test_max_model_len_auto_on_a_repository_is_the_fallback_with_a_warning():
    plan = plan_server(settings(max_model_len="auto"))
    assert plan["argv"][plan["argv"].index("--max-model-len") + 1] == "4096"
    assert any("vllm_server_max_model_len=auto on Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4" in warning
               for warning in plan["warnings"])
    # No longer than the model's own maximum, where its config.json was read (vLLM would refuse 4096).
    short = plan_server(settings(max_model_len="auto", model_max_len=2048))
    assert short["argv"][short["argv"].index("--max-model-len") + 1] == "2048"
    assert plan_server(settings())["warnings"] == []


FOLDER = "/srv/models/qwen2.5-14b-instruct"
WEIGHTS = [{"path": FOLDER + "/model-00001-of-00002.safetensors", "size": 15_000_000_000},
           {"path": FOLDER + "/model-00002-of-00002.safetensors", "size": 14_540_000_000}]


def test_a_folder_is_planned_from_its_config_json_and_sized_to_the_servers_smallest_gpu():
    """What the vllm_server_plan action hands over: the folder's config.json text, its weights, each GPU's memory."""
    config = json.dumps(QWEN25_14B)
    plan = plan_on_model(settings(model=FOLDER, quantization="gptq", max_model_len="auto"), config, WEIGHTS,
                         [32768, 32768])
    assert plan["errors"] == [] and plan["shape"]["architecture"] == "Qwen2ForCausalLM"
    # The folder's config.json says it is not quantized: vllm_quantization does not stand in.
    assert plan["quantization"] == "" and "--quantization" not in plan["argv"]
    assert plan["memory"]["chosen"] == "fitted" or plan["memory"]["chosen"] == "model"
    assert plan["argv"][plan["argv"].index("--max-model-len") + 1] == str(plan["memory"]["max_model_len"])
    assert plan["memory"]["verdict"].startswith("fits: ")
    # One V100: the floor does not fit; refused with the arithmetic and the remedies, naming the variables.
    one = plan_on_model(settings(model=FOLDER, gpus=[0], max_model_len="auto"), config, WEIGHTS, [32768])
    assert "argv" not in one and one["errors"][0].startswith(
        "vllm_server_model=%s with vllm_server_max_model_len=auto does not fit: weights 28172" % FOLDER)
    assert one["dtype"] == "half"
    # The smallest of the server's GPUs counts.
    assert plan_on_model(settings(model=FOLDER, gpus=[0, 1]), config, WEIGHTS, [32768, 16384])["errors"]


def test_a_folder_without_a_readable_config_json_is_refused_and_check_mode_reads_nothing():
    missing = plan_on_model(settings(model=FOLDER), None, [], [32768, 32768])
    assert missing["errors"] == ["vllm_server_model=%s: its config.json is missing or unreadable: point it at a "
                                 "complete Hugging Face model folder (config.json, tokenizer and *.safetensors), "
                                 "or at a repository (organisation/name)" % FOLDER]
    assert "is refused (config.json is not a JSON object)" in plan_on_model(
        settings(model=FOLDER), "[1]", [], [32768])["errors"][0]
    # A models_list folder check mode has yet to fetch: planned on the settings alone.
    unfetched = plan_on_model(settings(model=FOLDER), None, [], [32768, 32768], folder_on_host=False)
    assert unfetched["errors"] == [] and unfetched["memory"] == {} and unfetched["quantization"] == "gptq"


def test_a_repositorys_config_json_gives_its_maximum_and_quantization_and_unread_the_settings_stand_in():
    config = json.dumps(dict(QWEN25_14B, quantization_config={"quant_method": "awq"}))
    read = plan_on_model(settings(max_model_len=40000), config, [], [32768, 32768])
    assert read["memory"] == {} and read["quantization"] == "awq"
    assert "longer than the model's own maximum of 32768 tokens" in read["errors"][0]
    unread = plan_on_model(settings(max_model_len=40000), None, [], [32768, 32768])
    assert unread["errors"] == [] and unread["quantization"] == "gptq" and unread["shape"] == {}
    # A mirror's error page: the settings stand in, nothing refused.
    assert plan_on_model(settings(), "<html>", [], [])["quantization"] == "gptq"


def test_an_fp8_kv_cache_is_counted_at_one_byte_and_fits_a_longer_context():
    shape = vars(shape_from_hf_config(QWEN25_14B))
    f16 = plan_memory(shape, 29_540_000_000, 400_000, 2, 32768, 0.9)
    fp8 = plan_memory(shape, 29_540_000_000, 400_000, 2, 32768, 0.9, "fp8_e5m2")
    assert fp8["kv_cache_mib"] * 2 == f16["kv_cache_mib"]
    assert fp8["fitting_max_model_len"] > f16["fitting_max_model_len"]
    assert "(fp8, 400000 tokens)" in memory_verdict(fp8)


def test_weights_are_the_safetensors_without_mistrals_consolidated_copy():
    mistral = [{"path": "/m/consolidated.safetensors", "size": 14}, {"path": "/m/model-00001-of-00002.safetensors",
               "size": 9}, {"path": "/m/model-00002-of-00002.safetensors", "size": 5}]
    assert weights_bytes(mistral) == 14
    llama2 = [{"path": "/m/model-00001-of-00002.safetensors", "size": 9}, {"path": "/m/pytorch_model.bin", "size": 14}]
    assert weights_bytes(llama2) == 9
    assert weights_bytes([{"path": "/m/pytorch_model.bin", "size": 14}]) == 14
    assert weights_bytes([{"path": "/m/consolidated.safetensors", "size": 14}]) == 14


def test_the_served_name_defaults_to_the_model_own_name():
    from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import default_served_name
    assert default_served_name("/srv/models/Qwen2.5-14B-Instruct-AWQ/") == "Qwen2.5-14B-Instruct-AWQ"
    assert default_served_name("Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4") == "Qwen2.5-14B-Instruct-GPTQ-Int4"


def test_nccl_p2p_knobs_reach_the_environment_and_a_bad_level_is_refused():
    from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import plan_server
    disabled = plan_server(settings(nccl_p2p_disable=True))
    # vLLM's own two-GPU all-reduce moves data P2P without NCCL: it goes too.
    assert disabled["environment"]["NCCL_P2P_DISABLE"] == "1" and "--disable-custom-all-reduce" in disabled["argv"]
    level = plan_server(settings(nccl_p2p_level="PHB"))
    assert level["environment"]["NCCL_P2P_LEVEL"] == "PHB" and "--disable-custom-all-reduce" not in level["argv"]
    assert "--disable-custom-all-reduce" in plan_server(settings(nccl_p2p_level="LOC"))["argv"]
    assert "NCCL_P2P_DISABLE" not in plan_server(settings())["environment"]
    refused = plan_server(settings(nccl_p2p_level="3"))["errors"]
    assert any("vllm_server_nccl_p2p_level=3 is not one of NCCL's path types" in error for error in refused)
    both = plan_server(settings(nccl_p2p_disable=True, nccl_p2p_level="PHB"))["errors"]
    assert any("NCCL ignores the level once P2P is off" in error for error in both)


def test_an_fp8_kv_cache_turns_chunked_prefill_off_and_halves_the_cache():
    from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import plan_server
    plan = plan_server(settings(kv_cache_dtype="fp8_e5m2"))
    argv = plan["argv"]
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8_e5m2"
    assert argv[argv.index("--enable-chunked-prefill") + 1] == "False"
    assert plan["warnings"] == []
    assert "--kv-cache-dtype" not in plan_server(settings())["argv"]
    assert "E4M3 with a scale of 1.0" in plan_server(settings(kv_cache_dtype="fp8"))["warnings"][0]


@pytest.mark.parametrize(("changes", "expected"), [
    ({"kv_cache_dtype": "int8"}, "vllm_server_kv_cache_dtype=int8 is not one of auto, fp8, fp8_e4m3, fp8_e5m2"),
    ({"kv_cache_dtype": "fp8_e5m2", "extra_args": ["--enable-prefix-caching"]},
     "with --enable-prefix-caching in vllm_server_extra_args: prefix caching reads an fp8 cache"),
    ({"kv_cache_dtype": "fp8", "extra_args": ["--enable-chunked-prefill=True"]},
     "with --enable-chunked-prefill in vllm_server_extra_args"),
    # vLLM's parser reads "_" as "-" and takes unambiguous prefixes.
    ({"kv_cache_dtype": "fp8_e5m2", "extra_args": ["--enable_prefix_caching"]}, "with --enable_prefix_caching in"),
    ({"kv_cache_dtype": "fp8_e5m2", "extra_args": ["--enable-prefix"]}, "with --enable-prefix in"),
    ({"kv_cache_dtype": "fp8_e4m3", "extra_args": ["--quantization-param-path", "/x.json"]},
     "reads KV scaling factors on ROCm only"),
    ({"kv_cache_dtype": "auto", "extra_args": ["--kv-cache-dtype", "fp8"]}, "--kv-cache-dtype"),
])
def test_fp8_kv_cache_clashes_are_refused(changes, expected):
    from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import plan_server
    errors = plan_server(settings(**changes))["errors"]
    assert any(expected in error for error in errors), errors


def test_a_short_default_name_still_answers_to_the_model_as_given():
    from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import plan_server
    argv = plan_server(settings(model="/srv/models/Qwen2.5-14B-Instruct-GPTQ-Int4"))["argv"]
    names = argv[argv.index("--served-model-name") + 1:argv.index("--host")]
    assert names == ["Qwen2.5-14B-Instruct-GPTQ-Int4", "/srv/models/Qwen2.5-14B-Instruct-GPTQ-Int4"]
    argv = plan_server(settings(served_model_name="qwen"))["argv"]
    assert argv[argv.index("--served-model-name") + 1:argv.index("--host")] == ["qwen"]


def test_a_repositorys_config_json_text_is_read_or_refused_as_not_a_model():
    """What the action is given: the text the endpoint answered (a mirror may answer a page)."""
    from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import model_shape as shape
    qwen3 = shape('{"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 36, "num_attention_heads": 32, '
                  '"num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, "max_position_embeddings": 40960}')
    assert qwen3["error"] == "" and qwen3["architecture"] == "Qwen3ForCausalLM" and qwen3["context_length"] == 40960
    assert shape("<html>mirror error</html>")["error"]
    assert shape("[1]")["error"] == "config.json is not a JSON object"


def test_llama_server_instances_on_vllms_gpus_are_refused():
    instances = [{"name": "chat", "model": "m", "port": 1, "gpus": [1]},
                 {"name": "all", "model": "m", "port": 2},  # no gpus: every serving GPU
                 {"name": "other", "model": "m", "port": 3, "gpus": [2]}]
    errors = shared_gpu_errors(instances, [0, 1, 2], [0, 1], 0.9)
    assert len(errors) == 2
    assert errors[0].startswith("llama_server_instances[0] (chat) runs on GPU 1, which vllm_server_gpus=[0, 1] also "
                                "serves: vLLM takes vllm_server_gpu_memory_utilization=0.9 of each")
    assert errors[1].startswith("llama_server_instances[1] (all) runs on GPU 0,1,")
    assert shared_gpu_errors(instances[2:], [0, 1, 2], [0, 1], 0.9) == []


def test_llama_server_instances_on_vllms_port_and_address_are_refused():
    instances = [{"name": "same", "model": "m", "port": 8000},  # the role-wide host: 127.0.0.1
                 {"name": "everywhere", "model": "m", "port": 8000, "host": "0.0.0.0"},
                 {"name": "elsewhere", "model": "m", "port": 8000, "host": "10.0.0.2"},
                 {"name": "other", "model": "m", "port": 8081}]
    errors = port_clash_errors(instances, "127.0.0.1", "127.0.0.1", 8000)
    assert errors == [
        "llama_server_instances[0] (same).port=8000 is vllm_server_port too (addresses 127.0.0.1 and 127.0.0.1): the "
        "server that starts second cannot listen. Give the instance another port, or set vllm_server_port.",
        "llama_server_instances[1] (everywhere).port=8000 is vllm_server_port too (addresses 0.0.0.0 and 127.0.0.1): "
        "the server that starts second cannot listen. Give the instance another port, or set vllm_server_port."]
    # vLLM on every address clashes with an instance on any of them.
    assert len(port_clash_errors(instances[2:], "127.0.0.1", "0.0.0.0", 8000)) == 1
