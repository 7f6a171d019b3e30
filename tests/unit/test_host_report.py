"""The host report's builder (plugins/module_utils/host/report.py)."""
from __future__ import annotations

import json

from ansible_collections.v100.llm.plugins.module_utils.host import report

ENDPOINT = {"name": "qwen", "kind": "llama-server", "url": "http://127.0.0.1:8080", "model": "qwen3-32b",
            "key_file": "/etc/llama-server/qwen.key", "prompt_tokens_max": 16384,
            "engine": {"unit": "llama-server-qwen", "argv": ["llama-bench"]}}
STAMP = {"format": 3, "version": "b1", "commit": "0c1e570", "backend": "cuda", "cuda_architectures": "70",
         "nvcc": "release 12.4", "compiler": "g++ 12", "cmake_args": ["-DGGML_CUDA=ON"], "targets": ["llama-server"]}
TELEMETRY = {"gpus": 2, "gpu_query": True, "throttled": ["1:sw_power_cap"], "xid_events": {"0000:02:00.0 xid 79": 1},
             "servers_up": {"qwen": True}, "series": 300}


def built(**changes):
    arguments = dict(host="v100a", system={"distribution": "Debian", "version": "12", "kernel": "6.1.0-41-amd64"},
                     gpus=[{"index": 0, "name": "Tesla V100-PCIE-32GB", "pci_bus_id": "0000:02:00.0",
                            "memory_total_mib": 32768, "uuid": "GPU-x"}],
                     driver={"version": "550.163.01", "branch": "550", "cuda_version": "12.4"},
                     llama_cpp_stamp=STAMP, vllm_version="0.5.4", endpoints=[ENDPOINT],
                     unit_states={"llama-server-qwen.service": "active"},
                     verify_endpoints=[{"name": "qwen", "checks": [{"check": "models", "state": "ok"},
                                                                   {"check": "chat", "state": "ok"}]}],
                     warnings=["GPU 1 runs PCIe x8"], benchmarks={"qwen": "benchmarks/v100a-qwen-20261207-101010.json"},
                     telemetry=TELEMETRY)
    arguments.update(changes)
    return report.build(**arguments)


def test_a_service_has_its_state_health_address_plan_and_benchmark():
    service = built()["services"][0]
    assert service == {"name": "qwen", "kind": "llama-server", "unit": "llama-server-qwen.service", "state": "active",
                       "url": "http://127.0.0.1:8080", "model": "qwen3-32b", "prompt_tokens_max": 16384,
                       "key_file": "/etc/llama-server/qwen.key", "health": "ok",
                       "checks": {"models": "ok", "chat": "ok"},
                       "last_benchmark": "benchmarks/v100a-qwen-20261207-101010.json"}


def test_a_failed_check_makes_the_service_unhealthy_and_no_verify_says_so():
    failed = built(verify_endpoints=[{"name": "qwen", "checks": [{"check": "models", "state": "failed"}]}])
    assert failed["services"][0]["health"] == "failed"
    assert built(verify_endpoints=[])["services"][0]["health"] is None


def test_the_build_is_described_by_its_stamp_fields_only():
    assert built()["llama_cpp"] == {key: STAMP[key] for key in report.STAMP_FIELDS if key in STAMP}
    assert built(llama_cpp_stamp=None)["llama_cpp"] is None


def test_the_report_holds_no_key_it_was_not_given_and_renders():
    text = json.dumps(built()) + report.markdown(built())
    assert "qwen.key" in text  # named by path
    assert "| qwen | llama-server-qwen.service | active | ok | http://127.0.0.1:8080 |" in report.markdown(built())
    assert "- GPU 1 runs PCIe x8" in report.markdown(built())
    assert report.summary(built()) == [
        "1 GPU(s), driver 550.163.01; llama.cpp 0c1e570; vLLM 0.5.4",
        "services: qwen active (ok)",
        "throttled: 1:sw_power_cap; Xid events: 1; preflight warnings: 1"]


def test_a_host_without_gpus_services_or_telemetry_still_reports():
    bare = built(gpus=[], endpoints=[], telemetry=None, llama_cpp_stamp=None, vllm_version=None, warnings=[],
                 driver={"version": None})
    text = report.markdown(bare)
    assert "no NVIDIA GPU" in text and "llama.cpp: not installed" in text and "## Telemetry\n\nnot read by this run" in text
    assert report.summary(bare)[0] == "0 GPU(s), driver none; llama.cpp not installed; vLLM not installed"


def test_unit_states_from_systemctl_show():
    shown = "Id=llama-server-qwen.service\nActiveState=active\n\nId=vllm-server.service\nActiveState=failed\n"
    assert report.unit_states(shown) == {"llama-server-qwen.service": "active", "vllm-server.service": "failed"}
    assert report.unit_states("") == {}


def test_the_newest_benchmark_of_each_server():
    paths = ["b/v100a-qwen-20261207-101010.json", "b/v100a-qwen-20261208-090000.json",
             "b/v100a-code-fast-20261201-000000.json", "b/v100b-qwen-20261209-000000.json", "b/v100a-qwen.md"]
    assert report.newest_benchmarks(paths, "v100a") == {"qwen": "b/v100a-qwen-20261208-090000.json",
                                                        "code-fast": "b/v100a-code-fast-20261201-000000.json"}


def test_the_units_asked_about_are_those_of_the_services():
    vllm = {"name": "vllm", "kind": "vllm", "url": "http://127.0.0.1:8000"}
    assert report.service_units([ENDPOINT, vllm, {"name": "x", "kind": "other"}]) == [
        "llama-server-qwen.service", "vllm-server.service"]
