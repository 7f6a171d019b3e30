"""vLLM 0.5.4 installed for real from PyPI, and its server unit for the two
stand-in V100S GPUs (no GPU here: the unit is enabled, never started)."""
import json
import re

import pytest

CURRENT = "/opt/vllm/current"
UNIT = "/etc/systemd/system/vllm-server.service"
KEY = "vllm-test-key-not-a-secret"


@pytest.fixture(scope="module")
def versions(host):
    out = host.check_output(
        f"{CURRENT}/bin/python -c 'import json, importlib.metadata as m, vllm, torch, transformers, numpy, pyarrow, "
        "pyairports.airports as a; print(json.dumps(dict(vllm=vllm.__version__, torch=torch.__version__, "
        "transformers=transformers.__version__, numpy=numpy.__version__, pyarrow=pyarrow.__version__, "
        "outlines=m.version(\"outlines\"), airports=len(a.AIRPORT_LIST), iata=sorted(r[3] for r in a.AIRPORT_LIST)[:3])))' "
        "2>/dev/null")
    return json.loads(out.splitlines()[-1])


def test_vllm_and_its_pinned_set_import(versions):
    assert versions["vllm"] == "0.5.4"
    assert versions["torch"] == "2.4.0+cu121"
    assert versions["transformers"] == "4.44.2"
    assert versions["numpy"].startswith("1.")
    assert versions["pyarrow"] == "17.0.0"
    assert versions["outlines"] == "0.0.46"


def test_our_pyairports_with_real_rows_not_pypis(host, versions):
    assert versions["airports"] > 5000
    assert all(re.match(r"^[A-Z0-9]{3}$", code) for code in versions["iata"])
    show = host.check_output(f"{CURRENT}/bin/pip show pyairports")
    assert "Version: 0.0.1+v100llm.1" in show


def test_pip_finds_no_broken_requirement(host):
    assert "No broken requirements found" in host.check_output(f"{CURRENT}/bin/pip check")


def test_the_api_server_parses_its_arguments(host):
    help_text = host.check_output(f"{CURRENT}/bin/python -m vllm.entrypoints.openai.api_server --help 2>/dev/null")
    assert "--tensor-parallel-size" in help_text and "--enforce-eager" in help_text


def test_current_is_a_stamped_versioned_venv(host):
    current = host.file(CURRENT)
    assert current.is_symlink and re.match(r"^/opt/vllm/0\.5\.4-[0-9a-f]{10}$", current.linked_to)
    stamp = json.loads(host.file(f"{CURRENT}/install-stamp.json").content_string)
    assert stamp["vllm_version"] == "0.5.4" and stamp["python"].startswith("/usr/bin/python3 3.11.")
    constraints = host.file(f"{CURRENT}/constraints.txt").content_string
    assert "\ntorch==2.4.0\n" in constraints and not re.search(r"(?m)^pyairports", constraints)


def test_unit_has_the_volta_flags(host):
    unit = host.file(UNIT).content_string
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    linked = host.file(CURRENT).linked_to
    # current in ExecStart (a rollback of the link works), the install it names recorded above.
    assert exec_start.startswith(f"ExecStart={CURRENT}/bin/python -m vllm.entrypoints.openai.api_server ")
    assert f"# vLLM from {CURRENT} -> {linked}\n" in unit
    for flag in ("--model Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4", "--served-model-name qwen2.5-14b",
                 "--host 127.0.0.1", "--port 8000", "--dtype half", "--tensor-parallel-size 2",
                 "--quantization gptq", "--enforce-eager", "--max-model-len 8192",
                 "--gpu-memory-utilization 0.9", "--disable-log-requests", "--disable-frontend-multiprocessing"):
        assert flag in exec_start, flag
    assert 'Environment="CUDA_VISIBLE_DEVICES=0,1"' in unit
    assert 'Environment="HF_ENDPOINT=https://hf-mirror.example"' in unit
    assert 'Environment="VLLM_NO_USAGE_STATS=1"' in unit
    # Offline (vllm_server_hf_offline): no downloads, so only loopback peers.
    assert 'Environment="HF_HUB_OFFLINE=1"' in unit
    assert "IPAddressDeny=any\nIPAddressAllow=localhost\n" in unit
    assert "EnvironmentFile=/etc/vllm-server/vllm-server.env" in unit


def test_the_sandbox_is_the_drop_in_shared_with_llama_server(host):
    shown = host.check_output("systemctl show vllm-server -p DropInPaths -p DevicePolicy -p Wants -p After")
    assert "DropInPaths=/etc/systemd/system/vllm-server.service.d/gpu-sandbox.conf" in shown
    assert "DevicePolicy=closed" in shown
    wants = next(line for line in shown.splitlines() if line.startswith("Wants="))
    assert "nvidia-device-nodes.service" in wants
    drop_in = host.file("/etc/systemd/system/vllm-server.service.d/gpu-sandbox.conf").content_string
    assert "SystemCallErrorNumber=EPERM" in drop_in and "DeviceAllow=char-nvidia-uvm rw" in drop_in


def test_the_key_is_in_the_root_only_file_and_nowhere_else(host):
    env = host.file("/etc/vllm-server/vllm-server.env")
    assert env.user == "root" and env.mode == 0o600
    assert f'VLLM_API_KEY="{KEY}"' in env.content_string
    assert KEY not in host.file(UNIT).content_string
    assert KEY not in host.check_output("journalctl --no-pager -q 2>/dev/null || true")


def test_systemd_accepts_the_units(host):
    result = host.run("systemd-analyze verify /etc/systemd/system/vllm-server.service "
                      "/etc/systemd/system/vllm-server-health.timer /etc/systemd/system/vllm-server-restart.timer "
                      "/etc/systemd/system/nvidia-device-nodes.service")
    assert result.rc == 0, result.stderr


def test_enabled_but_not_started_without_a_gpu(host):
    service = host.service("vllm-server")
    assert service.is_enabled
    assert not service.is_running


def test_timers_with_the_configured_schedule(host):
    assert host.service("vllm-server-restart.timer").is_enabled
    restart = host.file("/etc/systemd/system/vllm-server-restart.timer").content_string
    assert "OnCalendar=*-*-* 05:10:00" in restart
    assert host.service("vllm-server-health.timer").is_enabled


def test_service_user_cannot_log_in(host):
    user = host.user("vllm-server")
    assert user.shell == "/usr/sbin/nologin" and user.uid < 1000


def test_the_model_folder_holds_what_vllm_reads_each_file_checked(host):
    """From the stand-in Hugging Face endpoint (../shared/llama_stand_ins/hf_model_folder.py), listed in two
    pages: the top-level files vLLM reads, not .gitattributes, README.md or onnx/; each stamped with the
    listing's sha256 (Git LFS) or git blob id; the listing of the pinned commit kept for offline re-runs."""
    folder = "/srv/models/smollm2-folder"
    # listdir (ls) leaves out the role's hidden .stamps and .partial.
    assert sorted(host.file(folder).listdir()) == ["config.json", "model.safetensors", "tokenizer_config.json"]
    assert host.file(f"{folder}/.stamps").is_directory and host.file(f"{folder}/.partial").is_directory
    config = json.loads(host.file(f"{folder}/config.json").content_string)
    assert config["architectures"] == ["LlamaForCausalLM"] and config["num_key_value_heads"] == 3
    assert "sha256" in json.loads(host.file(f"{folder}/.stamps/model.safetensors.json").content_string)
    assert "git_sha1" in json.loads(host.file(f"{folder}/.stamps/config.json.json").content_string)
    kept = json.loads(host.file(f"{folder}/.stamps/.listing.json").content_string)
    assert kept["url"] == ("http://127.0.0.1:8767/hf/api/models/HuggingFaceTB/SmolLM2-135M-Instruct/tree/"
                           "c3ea9aeb3b1fd2fcde4d2e4e5a1c0b1a2f3e4d5c")
    # Both pages: the second asked of the stand-in endpoint although linked on huggingface.co.
    assert [item["path"] for item in kept["files"]] == [".gitattributes", "README.md", "config.json",
                                                       "tokenizer_config.json", "onnx", "model.safetensors"]
