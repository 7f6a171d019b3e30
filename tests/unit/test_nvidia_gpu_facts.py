"""The nvidia_gpu_facts module end to end, with stub lspci/nvidia-smi that replay recordings.

The stubs stand in for the real tools (no GPU here); what they print is the recorded
output in tests/fixtures/recorded, unchanged. NVIDIA's nvidia-smi exits 9 when it cannot
reach the driver.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ansible_collections.v100.llm.plugins.modules import nvidia_gpu_facts
import pytest
from ansible.module_utils.testing import patch_module_args
from conftest import RECORDED

LSPCI_X6 = RECORDED / "lspci-nn_iommu-groups_v100-pcie-16gb_x6.txt"
LSPCI_HYPERV = RECORDED / "lspci_hyperv_v100-pcie-16gb_full.txt"
SMI_V100S = RECORDED / "nvidia-smi-q-x_v100s-pcie-32gb_x8_460.73.01.xml"
SMI_A100 = RECORDED / "nvidia-smi-q-x_a100-sxm4-80gb_535.54.03.xml"
SMI_FAILED = RECORDED / "nvidia-smi_failed-to-communicate.txt"
SMI_H200 = RECORDED / "nvidia-smi-q-x_h200_x1_580.159.04.xml"
CAP_H200 = RECORDED / "nvidia-smi_query-gpu-compute-cap_h200_580.159.04.csv"
CAP_UNSUPPORTED_470 = RECORDED / "nvidia-smi_query-gpu-compute-cap_unsupported_470.256.02.txt"
LSPCI_GT710_V100 = RECORDED / "lspci-nn_gt710-display_v100-pcie-16gb.txt"


def stub(directory: Path, name: str, replay: Path, exit_code: int = 0) -> str:
    """An executable that prints a recorded output and exits like the real tool."""
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\ncat '{replay}'\nexit {exit_code}\n")
    path.chmod(0o755)
    return str(path)


def smi_stub(directory: Path, xml: Path, query: Path, query_exit: int = 0) -> str:
    """nvidia-smi that answers -q -x with one recording and --query-gpu with another."""
    directory.mkdir(exist_ok=True)
    path = directory / "nvidia-smi"
    path.write_text(f"#!/bin/sh\ncase \"$1\" in --query-gpu=*) cat '{query}'; exit {query_exit};; esac\n"
                    f"cat '{xml}'\n")
    path.chmod(0o755)
    return str(path)


def run_module(capsys, args: dict) -> dict:
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            nvidia_gpu_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0, result
    return result


def run_before_driver(tmp_path, capsys, lspci_recording: Path) -> dict:
    """The module on a host whose lspci replays a recording and whose nvidia-smi cannot reach a driver."""
    bin_dir = tmp_path / "bin"
    return run_module(
        capsys,
        {
            "lspci_path": stub(bin_dir, "lspci", lspci_recording),
            "nvidia_smi_path": stub(bin_dir, "nvidia-smi", SMI_FAILED, exit_code=9),
        },
    )


def test_driver_not_loaded_reports_lspci_gpus_with_null_driver_fields(tmp_path, capsys):
    result = run_before_driver(tmp_path, capsys, LSPCI_X6)
    assert result["changed"] is False
    assert not result.get("failed")
    facts = result["ansible_facts"]
    assert facts["nvidia_gpu_count"] == 6
    assert facts["nvidia_driver_version"] is None
    assert facts["nvidia_driver_cuda_version"] is None
    for gpu in facts["nvidia_gpus"]:
        assert (gpu["pci_device_id"], gpu["compute_capability"]) == ("10de:1db4", "7.0")
        assert gpu["seen_by_driver"] is False
        assert gpu["bar1_total_mib"] is None
    sources = facts["nvidia_gpu_sources"]
    assert sources["lspci"]["status"] == "ok"
    smi = sources["nvidia_smi"]
    assert (smi["status"], smi["rc"]) == ("driver_unavailable", 9)
    assert smi["error"] == SMI_FAILED.read_text().strip()


def test_working_driver_without_lspci(tmp_path, capsys):
    result = run_module(
        capsys,
        {
            "lspci_path": str(tmp_path / "no-such-lspci"),
            "nvidia_smi_path": stub(tmp_path / "bin", "nvidia-smi", SMI_V100S),
        },
    )
    facts = result["ansible_facts"]
    assert facts["nvidia_gpu_count"] == 8
    assert (facts["nvidia_driver_version"], facts["nvidia_driver_cuda_version"]) == ("460.73.01", "11.2")
    assert facts["nvidia_gpus"][0]["memory_total_mib"] == 32510
    assert facts["nvidia_gpus"][0]["bar1_total_mib"] == 32768
    sources = facts["nvidia_gpu_sources"]
    assert sources["lspci"] == {"path": str(tmp_path / "no-such-lspci"), "status": "missing", "rc": None, "error": None}
    assert sources["nvidia_smi"]["status"] == "ok"


def test_tools_are_found_on_path(tmp_path, capsys, monkeypatch):
    bin_dir = tmp_path / "bin"
    lspci = stub(bin_dir, "lspci", LSPCI_HYPERV)
    smi = stub(bin_dir, "nvidia-smi", SMI_A100)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    facts = run_module(capsys, {})["ansible_facts"]
    sources = facts["nvidia_gpu_sources"]
    assert (sources["lspci"]["path"], sources["nvidia_smi"]["path"]) == (lspci, smi)
    # Two recordings from different hosts: nothing shares a bus id, so both GPUs show.
    assert facts["nvidia_gpu_count"] == 2
    assert [(gpu["pci_bus_id"], gpu["seen_by_driver"]) for gpu in facts["nvidia_gpus"]] == [
        ("0000:01:00.0", True),
        ("0001:00:00.0", False),
    ]


def test_check_mode_reports_the_same_facts(tmp_path, capsys):
    args = {"lspci_path": stub(tmp_path / "bin", "lspci", LSPCI_X6), "nvidia_smi_path": str(tmp_path / "none")}
    result = run_module(capsys, dict(args, _ansible_check_mode=True))
    assert result["changed"] is False
    assert result["ansible_facts"]["nvidia_gpu_count"] == 6


def test_neither_tool_present_gives_zero_gpus(tmp_path, capsys):
    result = run_module(capsys, {"lspci_path": str(tmp_path / "no-lspci"), "nvidia_smi_path": str(tmp_path / "no-smi")})
    facts = result["ansible_facts"]
    assert facts["nvidia_gpus"] == []
    assert facts["nvidia_gpu_count"] == 0
    assert facts["nvidia_gpu_sources"]["lspci"]["status"] == "missing"
    assert facts["nvidia_gpu_sources"]["nvidia_smi"]["status"] == "missing"


def test_collect_without_tools_runs_nothing():
    def run(argv):
        raise AssertionError(f"nothing should run: {argv!r}")

    facts = nvidia_gpu_facts.collect(run, None, None)
    assert facts["nvidia_gpu_count"] == 0
    assert facts["nvidia_gpu_sources"]["lspci"] == {"path": None, "status": "missing", "rc": None, "error": None}


def test_collect_passes_the_documented_arguments_and_reports_failures(tmp_path):
    lspci = stub(tmp_path / "bin", "lspci", LSPCI_X6)
    smi = stub(tmp_path / "bin", "nvidia-smi", SMI_V100S)
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[0] == lspci:
            return 1, "", ""
        # Output that is not XML (here: the lspci recording) is reported, not raised.
        return 0, LSPCI_X6.read_text(), ""

    facts = nvidia_gpu_facts.collect(run, lspci, smi)
    assert calls == [[lspci, "-Dnn"], [smi, "-q", "-x"]]
    assert facts["nvidia_gpu_count"] == 0
    assert facts["nvidia_gpu_sources"]["lspci"]["status"] == "failed"
    assert facts["nvidia_gpu_sources"]["lspci"]["rc"] == 1
    assert facts["nvidia_gpu_sources"]["nvidia_smi"]["status"] == "failed"
    assert facts["nvidia_gpu_sources"]["nvidia_smi"]["error"].startswith("unreadable XML")


def test_display_card_beside_a_v100_before_any_driver(tmp_path, capsys):
    result = run_before_driver(tmp_path, capsys, LSPCI_GT710_V100)
    facts = result["ansible_facts"]
    gt710, v100 = facts["nvidia_gpus"]
    assert (gt710["name"], gt710["display"], gt710["serving"], gt710["compute_capability"]) == (
        "GeForce GT 710", True, False, "3.5")
    assert (v100["name"], v100["display"], v100["serving"], v100["compute_capability"]) == (
        "Tesla V100 PCIe 16GB", False, True, "7.0")
    assert (facts["nvidia_gpu_count"], facts["nvidia_serving_gpu_indexes"], facts["nvidia_serving_gpu_count"]) == (
        2, [1], 1)
    # No driver to ask: the capability query is not even tried.
    assert facts["nvidia_gpu_sources"]["nvidia_smi_compute_cap"]["status"] == "skipped"


def test_the_capability_query_runs_after_the_xml(tmp_path):
    smi = smi_stub(tmp_path / "bin", SMI_H200, CAP_H200)
    calls = []

    def run(argv):
        calls.append(argv)
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr

    facts = nvidia_gpu_facts.collect(run, None, smi)
    assert calls == [[smi, "-q", "-x"], [smi, "--query-gpu=pci.bus_id,compute_cap", "--format=csv,noheader"]]
    assert facts["nvidia_gpu_sources"]["nvidia_smi_compute_cap"] == {"path": smi, "status": "ok", "rc": 0,
                                                                      "error": None}
    (gpu,) = facts["nvidia_gpus"]
    assert (gpu["compute_capability"], gpu["compute_capability_source"]) == ("9.0", "catalogue")


def test_an_nvidia_smi_without_the_field_is_no_failure(tmp_path, capsys):
    smi = smi_stub(tmp_path / "bin", SMI_H200, CAP_UNSUPPORTED_470, query_exit=2)
    facts = run_module(capsys, {"lspci_path": str(tmp_path / "no-lspci"), "nvidia_smi_path": smi})["ansible_facts"]
    source = facts["nvidia_gpu_sources"]["nvidia_smi_compute_cap"]
    assert (source["status"], source["rc"]) == ("unsupported", 2)
    assert source["error"] == CAP_UNSUPPORTED_470.read_text().strip()
    assert facts["nvidia_gpu_sources"]["nvidia_smi"]["status"] == "ok"
    assert facts["nvidia_gpus"][0]["compute_capability"] == "9.0"  # the catalogue still knows the H200
