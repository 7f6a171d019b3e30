"""Reading the CUDA release from real recorded `nvcc --version` outputs."""
from __future__ import annotations

import sys

import pytest
from ansible_collections.v100.llm.plugins.module_utils.driver.cuda_version import nvcc_full_version, nvcc_release

from conftest import PROJECT_ROOT, RECORDED


from ansible_collections.v100.llm.plugins.filter.driver import FilterModule  # noqa: E402

RECORDINGS = sorted(RECORDED.glob("nvcc--version_*.txt"))


@pytest.mark.parametrize(("name", "release", "version"), [
    ("nvcc--version_cuda12.1_V12.1.105.txt", "12.1", "12.1.105"),
    ("nvcc--version_cuda12.4_V12.4.131.txt", "12.4", "12.4.131"),
])
def test_real_recorded_outputs(name, release, version):
    text = (RECORDED / name).read_text()
    assert nvcc_release(text) == release
    assert nvcc_full_version(text) == version


def test_every_recording_in_the_project_parses_and_matches_its_file_name():
    assert len(RECORDINGS) >= 2
    for path in RECORDINGS:
        # nvcc--version_cuda12.4_V12.4.131.txt
        _, cuda, full = path.stem.split("_")
        assert nvcc_release(path.read_text()) == cuda.removeprefix("cuda")
        assert nvcc_full_version(path.read_text()) == full.removeprefix("V")


def test_the_build_line_is_not_taken_for_the_release():
    # "Build cuda_12.4.r12.4/..." also carries 12.4; only the release line counts.
    text = "Build cuda_12.9.r12.9/compiler.1_0\n"
    assert nvcc_release(text) is None


def test_two_digit_minor_is_not_truncated():
    text = "Cuda compilation tools, release 12.10, V12.10.7\n"
    assert nvcc_release(text) == "12.10"


@pytest.mark.parametrize("text", [
    "",
    None,
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "bash: nvcc: command not found",
    "nvcc fatal   : No input files specified; use option --help for more information",
])
def test_no_release_gives_none(text):
    assert nvcc_release(text) is None
    assert nvcc_full_version(text) is None


def test_windows_line_endings():
    text = (RECORDED / "nvcc--version_cuda12.4_V12.4.131.txt").read_text().replace("\n", "\r\n")
    assert nvcc_release(text) == "12.4"


def test_the_filter_exposes_the_same_function():
    nvcc_release_filter = FilterModule().filters()["nvcc_release"]
    text = (RECORDED / "nvcc--version_cuda12.1_V12.1.105.txt").read_text()
    assert nvcc_release_filter(text) == "12.1"
