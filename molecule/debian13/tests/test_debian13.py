"""Debian 13: the Volta stack from Debian's own archive, through the roles, without a GPU.

Real: Debian 13's apt and archive, its 550 driver (nvidia-graphics-drivers
550.163.01) with the DKMS module built for Debian 13's kernel, its CUDA 12.4.1
(nvidia-cuda-toolkit 12.4.131) and a llama.cpp built with that nvcc for sm_70.
STANDS IN: the optimization levels of that build (cicc -O1 and g++ -O1
instead of a user's defaults: molecule.yml); the llama.cpp archive (the real
tree at commit 0c1e57098, from the llama-cpp-python 0.3.36 sdist on PyPI,
served on the container's own 127.0.0.1:8767 for GitHub's). The build is exported to the controller for the
second host. Not shown (no GPU, no kernel of the container's
own): the module loading, llama-server on a device, serving.
"""
import hashlib
import json
import os
import re

import pytest

# The second host, which installs this one's export: test_debian13_runtime.py.
testinfra_hosts = ["ansible://v100-debian13"]

DRIVER = "550.163.01-2"
TOOLKIT = "12.4.131~12.4.1-2"
CURRENT = "/opt/llama.cpp/current"
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"


def _stamp(host):
    return json.loads(host.file(CURRENT + "/build-stamp.json").content_string)


def _boot_kernel(host):
    """The ABI of the Debian kernel installed (linux-image-amd64's), e.g. 6.12.57+deb13-amd64."""
    return host.check_output("ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n1")


def test_nouveau_is_blacklisted_as_kmod_reads_it(host):
    # Debian 13's kmod parses it; the container has no initramfs of its own (the nouveau scenario says more).
    lines = [line for line in host.file("/etc/modprobe.d/blacklist-nouveau.conf").content_string.splitlines()
             if not line.startswith("#")]
    assert lines == ["blacklist nouveau", "options nouveau modeset=0"]
    shown = host.check_output("modprobe --showconfig")
    assert "blacklist nouveau" in shown and "options nouveau modeset=0" in shown


def test_debians_non_free_is_added_beside_the_installs_main(host):
    for suite in ("trixie", "trixie-updates", "trixie-security"):
        source = host.file(f"/etc/apt/sources.list.d/v100-llm-debian-{suite}.sources")
        assert source.is_file, suite
        assert "Components: contrib non-free non-free-firmware" in source.content_string, suite
    assert "Components: main" in host.file("/etc/apt/sources.list.d/debian.sources").content_string


def test_the_550_driver_is_installed_held_and_built_for_debians_kernel(host):
    for name in ("nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-cfg1"):
        assert host.package(name).version == DRIVER, name
    held = host.check_output("apt-mark showhold").split()
    assert "nvidia-kernel-dkms" in held and "libcuda1" in held
    # Debian's CUDA toolkit is nvidia-* too, but not the driver's: it keeps its updates.
    assert not {"nvidia-cuda-toolkit", "nvidia-cuda-dev", "libnvidia-ml-dev"} & set(held), held
    status = host.check_output("dkms status")
    kernel = _boot_kernel(host)
    assert re.search(r"nvidia-current/550\.163\.01, %s, x86_64: installed" % re.escape(kernel), status), status
    assert host.file(f"/lib/modules/{kernel}/updates/dkms/nvidia-current.ko.xz").exists \
        or host.file(f"/lib/modules/{kernel}/updates/dkms/nvidia-current.ko").exists


def test_debians_cuda_12_4_is_the_toolkit(host):
    assert host.package("nvidia-cuda-toolkit").version == TOOLKIT
    shown = host.check_output("/usr/bin/nvcc --version")
    assert "release 12.4, V12.4.131" in shown
    # NVIDIA's layout is not made up for Debian's toolkit.
    assert not host.file("/usr/local/cuda").exists
    assert not host.file("/etc/profile.d/cuda.sh").exists


def test_llama_server_carries_sm_70_machine_code(host):
    listing = host.check_output(f"/usr/bin/cuobjdump --list-elf --list-ptx {CURRENT}/bin/llama-server")
    cubins = re.findall(r"^ELF file +\d+: .*\.sm_(\d+)\.cubin$", listing, re.M)
    ptx = re.findall(r"^PTX file +\d+: .*\.sm_(\d+)\.ptx$", listing, re.M)
    assert cubins and set(cubins) == {"70"}, sorted(set(cubins))
    assert ptx and set(ptx) == {"70"}, sorted(set(ptx))


def test_llama_server_links_cublas_and_runs(host):
    linked = host.check_output(f"ldd {CURRENT}/bin/llama-server")
    for library in ("libcublas.so.12", "libcudart.so.12", "libcuda.so.1"):
        assert re.search(r"%s => /\S+" % re.escape(library), linked), linked
    assert "not found" not in linked
    shown = host.run(f"{CURRENT}/bin/llama-server --version")
    assert shown.rc == 0, shown.stderr
    assert COMMIT[:7] in shown.stdout + shown.stderr


def test_the_stamp_records_the_cuda_build(host):
    stamp = _stamp(host)
    assert stamp["backend"] == "cuda"
    assert stamp["cuda_architectures"] == "70"
    assert stamp["nvcc"] == "release 12.4, V12.4.131"
    assert stamp["compiler"].startswith("c++ (Debian 14")
    # Debian 13's g++ is 14; nvcc 12.4 accepts 13 at most, and the role named g++-13 itself.
    for argument in ("-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=70", "-DGGML_NATIVE=OFF",
                     "-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++-13"):
        assert argument in stamp["cmake_args"], argument


@pytest.mark.parametrize("folder", ["/var/cache/llama.cpp/llama.cpp-src", "/var/cache/llama.cpp/llama.cpp-build",
                                    "/var/cache/llama.cpp/llama.cpp-tree"])
def test_the_build_folders_are_gone(host, folder):
    assert not host.file(folder).exists and not host.file(folder).is_symlink


def test_the_build_is_exported_to_the_controller_with_its_sha256(host):
    name = host.file(CURRENT).linked_to.rsplit("/", 1)[1]
    exported = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "llama.cpp-export", name + ".tar.gz")
    with open(exported, "rb") as archive:
        digest = hashlib.sha256(archive.read()).hexdigest()
    with open(exported + ".sha256", encoding="utf-8") as listed:
        assert listed.read() == "%s  %s.tar.gz\n" % (digest, name)
    # The host keeps the current export only, and nothing half-written.
    assert host.check_output("ls /var/cache/llama.cpp/artifacts").split() == [name + ".tar.gz"]
    assert host.file(f"/var/cache/llama.cpp/artifacts/{name}.tar.gz").sha256sum == digest
