"""The nvidia_stack_check module end to end: main() with module args, the JSON it prints."""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.modules import nvidia_stack_check
import sample_gpus
from module_main import emitted_warnings, run_main


# With a driver's fields filled in, so no readiness warning is due to them.
def v100_pcie_32gb(index=0):
    return sample_gpus.v100_pcie_32gb(index, driver=True)


def a100(index=0):
    return sample_gpus.a100(index, driver=True)


def module_args(**changes):
    args = {"gpus": [v100_pcie_32gb()], "distribution": "Ubuntu", "distribution_version": "22.04",
            "python_version": "3.10.12"}
    args.update(changes)
    return args


def run(capsys, args):
    return run_main(capsys, nvidia_stack_check.main, args)


def test_defaults_on_v100_pass(capsys):
    code, result = run(capsys, module_args())
    assert code == 0, result
    assert result["changed"] is False
    assert result["refusals"] == []
    assert result["readiness_warnings"] == []
    assert result["cuda_architectures"] == "70"
    assert result["min_compute_capability"] == "7.0"


def test_a_bad_stack_fails_listing_every_refusal(capsys):
    args = module_args(nvidia_driver_flavor="open", cuda_toolkit_version="13.0", vllm_quantization="awq",
                       vllm_dtype="bfloat16")
    code, result = run(capsys, args)
    assert code == 1
    assert result["failed"] is True and result["changed"] is False
    lines = result["msg"].split("\n")
    assert lines[0] == "Preflight refused this configuration; nothing on the host was changed:"
    assert [line.split("=")[0] for line in lines[1:]] == [
        "- nvidia_driver_flavor", "- cuda_toolkit_version", "- vllm_quantization", "- vllm_dtype"]
    assert lines[2] == (
        "- cuda_toolkit_version=13.0 cannot build for Tesla V100-PCIE-32GB (compute capability 7.0): CUDA 13 "
        "removed sm_70 (\"nvcc fatal : Unsupported gpu architecture 'sm_70'\"). Use 12.9 (the default for "
        "ubuntu2204 with the 580 branch). [source: VOLTA_FACTS.md, CUDA toolkit]")
    first = result["refusals"][0]
    assert set(first) == {"variable", "value", "reason", "fix", "source", "message"}
    assert (first["variable"], first["value"], first["fix"]) == ("nvidia_driver_flavor", "open", "Use proprietary")


def test_the_same_stack_passes_on_an_a100(capsys):
    args = module_args(gpus=[a100()], nvidia_driver_branch="580", nvidia_driver_flavor="open",
                       cuda_toolkit_version="13.0", vllm_quantization="awq", vllm_dtype="bfloat16")
    code, result = run(capsys, args)
    assert code == 0, result["msg"] if "msg" in result else result
    assert result["cuda_architectures"] == "80" and result["min_compute_capability"] == "8.0"


def test_gpu_less_host(capsys):
    code, result = run(capsys, module_args(gpus=[]))
    assert code == 1
    assert "- preflight_require_gpu=true but no NVIDIA GPU was found" in result["msg"]
    code, result = run(capsys, module_args(gpus=[], require_gpu=False))
    assert code == 0
    assert result["cuda_architectures"] == "" and result["min_compute_capability"] is None


def test_readiness_warnings_are_returned_and_emitted(capsys):
    host = {"kernel_headers_available": False, "disk_free_mib": 1000}
    code, result = run(capsys, module_args(host=host, disk_required_mib=20000, nvidia_driver_branch="535",
                                           cuda_toolkit_version="12.2"))
    assert code == 0
    warnings = result["readiness_warnings"]
    # The stack's warnings (535 is past its end of life) come before the host's.
    assert len(warnings) == 3
    assert warnings[0].startswith("nvidia_driver_branch=535 (LTSB) reached its end of life in 2026-06")
    assert warnings[1].startswith("apt has no headers for the running kernel")
    assert emitted_warnings(result) == warnings


def test_the_resolved_toolkit_is_returned_and_its_warning_emitted(capsys):
    code, result = run(capsys, module_args(nvidia_driver_branch="580", cuda_toolkit_version=""))
    assert code == 0 and result["cuda_toolkit_version"] == "12.9"
    code, result = run(capsys, module_args(distribution="Ubuntu", distribution_version="24.04",
                                           nvidia_driver_branch="550", cuda_toolkit_version=""))
    assert code == 0 and result["cuda_toolkit_version"] == "12.5"
    assert [w for w in result["readiness_warnings"] if "minor version compatibility" in w]


def test_check_mode_reports_the_same(capsys):
    code, result = run(capsys, module_args(_ansible_check_mode=True, llama_cpp_cuda_architectures="70,80",
                                           gpus=[a100(0), v100_pcie_32gb(1)]))
    assert code == 0 and result["changed"] is False
    assert result["cuda_architectures"] == "70;80"


def test_python_version_defaults_to_the_module_interpreter(capsys):
    args = module_args(vllm_version="0.5.3")
    del args["python_version"]
    code, result = run(capsys, args)
    # This test runs on Python 3.11, which vLLM 0.5.3 supports.
    assert code == 0, result


def test_a_display_card_beside_the_v100_is_left_out_of_warnings_and_capabilities(capsys):
    # A GT 1030 as the driver reads it: 2 GiB, the 256 MiB BAR1 of a card without resizable BAR.
    gt1030 = dict(sample_gpus.geforce_gt_1030(0), memory_total_mib=2048, bar1_total_mib=256,
                  pcie_link_width_current=4, pcie_link_width_max=4, throttle_reasons=[])
    code, result = run(capsys, module_args(gpus=[gt1030, v100_pcie_32gb(1)]))
    assert code == 0, result
    assert result["readiness_warnings"] == []  # no "Above 4G Decoding is off" for the display card
    assert (result["min_compute_capability"], result["cuda_architectures"]) == ("7.0", "70")


def test_a_kepler_display_card_on_535_is_a_warning(capsys):
    code, result = run(capsys, module_args(gpus=[sample_gpus.geforce_gt_710(0), v100_pcie_32gb(1)],
                                           nvidia_driver_branch="535", cuda_toolkit_version="12.2"))
    assert code == 0, result
    [display] = [w for w in result["readiness_warnings"] if "is a display card" in w]
    assert "NVIDIA's last branch for Kepler GPUs is 470" in display
    assert display in emitted_warnings(result)
