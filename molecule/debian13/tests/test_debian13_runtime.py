"""Debian 13, a second host of the fleet: the build the first host exported,
installed without building.

Real: the archive the llama_cpp role exported on v100-debian13 (its sm_70
llama.cpp built with Debian's CUDA 12.4.1), Debian 13's apt and runtime
packages. STANDS IN (prepare.yml): libcuda1, libcudart12 and libcublas12
installed by hand for what roles nvidia_driver and cuda_toolkit give a
serving host, without their compilers. Not shown (no GPU): llama-server on a
device.
"""
import json
import os
import re

import testinfra

testinfra_hosts = ["ansible://v100-debian13-runtime"]

CURRENT = "/opt/llama.cpp/current"
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def _builder():
    return testinfra.get_host("ansible://v100-debian13", ansible_inventory=os.environ["MOLECULE_INVENTORY_FILE"])


def test_nothing_here_can_compile_it(host):
    for tool in ("g++", "c++", "gcc", "cc", "cmake", "nvcc", "ccache"):
        assert not host.exists(tool), tool
    assert not host.file("/usr/bin/nvcc").exists


def test_the_same_build_is_current_here_as_on_the_build_host(host):
    builder = _builder()
    assert host.file(CURRENT).linked_to == builder.file(CURRENT).linked_to
    stamp = json.loads(host.file(CURRENT + "/build-stamp.json").content_string)
    assert stamp == json.loads(builder.file(CURRENT + "/build-stamp.json").content_string)
    assert stamp["cuda_architectures"] == "70" and stamp["nvcc"] == "release 12.4, V12.4.131"
    assert stamp["targets"] == ["llama-server"]  # molecule.yml: the target these tests run
    for binary in stamp["targets"]:
        path = f"{CURRENT}/bin/{binary}"
        assert host.file(path).sha256sum == builder.file(path).sha256sum, binary
        assert host.file(path).user == "root" and host.file(path).mode == 0o755, binary


def test_it_runs_with_the_runtime_libraries_alone(host):
    linked = host.check_output(f"ldd -r {CURRENT}/bin/llama-server")
    for library in ("libcublas.so.12", "libcudart.so.12", "libcuda.so.1", "libgomp.so.1"):
        assert re.search(r"%s => /\S+" % re.escape(library), linked), linked
    assert "not found" not in linked and "undefined symbol" not in linked
    shown = host.run(f"{CURRENT}/bin/llama-server --version")
    assert shown.rc == 0, shown.stderr
    assert COMMIT[:7] in shown.stdout + shown.stderr


def test_no_copy_of_the_archive_is_left(host):
    assert host.check_output("ls -A /var/cache/llama.cpp/downloads") == ""
    assert not host.file("/var/cache/llama.cpp/artifacts").exists
