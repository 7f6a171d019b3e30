"""The llama_cpp role's build plan: CUDA architectures, CMake arguments and the
build stamp that decides whether a build is needed (plugins/module_utils/llama/build.py).

No nvcc and no GPU here: these are the configure-only checks that a CUDA build
would target sm_70 on a V100 and that a host without GPUs gets a CPU build.
"""
from __future__ import annotations

import sys

import pytest
from ansible_collections.v100.llm.plugins.module_utils.llama.build import (
    architectures_from_gpus,
    build_plan,
    build_stamp,
    cmake_args,
    cuda_host_compiler,
    missing_gpu_code,
    nccl_choice,
    nccl_versions,
    nccl_wanted,
    normalize_architectures,
    refused_extra_args,
    resolve_architectures,
    stamp_hash,
)

from conftest import PROJECT_ROOT


from ansible_collections.v100.llm.plugins.filter.llama import FilterModule  # noqa: E402

V100 = {"index": 0, "name": "Tesla V100-PCIE-32GB", "pci_device_id": "10de:1db6", "compute_capability": "7.0"}
RTX4090 = {"index": 1, "name": "NVIDIA GeForce RTX 4090", "pci_device_id": "10de:2684", "compute_capability": "8.9"}
UNKNOWN = {"index": 2, "name": "?", "pci_device_id": "10de:ffff", "compute_capability": None}
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
SHA = "ab" * 32


def _plan(**overrides):
    inputs = {
        "requested_architectures": "", "preflight_architectures": None, "gpus": [],
        "source_sha256": SHA, "version": "b0c1e570", "build_number": None, "commit": COMMIT,
        "fa_all_quants": False, "ccache": True, "extra_args": [],
        "targets": ["llama-server", "llama-cli", "llama-bench", "llama-quantize"],
        "compiler": "x86_64-linux-gnu 12.2.0", "nvcc": "", "prefix": "/opt/llama.cpp",
    }
    inputs.update(overrides)
    return build_plan(inputs)


def test_v100_archs_give_a_cuda_build_for_sm_70():
    args = cmake_args("70")
    assert "-DGGML_CUDA=ON" in args
    assert "-DCMAKE_CUDA_ARCHITECTURES=70" in args
    assert "-DGGML_NATIVE=OFF" in args
    assert "-DGGML_CUDA=OFF" not in args


def test_no_archs_and_no_gpus_give_a_cpu_build():
    plan = _plan(requested_architectures="", gpus=[])
    assert plan["cuda"] is False
    assert "-DGGML_CUDA=OFF" in plan["cmake_args"]
    assert not [arg for arg in plan["cmake_args"] if arg.startswith("-DCMAKE_CUDA_ARCHITECTURES")]
    assert plan["stamp"]["backend"] == "cpu"


def test_v100_facts_derive_70_when_nothing_is_set():
    plan = _plan(gpus=[V100, dict(V100, index=1)])
    assert plan["cuda_architectures"] == "70"
    assert "-DCMAKE_CUDA_ARCHITECTURES=70" in plan["cmake_args"]
    assert plan["stamp"]["backend"] == "cuda"


def test_preflight_result_wins_over_the_raw_gpu_facts():
    assert resolve_architectures("", "70", [RTX4090]) == "70"
    # preflight ran and found no GPU: CPU build even if facts say otherwise
    assert resolve_architectures("", "", [V100]) == ""
    assert resolve_architectures("", None, [V100]) == "70"


def test_explicit_value_wins_and_is_normalised():
    assert resolve_architectures(" 70, 80 ", "70", [V100]) == "70;80"
    assert normalize_architectures("70-real;89") == "70-real;89"


@pytest.mark.parametrize("value", ["sm_70", "7.0", "70 80", "compute_70"])
def test_malformed_architectures_are_refused(value):
    with pytest.raises(ValueError):
        normalize_architectures(value)
    plan = FilterModule().filters()["llama_cpp_build_plan"]({"requested_architectures": value})
    assert "not a CUDA architecture" in plan["error"]


def test_mixed_and_unknown_gpus():
    assert architectures_from_gpus([RTX4090, V100, UNKNOWN]) == "70;89"
    assert architectures_from_gpus(None) == ""


def test_a_display_card_kept_out_of_serving_is_not_built_for():
    gt1030 = {"index": 0, "name": "GeForce GT 1030", "pci_device_id": "10de:1d01", "compute_capability": "6.1",
              "display": True, "serving": False}
    assert architectures_from_gpus([gt1030, dict(V100, index=1)]) == "70"
    assert resolve_architectures("", None, [gt1030, V100]) == "70"
    assert resolve_architectures("61;70", None, [gt1030, V100]) == "61;70"  # on purpose


def test_build_number_commit_and_fa_quants():
    args = cmake_args("70", build_number="7000", commit=COMMIT, fa_all_quants=True)
    assert "-DLLAMA_BUILD_NUMBER=7000" in args
    assert "-DLLAMA_BUILD_COMMIT=" + COMMIT in args
    assert "-DGGML_CUDA_FA_QUANTS=all" in args
    assert "-DGGML_CUDA_FA_ALL_QUANTS=ON" not in args  # the deprecated alias
    # a list of K-V pairs, not a switch: "OFF" fails CMake ("must not be empty"), so the default stays
    assert not [arg for arg in cmake_args("70") if "FA_QUANTS" in arg]
    assert not [arg for arg in cmake_args("") if "FA_QUANTS" in arg]


def test_static_libraries_and_no_ui_download():
    args = cmake_args("")
    assert "-DBUILD_SHARED_LIBS=OFF" in args
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in args
    assert not [arg for arg in args if "CUBLAS" in arg or "GGML_CUDA_F16" in arg or "LLAMA_CURL" in arg]


def test_extra_args_come_last_and_refused_ones_are_named():
    assert cmake_args("", extra_args=["-DGGML_AVX512=ON"])[-1] == "-DGGML_AVX512=ON"
    refused = refused_extra_args(["-DLLAMA_CUBLAS=ON", "-DGGML_CUDA_F16=ON", "-DGGML_CUDA_FA_ALL_QUANTS=ON",
                                  "-DCMAKE_CUDA_ARCHITECTURES:STRING=80", "-DGGML_AVX512=ON"])
    assert len(refused) == 4
    assert refused[0].startswith("-DLLAMA_CUBLAS=ON: a fatal error")
    assert FilterModule().filters()["llama_cpp_refused_args"](["-DGGML_AVX512=ON"]) == []


def test_same_inputs_same_stamp_and_folder():
    first, second = _plan(), _plan()
    assert first["stamp"] == second["stamp"]
    assert first["install_dir"] == second["install_dir"] == "/opt/llama.cpp/b0c1e570-" + first["hash"]
    assert len(first["hash"]) == 10


@pytest.mark.parametrize("change", [
    {"source_sha256": "cd" * 32},
    {"compiler": "x86_64-linux-gnu 13.2.0"},
    {"requested_architectures": "70"},
    {"extra_args": ["-DGGML_AVX512=ON"]},
    {"targets": ["llama-server"]},
    {"version": "b7000"},
    {"build_number": 7000},
])
def test_any_input_that_matters_changes_the_stamp(change):
    assert _plan(**change)["hash"] != _plan()["hash"]


def test_ccache_does_not_change_the_stamp():
    assert _plan(ccache=False)["hash"] == _plan(ccache=True)["hash"]
    assert "-DGGML_CCACHE=OFF" in _plan(ccache=False)["cmake_args"]


def test_nvcc_counts_only_for_cuda_builds():
    assert _plan(nvcc="12.4.131")["hash"] == _plan()["hash"]
    cuda = _plan(requested_architectures="70", nvcc="12.4.131")
    assert cuda["stamp"]["nvcc"] == "12.4.131"
    assert cuda["hash"] != _plan(requested_architectures="70", nvcc="12.2.140")["hash"]


def test_stamp_fields():
    stamp = build_stamp(SHA.upper(), "b0c1e570", ["-DGGML_CCACHE=ON", "-DGGML_CUDA=OFF"], ["b", "a"],
                        "gcc 12", commit=COMMIT, build_number="1")
    assert stamp == {
        "format": 1, "version": "b0c1e570", "commit": COMMIT, "build_number": 1, "source_sha256": SHA,
        "backend": "cpu", "cuda_architectures": "", "nvcc": "", "compiler": "gcc 12",
        "cmake_args": ["-DGGML_CUDA=OFF"], "targets": ["a", "b"],
    }
    assert stamp_hash(stamp) == stamp_hash(dict(reversed(list(stamp.items()))))


# `apt-cache madison libnccl-dev` on a host with NVIDIA's CUDA repository beside Ubuntu's own NCCL (noble's
# multiverse libnccl-dev 2.18.3, packages.ubuntu.com): NVIDIA's versions name the CUDA release they were built
# for (libnccl2=2.21.5-1+cuda12.4 in NVIDIA's CUDA 12.4.1 container images).
MADISON = """\
libnccl-dev | 2.23.4-1+cuda12.6 | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  Packages
libnccl-dev | 2.22.3-1+cuda12.5 | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  Packages
libnccl-dev | 2.21.5-1+cuda12.4 | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  Packages
libnccl-dev | 2.20.5-1+cuda12.4 | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  Packages
libnccl-dev | 2.21.5-1+cuda12.2 | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  Packages
libnccl-dev | 2.18.3-1 | http://archive.ubuntu.com/ubuntu noble/multiverse amd64 Packages
"""


@pytest.mark.parametrize("setting, cuda, gpus, wanted, error", [
    ("auto", True, 2, True, ""),
    ("auto", True, 1, False, ""),
    ("auto", False, 2, False, ""),
    (True, True, 1, True, ""),
    (False, True, 2, False, ""),
    ("true", True, 1, True, ""),
    ("no", True, 2, False, ""),
    (True, False, 2, False, "llama_cpp_nccl=true needs a CUDA build"),
    ("yes please", True, 2, False, "llama_cpp_nccl=yes please must be auto, true or false"),
])
def test_nccl_by_default_for_a_cuda_build_serving_with_two_gpus(setting, cuda, gpus, wanted, error):
    decision = nccl_wanted(setting, cuda, gpus)
    assert decision["wanted"] == wanted and decision["error"].startswith(error) and bool(decision["error"]) == bool(error)
    # Only true insists on it; auto builds without NCCL where the apt sources have none.
    assert decision["required"] == (wanted and setting in (True, "true"))


def test_nccl_is_nvidias_build_for_the_toolkits_cuda_release():
    assert nccl_versions(MADISON)[:2] == ["2.23.4-1+cuda12.6", "2.22.3-1+cuda12.5"]
    assert "2.18.3-1" not in nccl_versions(MADISON)
    # The newest built for CUDA 12.4, not apt's newest (a +cuda12.6 build beside a 12.4 toolkit).
    assert nccl_choice(MADISON, "", "12.4")["version"] == "2.21.5-1+cuda12.4"
    # One installed for the same release stays (a newer NCCL published later rebuilds nothing).
    assert nccl_choice(MADISON, "2.20.5-1+cuda12.4", "12.4")["version"] == "2.20.5-1+cuda12.4"
    # One installed for another CUDA 12 release stays too: every CUDA 12 NCCL carries sm_70 and links its runtime
    # statically (NVIDIA/nccl makefiles/common.mk, src/Makefile), so an owner's newer build is not downgraded.
    assert nccl_choice(MADISON, "2.22.3-1+cuda12.5", "12.4")["version"] == "2.22.3-1+cuda12.5"
    # None for the toolkit's release: the newest for its major release.
    assert nccl_choice(MADISON, "", "12.8")["version"] == "2.23.4-1+cuda12.6"
    # A CUDA 13 build has no sm_70 kernels: never chosen, never kept.
    cuda13 = MADISON + "libnccl-dev | 2.28.3-1+cuda13.0 | https://developer.download.nvidia.com/x  Packages\n"
    assert nccl_choice(cuda13, "2.28.3-1+cuda13.0", "12.4")["version"] == "2.21.5-1+cuda12.4"
    # No nvcc yet (check mode on a fresh host): nothing chosen, nothing refused.
    assert nccl_choice(MADISON, "", "") == {"version": "", "warning": "", "error": ""}


def test_nccl_refusals_name_what_the_sources_have():
    only_13 = "libnccl-dev | 2.28.3-1+cuda13.0 | https://developer.download.nvidia.com/x  Packages\n"
    none = nccl_choice(only_13, "", "12.4")
    assert none["version"] == "" and none["error"].startswith(
        "no libnccl-dev built for CUDA 12.x in this host's apt sources (built for CUDA 13.0). NCCL comes from "
        "NVIDIA's CUDA repository (role nvidia_cuda_repo)")
    assert "Set llama_cpp_nccl: false or auto" in none["error"]
    # auto builds without it, saying so.
    quiet = nccl_choice(only_13, "", "12.4", required=False)
    assert quiet["version"] == "" and quiet["error"] == "" and "building without it" in quiet["warning"]
    assert "none at all" in nccl_choice("", "", "12.4")["error"]
    assert nccl_choice(MADISON, "", "12.4", "2.21")["error"].startswith(
        "llama_cpp_nccl_version=2.21 is not an NVIDIA NCCL package version")
    assert "they have: 2.23.4-1+cuda12.6" in nccl_choice(MADISON, "", "12.4", "2.19.3-1+cuda12.4")["error"]
    other = nccl_choice(MADISON, "", "12.4", "2.22.3-1+cuda12.5")
    assert other == {"version": "2.22.3-1+cuda12.5", "error": "", "warning": ""}
    for release in ("12.4", ""):
        volta_less = nccl_choice(MADISON, "", release, "2.28.3-1+cuda13.0")
        assert volta_less["version"] == "" and volta_less["error"].startswith(
            "llama_cpp_nccl_version=2.28.3-1+cuda13.0 was built for CUDA 13.0, and llama.cpp is built with CUDA 12")
        assert "no kernels for the V100's sm_70" in volta_less["error"]


def test_an_nccl_build_says_so_in_its_flags_and_stamp_and_others_keep_their_stamps():
    with_nccl = _plan(requested_architectures="70", nccl="2.21.5-1+cuda12.4")
    assert "-DGGML_CUDA_NCCL=ON" in with_nccl["cmake_args"] and with_nccl["stamp"]["nccl"] == "2.21.5-1+cuda12.4"
    without = _plan(requested_architectures="70")
    # Off, not left to ggml's default (on, linking any libnccl-dev the host has).
    assert "nccl" not in without["stamp"] and "-DGGML_CUDA_NCCL=OFF" in without["cmake_args"]
    assert _plan(requested_architectures="", nccl="2.21.5-1+cuda12.4")["cmake_args"] == _plan()["cmake_args"]
    assert not any("NCCL" in arg for arg in _plan()["cmake_args"])
    assert refused_extra_args(["-DGGML_CUDA_NCCL=OFF"]) == [
        "-DGGML_CUDA_NCCL=OFF: set from llama_cpp_nccl"]


# --- the GPU code a build carries (cuobjdump), checked without a GPU ---------------

RECORDED_SM70_SM80 = (PROJECT_ROOT / "tests" / "fixtures" / "debian13"
                      / "cuobjdump-list-elf-list-ptx_sm70-sm80-example_cuda12.4.txt").read_text()


def test_the_role_s_sm_70_build_carries_machine_code_and_ptx_for_70_only():
    listing = (PROJECT_ROOT / "tests" / "fixtures" / "debian13"
               / "cuobjdump-list-elf-list-ptx_llama-server_0c1e570_sm70_cuda12.4.txt").read_text()
    assert missing_gpu_code(listing, "70") == []
    assert missing_gpu_code(listing, "70;75-real") == ["75-real (no sm_75 machine code)"]


def test_gpu_code_of_each_architecture_is_found():
    assert missing_gpu_code(RECORDED_SM70_SM80, "70") == []
    assert missing_gpu_code(RECORDED_SM70_SM80, "70-real;80-real") == []
    assert missing_gpu_code(RECORDED_SM70_SM80, "70-virtual") == []


def test_missing_gpu_code_is_named():
    # Built for "70;80-real": no compute_80 PTX, nothing for 75.
    assert missing_gpu_code(RECORDED_SM70_SM80, "70;80;75-real") == [
        "80 (no compute_80 PTX)", "75-real (no sm_75 machine code)"]
    assert missing_gpu_code("", "70") == ["70 (no sm_70 machine code and no compute_70 PTX)"]
    # A CPU-only binary: cuobjdump says "does not contain device code" (exit 255).
    assert missing_gpu_code("cuobjdump info    : File 'llama-server' does not contain device code", "70-real") == [
        "70-real (no sm_70 machine code)"]


def test_a_compressed_fatbinary_lists_the_same_names():
    # llama.cpp builds with -compress-mode for CUDA >= 12.8; recorded with CUDA 13.0's nvcc and cuobjdump.
    compressed = (PROJECT_ROOT / "tests" / "fixtures" / "recorded"
                  / "cuobjdump-list-elf-list-ptx_compress-mode-size_sm90-sm80_cuda13.0.txt").read_text()
    assert missing_gpu_code(compressed, "90;80-real") == []
    assert missing_gpu_code(compressed, "80") == ["80 (no compute_80 PTX)"]


def test_architectures_without_a_fixed_number_are_not_checked():
    assert missing_gpu_code("", "native") == []
    assert missing_gpu_code("", "all-major") == []


# --- the host compiler nvcc accepts ---------------------------------------------------

TRIXIE_GXX = (PROJECT_ROOT / "tests" / "fixtures" / "debian13" / "apt-cache-pkgnames_g++-_trixie.txt").read_text()
TRIXIE_CXX = "c++ (Debian 14.2.0-19) 14.2.0"
BOOKWORM_CXX = "c++ (Debian 12.2.0-14+deb12u1) 12.2.0"  # this machine's
NVCC_12_4 = "release 12.4, V12.4.131"


def test_a_default_gcc_newer_than_nvcc_accepts_gets_the_newest_it_accepts():
    # nvcc 12.4 accepts GCC 13 at most (crt/host_config.h); Debian 13's default is 14, and apt has 12, 13, 14.
    assert cuda_host_compiler(NVCC_12_4, TRIXIE_CXX, TRIXIE_GXX.splitlines()) == {
        "path": "/usr/bin/g++-13", "package": "g++-13", "error": ""}
    # nvcc 12.9 accepts 14: the default stays.
    assert cuda_host_compiler("release 12.9, V12.9.86", TRIXIE_CXX, TRIXIE_GXX.splitlines())["path"] == ""


def test_an_accepted_default_or_unknown_versions_need_no_host_compiler():
    assert cuda_host_compiler(NVCC_12_4, BOOKWORM_CXX, TRIXIE_GXX.splitlines())["path"] == ""
    assert cuda_host_compiler("", TRIXIE_CXX, TRIXIE_GXX.splitlines())["path"] == ""
    assert cuda_host_compiler(NVCC_12_4, "clang version 19.1.7", TRIXIE_GXX.splitlines())["path"] == ""


def test_no_g_plus_plus_old_enough_is_an_error_that_says_what_to_do():
    chosen = cuda_host_compiler("release 12.2, V12.2.140", TRIXIE_CXX, ["g++-13", "g++-14", "g++-13-multilib"])
    assert chosen["path"] == "" and chosen["error"].startswith(
        "nvcc 12.2 accepts GCC 12 at most, the host's c++ is GCC 14, and apt knows no g++-12 or older "
        "(apt-cache pkgnames g++-: g++-14, g++-13)")
    assert "-DCMAKE_CUDA_HOST_COMPILER=<path>" in chosen["error"]


def test_the_plan_passes_the_host_compiler_to_cmake_unless_the_user_named_one():
    inputs = dict(requested_architectures="70", compiler=TRIXIE_CXX, nvcc=NVCC_12_4,
                  gxx_packages=TRIXIE_GXX.splitlines())
    plan = _plan(**inputs)
    assert "-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++-13" in plan["cmake_args"]
    assert "-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++-13" in plan["stamp"]["cmake_args"]
    assert plan["cuda_host_compiler"]["package"] == "g++-13"
    own = _plan(extra_args=["-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/clang++-16"], **inputs)
    assert [arg for arg in own["cmake_args"] if "HOST_COMPILER" in arg] == [
        "-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/clang++-16"]
    typed = _plan(extra_args=["-DCMAKE_CUDA_HOST_COMPILER:FILEPATH=/usr/bin/g++-12"], **inputs)
    assert [arg for arg in typed["cmake_args"] if "HOST_COMPILER" in arg] == [
        "-DCMAKE_CUDA_HOST_COMPILER:FILEPATH=/usr/bin/g++-12"]
    assert _plan(**dict(inputs, requested_architectures=""))["cuda_host_compiler"]["path"] == ""
