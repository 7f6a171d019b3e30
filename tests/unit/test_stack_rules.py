"""stack_rules: every rule passes on a GPU that allows the value and refuses it on a V100.

GPU dicts carry real values (name as nvidia-smi prints it, PCI id, compute
capability, memory) in the shape nvidia_gpu_facts returns.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import (
    Refusal,
    StackRequest,
    branch_lifecycle_warnings,
    check_stack,
    display_gpu_warnings,
    host_compiler_warnings,
    derive_cuda_architectures,
    min_compute_capability,
    parse_cuda_architectures,
    parse_version,
    resolve_cuda_architectures,
    resolve_cuda_toolkit,
    stack_warnings,
)
from sample_gpus import (
    a100,
    display_card,
    geforce_gt_710,
    geforce_gt_1030,
    gpu,
    h200,
    rtx_4090,
    tesla_k80,
    tesla_t4,
    unknown_card,
    v100_pcie_32gb,
    v100s_pcie_32gb,
)


def request(**changes):
    """A request every rule accepts on a V100 (the DESIGN.md defaults on Ubuntu 22.04)."""
    return replace(StackRequest(python_version="3.10.12", distribution="Ubuntu", distribution_version="22.04"),
                   **changes)


def messages(req, gpus, variable=None):
    return [r.message() for r in check_stack(req, gpus) if variable is None or r.variable == variable]


def assert_passes(req, gpus):
    assert messages(req, gpus) == []


def refused_once(req, gpus, variable):
    found = messages(req, gpus, variable)
    assert len(found) == 1, found
    return found[0]


# --- the defaults and the message format -------------------------------------


def test_defaults_pass_on_v100s():
    assert_passes(request(), [v100_pcie_32gb(0), v100s_pcie_32gb(1)])


def test_message_names_variable_value_reason_fix_and_source():
    refusal = Refusal("cuda_toolkit_version", "13.0", "cannot build for X: because.", "Use 12.4 (why)",
                      "VOLTA_FACTS.md, CUDA toolkit")
    assert refusal.message() == ("cuda_toolkit_version=13.0 cannot build for X: because. Use 12.4 (why). "
                                 "[source: VOLTA_FACTS.md, CUDA toolkit]")
    assert Refusal("v", "", "is empty", "Use x", "s").message() == 'v="" is empty. Use x. [source: s]'
    assert refusal.as_dict()["message"] == refusal.message()


def test_refusals_come_in_fixing_order():
    req = request(distribution_version="20.04", nvidia_driver_flavor="open", vllm_dtype="bfloat16")
    assert [r.variable for r in check_stack(req, [v100_pcie_32gb()])] == [
        "ansible_distribution", "nvidia_driver_flavor", "vllm_dtype"]


# --- operating system -----------------------------------------------------------


@pytest.mark.parametrize("distribution, version", [
    ("Ubuntu", "22.04"), ("Ubuntu", "24.04"), ("Debian", "12"), ("Debian", "12.7")])
def test_supported_systems_pass(distribution, version):
    assert_passes(request(distribution=distribution, distribution_version=version), [v100_pcie_32gb()])


@pytest.mark.parametrize("distribution, version", [
    ("Ubuntu", "20.04"), ("Ubuntu", "24.10"), ("Debian", "11"), ("Debian", "14"), ("Rocky", "9.4")])
def test_unsupported_systems_refused(distribution, version):
    message = refused_once(request(distribution=distribution, distribution_version=version), [v100_pcie_32gb()],
                           "ansible_distribution")
    assert message.startswith("ansible_distribution=%s %s is not a supported system" % (distribution, version))
    assert "Use Ubuntu 22.04, Ubuntu 24.04, Debian 12 or Debian 13" in message


# --- Debian 13 and the distribution's own toolkit -----------------------------------


def debian13(**changes):
    """Debian 13 as it must be set: Debian's 550 driver and Debian's CUDA 12.4 (Python 3.13)."""
    settings = dict(distribution="Debian", distribution_version="13.2", nvidia_driver_branch="550",
                    cuda_toolkit_source="distro", python_version="3.13.5", vllm_enabled=False)
    return request(**dict(settings, **changes))


def test_debian_13_passes_with_its_own_driver_and_toolkit():
    assert_passes(debian13(), [v100_pcie_32gb()])
    assert resolve_cuda_toolkit(debian13()) == "12.4"
    assert_passes(debian13(cuda_toolkit_version="12.4"), [v100_pcie_32gb()])
    assert_passes(debian13(require_gpu=False, llama_cpp_cuda_architectures="70"), [])  # a build host, no GPU


def test_debian_13_has_no_cuda_12_from_nvidia():
    # NVIDIA's debian13 repository opened with CUDA 13 (NVIDIA/cuda-repo-management#38).
    message = refused_once(debian13(cuda_toolkit_source="cuda_repo"), [v100_pcie_32gb()], "cuda_toolkit_source")
    assert message.startswith("cuda_toolkit_source=cuda_repo on Debian 13: NVIDIA's debian13 repository carries "
                              "no CUDA 12 toolkit")
    assert "Set cuda_toolkit_source: distro (Debian 13 packages CUDA 12.4 as nvidia-cuda-toolkit)" in message


def test_debian_13_toolkit_needs_the_550_driver():
    # trixie: nvidia-cuda-dev Depends libcuda1 (>= 550) | libcuda.so.1 (>= 550) | libcuda-12.4-1; the tesla-535
    # libcuda provides libcuda-12.2-1 at most.
    message = refused_once(debian13(nvidia_driver_branch="535"), [v100_pcie_32gb()], "nvidia_driver_branch")
    assert message.startswith("nvidia_driver_branch=535 cannot run Debian 13's CUDA 12.4 packages: nvidia-cuda-dev "
                              "depends on libcuda1 (>= 550)")
    assert "Use nvidia_driver_branch=550" in message


def test_distribution_toolkit_is_one_release():
    message = refused_once(debian13(cuda_toolkit_version="12.6"), [v100_pcie_32gb()], "cuda_toolkit_version")
    assert message.startswith("cuda_toolkit_version=12.6 with cuda_toolkit_source: distro: Debian 13 packages "
                              "CUDA 12.4 only (nvidia-cuda-toolkit 12.4.131~12.4.1-2)")
    assert 'Set cuda_toolkit_version: "" or "12.4"' in message


def test_debian_12_toolkit_is_cuda_11():
    message = refused_once(request(distribution="Debian", distribution_version="12.7", cuda_toolkit_source="distro"),
                           [v100_pcie_32gb()], "cuda_toolkit_source")
    assert "nvidia-cuda-toolkit 11.8.89~11.8.0-5~deb12u1 is CUDA 11.8, not the CUDA 12" in message
    assert "llama.cpp sets no minimum of its own" in message
    assert "Set cuda_toolkit_source: cuda_repo (NVIDIA's debian12 repository carries CUDA 12.3, 12.4" in message


def test_ubuntu_toolkit_is_not_known_here():
    message = refused_once(request(cuda_toolkit_source="distro"), [v100_pcie_32gb()], "cuda_toolkit_source")
    assert "this toolkit installs no distribution CUDA toolkit but Debian's" in message
    assert "Set cuda_toolkit_source: cuda_repo (NVIDIA's ubuntu2204 repository carries" in message


def test_unknown_toolkit_source_refused():
    message = refused_once(request(cuda_toolkit_source="conda"), [v100_pcie_32gb()], "cuda_toolkit_source")
    assert message.startswith("cuda_toolkit_source=conda is not a toolkit source")


def test_distribution_nvcc_brings_its_own_host_compiler():
    # Debian 13's gcc is 14, which nvcc 12.4 refuses; its nvidia-cuda-toolkit depends on g++-13 and uses it.
    assert host_compiler_warnings(debian13()) == []


def test_debian_13_lifecycle_warning_does_not_advise_a_refused_source():
    warnings = branch_lifecycle_warnings(debian13(), [v100_pcie_32gb()], "2026-12-04")
    assert len(warnings) == 1 and "cuda_repo" not in warnings[0]
    assert "no source has a maintained Volta branch for Debian 13" in warnings[0]
    assert "run Debian 12 or Ubuntu with nvidia_driver_branch=580" in warnings[0]


# --- GPU presence -----------------------------------------------------------------


def test_no_gpu_refused_when_required():
    message = refused_once(request(), [], "preflight_require_gpu")
    assert message.startswith("preflight_require_gpu=true but no NVIDIA GPU was found")
    assert "lspci -nn" in message and "set preflight_require_gpu=false" in message


def test_no_gpu_accepted_when_not_required():
    assert_passes(request(require_gpu=False), [])


# --- driver branch ------------------------------------------------------------------


@pytest.mark.parametrize("branch", ["535", "550", "570", "575", "580"])
def test_known_branches_pass_on_v100(branch):
    assert messages(request(nvidia_driver_branch=branch, cuda_toolkit_version="12.2"), [v100_pcie_32gb()]) == []


def test_branch_590_passes_on_a100_refused_on_v100():
    req = request(nvidia_driver_branch="590")
    assert_passes(req, [a100()])
    message = refused_once(req, [v100_pcie_32gb()], "nvidia_driver_branch")
    assert message.startswith("nvidia_driver_branch=590 cannot drive Tesla V100-PCIE-32GB (compute capability 7.0)")
    assert "the driver ignores Volta GPUs" in message
    assert "supported through the NVIDIA 580.xx Legacy drivers" in message
    assert "Use 580 (the last branch for Volta)" in message


def test_branch_590_refused_on_a_mixed_host_naming_the_v100():
    message = refused_once(request(nvidia_driver_branch="595"), [a100(0), v100_pcie_32gb(1)], "nvidia_driver_branch")
    assert "Tesla V100-PCIE-32GB" in message and "A100" not in message


@pytest.mark.parametrize("branch", ["545", "560", "470"])
def test_unknown_branch_refused(branch):
    message = refused_once(request(nvidia_driver_branch=branch), [a100()], "nvidia_driver_branch")
    assert message.startswith("nvidia_driver_branch=%s is not a branch this toolkit installs" % branch)
    assert "Use 580 (or one of 535, 550, 570, 575, 580)" in message


@pytest.mark.parametrize("branch", ["550.54.14", "latest", "", "r550"])
def test_malformed_branch_refused(branch):
    message = refused_once(request(nvidia_driver_branch=branch), [v100_pcie_32gb()], "nvidia_driver_branch")
    assert "is not a driver branch number" in message and "Use 580" in message


# --- driver flavour ---------------------------------------------------------------


def test_open_flavor_passes_on_t4_refused_on_v100():
    req = request(nvidia_driver_flavor="open")
    assert_passes(req, [tesla_t4()])
    message = refused_once(req, [v100_pcie_32gb()], "nvidia_driver_flavor")
    assert message.startswith("nvidia_driver_flavor=open cannot drive Tesla V100-PCIE-32GB (compute capability 7.0)")
    assert "GPU System Processor (GSP)" in message
    assert "Use proprietary." in message


@pytest.mark.parametrize("flavor", ["nvidia-open", "Open", ""])
def test_unknown_flavor_refused(flavor):
    message = refused_once(request(nvidia_driver_flavor=flavor), [tesla_t4()], "nvidia_driver_flavor")
    assert "is not a driver flavour" in message and "Use proprietary" in message


# --- CUDA toolkit ------------------------------------------------------------------
# Minor version compatibility (VOLTA_FACTS.md, CUDA toolkit): any 12.x on a driver >= 525, 13.x on >= 580.


def test_cuda_13_passes_on_t4_and_a100_refused_on_v100():
    req = request(nvidia_driver_branch="580", cuda_toolkit_version="13.0")
    assert_passes(req, [tesla_t4()])
    assert_passes(req, [a100()])
    message = refused_once(req, [v100_pcie_32gb()], "cuda_toolkit_version")
    assert message.startswith("cuda_toolkit_version=13.0 cannot build for Tesla V100-PCIE-32GB "
                              "(compute capability 7.0): CUDA 13 removed sm_70")
    assert "Use 12.9 (the default for ubuntu2204 with the 580 branch)" in message


def test_cuda_13_on_v100_with_branch_550_suggests_the_branch_default():
    message = refused_once(request(nvidia_driver_branch="550", cuda_toolkit_version="13.0"), [v100_pcie_32gb()],
                           "cuda_toolkit_version")
    assert "CUDA 13 removed sm_70" in message
    assert message.endswith("Use 12.4 (the default for ubuntu2204 with the 550 branch). "
                            "[source: VOLTA_FACTS.md, CUDA toolkit]")


@pytest.mark.parametrize("branch, toolkit", [("535", "12.6"), ("535", "12.9"), ("550", "12.8"), ("570", "12.9")])
def test_any_12x_runs_on_every_volta_branch(branch, toolkit):
    """The old rule refused a toolkit newer than the branch ships; NVIDIA's compatibility guide allows it."""
    req = request(nvidia_driver_branch=branch, cuda_toolkit_version=toolkit)
    assert_passes(req, [v100_pcie_32gb()])


def test_535_with_12_6_is_allowed_with_the_minor_compatibility_warning():
    warnings = stack_warnings(request(nvidia_driver_branch="535", cuda_toolkit_version="12.6"),
                              [v100_pcie_32gb()], "2026-01-01")
    compat = [w for w in warnings if "minor version compatibility" in w]
    assert len(compat) == 1
    assert compat[0].startswith("cuda_toolkit_version=12.6 is newer than CUDA 12.2, which the 535 driver branch "
                                "ships: it runs through CUDA minor version compatibility (any 12.x on a driver >= 525)")
    assert "PTX newer than the driver cannot be JIT-compiled" in compat[0]
    assert "cudaErrorCallRequiresNewerDriver" in compat[0]
    assert "use cuda_toolkit_version=12.2 or a newer branch" in compat[0]


@pytest.mark.parametrize("branch, toolkit", [("535", "12.2"), ("550", "12.4"), ("550", "12.2"), ("580", "12.9")])
def test_no_compatibility_warning_at_or_below_the_branch_cuda(branch, toolkit):
    warnings = stack_warnings(request(nvidia_driver_branch=branch, cuda_toolkit_version=toolkit),
                              [v100_pcie_32gb()], "2026-01-01")
    assert not [w for w in warnings if "minor version compatibility" in w]


def test_cuda_13_needs_branch_580_even_on_a_gpu_that_can_run_it():
    message = refused_once(request(nvidia_driver_branch="570", cuda_toolkit_version="13.0"), [a100()],
                           "cuda_toolkit_version")
    assert message.startswith("cuda_toolkit_version=13.0 needs a driver of branch 580 or newer")
    assert "or nvidia_driver_branch=580" in message


def test_newer_branch_than_the_table_does_not_cap_the_toolkit():
    assert_passes(request(nvidia_driver_branch="590", cuda_toolkit_version="13.1"), [h200()])


@pytest.mark.parametrize("value", ["12", "12.4.1", "cuda-12.4", "twelve", "12.x"])
def test_malformed_toolkit_refused(value):
    message = refused_once(request(cuda_toolkit_version=value), [v100_pcie_32gb()], "cuda_toolkit_version")
    assert 'is not a CUDA release as major.minor, quoted (e.g. "12.4")' in message
    assert "Use 12.9 (the default for ubuntu2204 with the 580 branch)" in message


def test_cuda_11_refused_everywhere():
    for gpus in ([v100_pcie_32gb()], [a100()]):
        message = refused_once(request(cuda_toolkit_version="11.8"), gpus, "cuda_toolkit_version")
        assert message.startswith("cuda_toolkit_version=11.8 is not a CUDA 12.x or 13.x toolkit")


def test_a_version_the_distribution_lacks_is_refused_with_the_list():
    req = request(distribution="Ubuntu", distribution_version="24.04", nvidia_driver_branch="550",
                  cuda_toolkit_version="12.4")
    message = refused_once(req, [v100_pcie_32gb()], "cuda_toolkit_version")
    assert message.startswith("cuda_toolkit_version=12.4 is not in NVIDIA's ubuntu2404 repository (it carries "
                              "cuda-toolkit-12-<minor> for 12.5, 12.6, 12.8, 12.9 only)")
    assert "Use 12.5 (the default for ubuntu2404 with the 550 branch)" in message


@pytest.mark.parametrize("distribution, version, branch, expected", [
    ("Ubuntu", "22.04", "550", "12.4"),
    ("Ubuntu", "22.04", "535", "12.2"),
    ("Ubuntu", "22.04", "580", "12.9"),
    # 12.4 is not carried for 24.04: the smallest step past the branch's CUDA.
    ("Ubuntu", "24.04", "550", "12.5"),
    ("Ubuntu", "24.04", "535", "12.5"),
    ("Ubuntu", "24.04", "580", "12.9"),
    ("Debian", "12", "550", "12.4"),
    # debian12 begins at 12.3.
    ("Debian", "12.7", "535", "12.3"),
])
def test_default_toolkit_per_distribution_and_branch(distribution, version, branch, expected):
    req = request(distribution=distribution, distribution_version=version, nvidia_driver_branch=branch,
                  cuda_toolkit_version="")
    assert resolve_cuda_toolkit(req) == expected
    assert_passes(req, [v100_pcie_32gb()])


def test_every_supported_system_has_a_default_its_gcc_accepts():
    for distribution, version in (("Ubuntu", "22.04"), ("Ubuntu", "24.04"), ("Debian", "12")):
        for branch in ("535", "550", "570", "575", "580"):
            req = request(distribution=distribution, distribution_version=version, nvidia_driver_branch=branch,
                          cuda_toolkit_version="")
            assert not [w for w in stack_warnings(req, [v100_pcie_32gb()], "2026-01-01") if "GCC" in w], req


def test_a_toolkit_older_than_the_distribution_gcc_warns():
    # Ubuntu 24.04's GCC 13 with a 12.3 nvcc (accepts GCC 12 at most), as a mirror might still carry it.
    warnings = host_compiler_warnings(request(distribution="Ubuntu", distribution_version="24.04",
                                              cuda_toolkit_version="12.3"))
    assert warnings and warnings[0].startswith("cuda_toolkit_version=12.3: its nvcc accepts GCC 12 at most, and "
                                               "ubuntu2404's default GCC is 13")


# --- driver branch lifecycle --------------------------------------------------------


def test_a_branch_past_its_end_of_life_warns_and_names_the_volta_branch():
    warnings = branch_lifecycle_warnings(request(nvidia_driver_branch="535"), [v100_pcie_32gb()], "2026-12-01")
    assert len(warnings) == 1
    assert warnings[0].startswith("nvidia_driver_branch=535 (LTSB) reached its end of life in 2026-06 and gets no "
                                  "security fixes: use nvidia_driver_branch=580, the long-term branch that still "
                                  "drives Volta")


def test_lifecycle_advice_on_debian_names_the_source_that_has_580():
    warnings = branch_lifecycle_warnings(request(nvidia_driver_branch="535", distribution="Debian",
                                                 distribution_version="12"), [v100_pcie_32gb()], "2026-12-01")
    assert "from NVIDIA's repository (nvidia_driver_source=cuda_repo: Debian 12 packages only 535)" in warnings[0]


def test_a_branch_within_its_life_does_not_warn():
    assert branch_lifecycle_warnings(request(nvidia_driver_branch="535"), [v100_pcie_32gb()], "2026-06-30") == []
    assert branch_lifecycle_warnings(request(nvidia_driver_branch="580"), [v100_pcie_32gb()], "2026-12-01") == []


def test_lifecycle_advice_on_a_host_without_volta():
    warnings = branch_lifecycle_warnings(request(nvidia_driver_branch="550"), [a100()], "2026-12-01")
    assert warnings and warnings[0].startswith("nvidia_driver_branch=550 (PB) is no longer in NVIDIA's table of "
                                               "supported data-center branches")
    assert "use a branch NVIDIA still supports" in warnings[0]


# --- llama.cpp CUDA architectures --------------------------------------------------


def test_empty_architectures_derive_from_the_gpus():
    assert resolve_cuda_architectures(request(), [v100_pcie_32gb(0), v100s_pcie_32gb(1)]) == "70"
    assert resolve_cuda_architectures(request(), [rtx_4090(0), v100_pcie_32gb(1), rtx_4090(2)]) == "70;89"
    assert resolve_cuda_architectures(request(), [h200(0), v100_pcie_32gb(1)]) == "70;90"
    assert resolve_cuda_architectures(request(require_gpu=False), []) == ""


def test_derive_sorts_numerically_and_skips_unknown_cards():
    blackwell = gpu(0, "B200", "2901", "10.0", 183359)
    assert derive_cuda_architectures([blackwell, v100_pcie_32gb(1), unknown_card(2)]) == "70;100"


def test_empty_architectures_with_an_unknown_card_refused():
    message = refused_once(request(), [v100_pcie_32gb(0), unknown_card(1)], "llama_cpp_cuda_architectures")
    assert message.startswith('llama_cpp_cuda_architectures="" cannot be derived: GPU 1 (10de:ffff)')
    assert "Set llama_cpp_cuda_architectures explicitly" in message


def test_arch_80_passes_on_a100_refused_on_v100():
    req = request(llama_cpp_cuda_architectures="80")
    assert_passes(req, [a100()])
    message = refused_once(req, [v100_pcie_32gb()], "llama_cpp_cuda_architectures")
    assert message.startswith("llama_cpp_cuda_architectures=80 has no machine code that Tesla V100-PCIE-32GB "
                              "(compute capability 7.0) can run")
    assert "Use 70 (or leave it empty to derive it from the detected GPUs)" in message


def test_arch_75_passes_on_t4_refused_on_v100():
    req = request(llama_cpp_cuda_architectures="75")
    assert_passes(req, [tesla_t4()])
    assert "has no machine code" in refused_once(req, [v100_pcie_32gb()], "llama_cpp_cuda_architectures")


def test_arch_70_real_passes_on_v100_70_virtual_alone_refused():
    assert_passes(request(llama_cpp_cuda_architectures="70-real"), [v100_pcie_32gb()])
    assert_passes(request(llama_cpp_cuda_architectures="70"), [v100_pcie_32gb()])
    message = refused_once(request(llama_cpp_cuda_architectures="70-virtual"), [v100_pcie_32gb()],
                           "llama_cpp_cuda_architectures")
    assert message.startswith("llama_cpp_cuda_architectures=70-virtual gives Tesla V100-PCIE-32GB "
                              "(compute capability 7.0) only PTX")
    assert "[source: VOLTA_FACTS.md, CUDA toolkit (ship sm_70 machine code)]" in message


def test_machine_code_runs_on_the_same_major_at_an_equal_or_newer_minor():
    assert_passes(request(llama_cpp_cuda_architectures="86"), [rtx_4090()])
    assert messages(request(llama_cpp_cuda_architectures="89"), [gpu(0, "RTX 3090", "2204", "8.6", 24576)])
    assert_passes(request(llama_cpp_cuda_architectures="90a"), [h200()])
    assert messages(request(llama_cpp_cuda_architectures="90a"), [gpu(0, "Future 9.2", "ffff", "9.2", 1)])


def test_a_mixed_host_needs_code_for_every_gpu():
    req = request(llama_cpp_cuda_architectures="80")
    message = refused_once(req, [a100(0), v100_pcie_32gb(1)], "llama_cpp_cuda_architectures")
    assert "Use 70;80" in message
    assert_passes(request(llama_cpp_cuda_architectures="70,80"), [a100(0), v100_pcie_32gb(1)])
    assert resolve_cuda_architectures(request(llama_cpp_cuda_architectures=" 70 , 80 "), []) == "70;80"


@pytest.mark.parametrize("special", ["native", "all", "all-major"])
def test_cmake_special_values_pass(special):
    assert_passes(request(llama_cpp_cuda_architectures=special), [v100_pcie_32gb()])


def test_native_without_a_gpu_refused():
    message = refused_once(request(require_gpu=False, llama_cpp_cuda_architectures="native"), [],
                           "llama_cpp_cuda_architectures")
    assert "builds for the GPU present at build time" in message and "70 for a V100" in message


@pytest.mark.parametrize("value", ["sm_70", "7.0", "70;native", ";", "70-ptx"])
def test_malformed_architectures_refused(value):
    message = refused_once(request(llama_cpp_cuda_architectures=value), [v100_pcie_32gb()],
                           "llama_cpp_cuda_architectures")
    assert "is not a CMake CUDA architecture list" in message and "Use 70" in message


def test_parse_cuda_architectures():
    assert parse_cuda_architectures("70;80-real, 90a-virtual") == ["70", "80-real", "90a-virtual"]
    with pytest.raises(ValueError, match="on its own"):
        parse_cuda_architectures("all;70")


def test_pre_turing_architecture_cannot_be_built_with_cuda_13():
    req = request(nvidia_driver_branch="580", cuda_toolkit_version="13.0")
    assert_passes(replace(req, llama_cpp_cuda_architectures="80"), [a100()])
    message = refused_once(replace(req, llama_cpp_cuda_architectures="70;80"), [a100()],
                           "llama_cpp_cuda_architectures")
    assert "cannot be built with cuda_toolkit_version=13.0" in message
    assert "Use cuda_toolkit_version 12.x, or drop 70 from the list" in message


# --- vLLM version -------------------------------------------------------------------


def test_vllm_0_20_passes_on_a100_refused_on_v100():
    req = request(vllm_version="0.20.0", python_version="3.12.3")
    assert_passes(req, [a100()])
    message = refused_once(req, [v100_pcie_32gb()], "vllm_version")
    assert message.startswith("vllm_version=0.20.0 cannot run on Tesla V100-PCIE-32GB (compute capability 7.0)")
    assert "Use 0.19.1 (the last release for Volta)" in message


def test_vllm_0_19_1_is_the_last_on_v100():
    assert_passes(request(vllm_version="0.19.1", python_version="3.12.3"), [v100_pcie_32gb()])


@pytest.mark.parametrize("value", ["0.5.4rc1", "latest", "v0.5.4", "", "0.5.4.post"])
def test_malformed_vllm_version_refused(value):
    message = refused_once(request(vllm_version=value), [v100_pcie_32gb()], "vllm_version")
    assert "is not a vLLM release version" in message and "Use 0.5.4" in message


def test_qwen3_on_0_5_4_refused_everywhere_0_8_4_passes_on_a100():
    qwen3 = request(vllm_model_architecture="Qwen3ForCausalLM")
    for gpus in ([v100_pcie_32gb()], [a100()]):
        message = refused_once(qwen3, gpus, "vllm_version")
        assert message.startswith("vllm_version=0.5.4 cannot load Qwen3ForCausalLM models")
        assert "Use 0.8.4 or newer" in message and "or serve the model's GGUF with llama_server" in message
    assert_passes(replace(qwen3, vllm_version="0.8.4"), [a100()])
    assert_passes(replace(qwen3, vllm_version="0.8.4"), [v100_pcie_32gb()])


def test_qwen3_moe_boundary_and_volta_note():
    message = refused_once(request(vllm_model_architecture="Qwen3MoeForCausalLM", vllm_version="0.8.3"),
                           [v100_pcie_32gb()], "vllm_version")
    assert "Use 0.8.4 or newer (0.19.1 is the last for Volta)" in message
    assert_passes(request(vllm_model_architecture="Qwen2ForCausalLM"), [v100_pcie_32gb()])


def test_python_3_12_with_vllm_0_5_3_refused_0_5_4_passes():
    assert_passes(request(python_version="3.12.3", vllm_version="0.5.4"), [v100_pcie_32gb()])
    for version in ("0.5.3", "0.5.3.post1", "0.5.0"):
        message = refused_once(request(python_version="3.12.3", vllm_version=version), [v100_pcie_32gb()],
                               "vllm_version")
        assert message.startswith("vllm_version=%s has no wheels for Python 3.12 "
                                  "(vLLM 0.5.0-0.5.3.post1 supports Python 3.8-3.11)" % version)
        assert "Use 0.5.4 (wheels for Python 3.8-3.12)" in message


def test_python_3_11_with_vllm_0_5_3_passes():
    assert_passes(request(python_version="3.11.2", vllm_version="0.5.3.post1"), [v100_pcie_32gb()])


def test_python_outside_every_0_5_range():
    message = refused_once(request(python_version="3.13.1", vllm_version="0.5.5"), [v100_pcie_32gb()], "vllm_version")
    assert "has no wheels for Python 3.13 (vLLM 0.5.4 supports Python 3.8-3.12)" in message
    assert "Run vLLM 0.5.5 from a Python 3.8-3.12 venv" in message
    assert_passes(request(python_version="3.13.1", vllm_version="0.11.0"), [v100_pcie_32gb()])


# --- vLLM quantization ---------------------------------------------------------------


def test_awq_passes_on_t4_refused_on_v100():
    req = request(vllm_quantization="awq")
    assert_passes(req, [tesla_t4()])
    message = refused_once(req, [v100_pcie_32gb()], "vllm_quantization")
    assert message.startswith("vllm_quantization=awq is not supported on Tesla V100-PCIE-32GB "
                              "(compute capability 7.0)")
    assert "Minimum capability: 75. Current capability: 70." in message
    assert "Use gptq (minimum compute capability 6.0)" in message


@pytest.mark.parametrize("method", ["marlin", "gptq_marlin", "awq_marlin", "fp8"])
def test_ampere_methods_pass_on_a100_refused_on_t4_and_v100(method):
    req = request(vllm_quantization=method)
    assert_passes(req, [a100()])
    for gpus in ([tesla_t4()], [v100_pcie_32gb()]):
        message = refused_once(req, gpus, "vllm_quantization")
        assert "need compute capability 8.0" in message and "Minimum capability: 80." in message


@pytest.mark.parametrize("method", ["gptq", "squeezellm", "bitsandbytes", "", None])
def test_volta_methods_pass_on_v100(method):
    assert_passes(request(vllm_quantization=method), [v100_pcie_32gb()])


def test_quantization_on_a_mixed_host_is_limited_by_the_oldest_gpu():
    message = refused_once(request(vllm_quantization="awq"), [tesla_t4(0), v100_pcie_32gb(1)], "vllm_quantization")
    assert "Tesla V100-PCIE-32GB" in message


def test_gguf_needs_vllm_0_5_5():
    assert_passes(request(vllm_quantization="gguf", vllm_version="0.5.5"), [v100_pcie_32gb()])
    for gpus in ([v100_pcie_32gb()], [a100()]):
        message = refused_once(request(vllm_quantization="gguf", vllm_version="0.5.4"), gpus, "vllm_quantization")
        assert message.startswith("vllm_quantization=gguf needs vLLM 0.5.5 or newer (vllm_version is 0.5.4)")
        assert "Use vllm_version=0.5.5, or gptq" in message


@pytest.mark.parametrize("method", ["AWQ", "exl2", "int4"])
def test_unknown_quantization_refused_with_the_known_list(method):
    message = refused_once(request(vllm_quantization=method), [a100()], "vllm_quantization")
    assert ("is not a quantization method this toolkit knows for vLLM (known: awq, awq_marlin, bitsandbytes, "
            "fp8, gguf, gptq, gptq_marlin, marlin, squeezellm)") in message
    assert "Use gptq with a GPTQ checkpoint" in message


def test_below_gptq_minimum_suggests_unquantized():
    maxwell = gpu(0, "Tesla M40", "17fd", "5.2", 12288)
    message = refused_once(request(vllm_quantization="gptq"), [maxwell], "vllm_quantization")
    assert 'Use "" (an unquantized model)' in message


# --- vLLM dtype ----------------------------------------------------------------------


def test_bfloat16_passes_on_a100_refused_on_v100():
    req = request(vllm_dtype="bfloat16")
    assert_passes(req, [a100()])
    for gpus in ([v100_pcie_32gb()], [tesla_t4()]):
        message = refused_once(req, gpus, "vllm_dtype")
        assert message.startswith("vllm_dtype=bfloat16 cannot run on ")
        assert "Bfloat16 is only supported on GPUs with compute capability of at least 8.0" in message
        assert "Use half." in message


def test_auto_dtype_passes_on_a100_and_with_a_float16_checkpoint_on_v100():
    assert_passes(request(vllm_dtype="auto"), [a100()])
    assert_passes(request(vllm_dtype="auto", vllm_model_dtype="float16"), [v100_pcie_32gb()])
    for model_dtype, said in (("bfloat16", "the checkpoint is bfloat16"), ("", "the checkpoint's dtype is not known")):
        message = refused_once(request(vllm_dtype="auto", vllm_model_dtype=model_dtype), [v100_pcie_32gb()],
                               "vllm_dtype")
        assert said in message and "Use half" in message


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "int8", ""])
def test_unknown_dtype_refused(dtype):
    message = refused_once(request(vllm_dtype=dtype), [a100()], "vllm_dtype")
    assert "is not a vLLM dtype (expected one of auto, half, float16, bfloat16, float, float32)" in message


def test_vllm_rules_skipped_when_vllm_is_disabled():
    req = request(vllm_enabled=False, vllm_quantization="awq", vllm_dtype="bfloat16", vllm_version="0.20.0")
    assert_passes(req, [v100_pcie_32gb()])


# --- helpers --------------------------------------------------------------------------


def test_parse_version():
    assert parse_version("0.5.4") == (0, 5, 4, 0)
    assert parse_version("0.5.3.post1") == (0, 5, 3, 1)
    assert parse_version("0.20") == (0, 20, 0, 0)
    assert parse_version("0.5.3.post1") < parse_version("0.5.4") < parse_version("0.19.1") < parse_version("0.20.0")
    assert parse_version("0.5.4rc1") is None and parse_version(None) is None


def test_min_compute_capability_ignores_unknown_cards():
    assert min_compute_capability([a100(0), v100_pcie_32gb(1), unknown_card(2)]) == (7, 0)
    assert min_compute_capability([unknown_card()]) is None
    assert min_compute_capability([]) is None


def test_unknown_cards_are_not_refused_by_capability_rules():
    req = request(nvidia_driver_flavor="open", llama_cpp_cuda_architectures="70")
    assert_passes(req, [unknown_card()])


# --- display cards beside the serving GPUs -------------------------------------------


def test_a_kepler_display_card_on_535_is_warned_about_not_refused():
    req = request(nvidia_driver_branch="535", cuda_toolkit_version="12.2")
    gpus = [geforce_gt_710(0), v100_pcie_32gb(1)]
    assert_passes(req, gpus)
    (warning,) = display_gpu_warnings(req, gpus)
    assert warning.startswith("GPU 0 (GeForce GT 710, 0000:01:00.0) is a display card, left out of the serving "
                              "GPUs and the CUDA build; nvidia_driver_branch=535 does not drive it: NVIDIA's last "
                              "branch for Kepler GPUs is 470.")
    assert "[source: VOLTA_FACTS.md, GPUs outside the catalogue" in warning
    assert warning in stack_warnings(req, gpus, "2026-06-01")


def test_a_display_card_the_branch_drives_gives_no_warning():
    assert display_gpu_warnings(request(), [geforce_gt_1030(0), v100_pcie_32gb(1)]) == []


def test_branch_590_with_a_pascal_display_card_beside_an_a100_warns_only():
    req = request(nvidia_driver_branch="590")
    gpus = [geforce_gt_1030(0), a100(1)]
    assert_passes(req, gpus)
    (warning,) = display_gpu_warnings(req, gpus)
    assert "nvidia_driver_branch=590 does not drive it: NVIDIA's last branch for Pascal GPUs is 580" in warning


def test_open_modules_with_a_pascal_display_card_beside_a_t4_warn_only():
    req = request(nvidia_driver_flavor="open")
    gpus = [geforce_gt_1030(0), tesla_t4(1)]
    assert messages(req, gpus, "nvidia_driver_flavor") == []
    (warning,) = display_gpu_warnings(req, gpus)
    assert "nvidia_driver_flavor=open does not drive it" in warning and "it is Pascal" in warning


def test_a_display_card_of_unknown_architecture_is_warned_about():
    (warning,) = display_gpu_warnings(request(), [display_card(unknown_card(0)), v100_pcie_32gb(1)])
    assert "its architecture is unknown (PCI id 10de:ffff), so whether nvidia_driver_branch=580 drives it" in warning


def test_a_display_card_does_not_limit_what_the_serving_gpus_may_run():
    # awq (7.5) and CUDA 13 are the T4's to run: the GT 1030 beside it (6.1) builds and serves nothing.
    gpus = [geforce_gt_1030(0), tesla_t4(1)]
    assert_passes(request(vllm_quantization="awq", cuda_toolkit_version="13.0", nvidia_driver_branch="580"), gpus)
    assert resolve_cuda_architectures(request(), gpus) == "75"
    # Unknown or not, a display card does not stop the list being derived.
    assert_passes(request(), [display_card(unknown_card(0)), v100_pcie_32gb(1)])


def test_a_display_card_named_on_purpose_is_accepted():
    assert_passes(request(llama_cpp_cuda_architectures="61;70"), [geforce_gt_1030(0), v100_pcie_32gb(1)])


def test_a_serving_kepler_card_is_refused_on_every_branch_the_toolkit_installs():
    message = refused_once(request(nvidia_driver_branch="535", cuda_toolkit_version="12.2"),
                           [tesla_k80(0), v100_pcie_32gb(1)], "nvidia_driver_branch")
    assert message.startswith("nvidia_driver_branch=535 cannot drive Tesla K80 (compute capability 3.7): NVIDIA's "
                              "last driver branch for Kepler GPUs is 470, and this toolkit installs 535, 550, 570, "
                              "575, 580")
    assert "Take the card out of the host" in message


def test_branch_590_on_a_kepler_and_a_volta_card_names_the_kepler_first():
    message = refused_once(request(nvidia_driver_branch="590"), [v100_pcie_32gb(0), tesla_k80(1)],
                           "nvidia_driver_branch")
    assert "Tesla K80" in message and "470" in message


@pytest.mark.parametrize("architecture", ["Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                                          "Qwen3_5ForConditionalGeneration", "Glm4ForCausalLM", "GptOssForCausalLM"])
def test_an_architecture_vllm_0_5_4_does_not_register_is_refused(architecture):
    message = refused_once(request(vllm_model_architecture=architecture), [v100_pcie_32gb()],
                           "vllm_model_architecture")
    assert message.startswith("vllm_model_architecture=%s is not a model vLLM 0.5.4 registers" % architecture)
    assert "Serve the model's GGUF with llama_server" in message and "Qwen2ForCausalLM" in message


def test_registered_architectures_pass_and_other_versions_are_not_judged():
    for architecture in ("Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM", ""):
        assert_passes(request(vllm_model_architecture=architecture), [v100_pcie_32gb()])
    # No registry known for 0.5.3.post1: nothing is refused for it.
    assert_passes(request(vllm_model_architecture="Gemma3ForCausalLM", vllm_version="0.5.3.post1",
                          python_version="3.11.2"), [v100_pcie_32gb()])


def test_gemma2_is_refused_below_compute_capability_8_0_only():
    gemma2 = request(vllm_model_architecture="Gemma2ForCausalLM")
    for gpus in ([v100_pcie_32gb()], [tesla_t4()]):
        message = refused_once(gemma2, gpus, "vllm_model_architecture")
        assert "uses the xformers attention backend, which refuses the model's attention logit soft-capping" \
            in message
    assert_passes(gemma2, [a100()])
