"""driver_plan: kernel flavours, the packages that keep the module building, the kernel GRUB boots next."""
from __future__ import annotations

import pytest

from conftest import RECORDED

from ansible_collections.v100.llm.plugins.module_utils.driver.plan import (
    boot_default_kernel,
    driver_packages,
    grub_default,
    headers_meta_behind_image,
    image_flavours,
    kernel_flavour,
    kernel_packages,
    kernels_needing_module,
    parse_apt_policy,
    source_error,
    uses_dkms,
)


@pytest.mark.parametrize("distribution, version, kernel, installed, flavour", [
    # Debian 12: the archive's ABIs (bookworm 6.1.0-50, bookworm-security 6.1.0-57) and backports' form.
    ("Debian", "12", "6.1.0-57-amd64", ["amd64"], "amd64"),
    ("Debian", "12", "6.1.0-57-cloud-amd64", ["cloud-amd64"], "cloud-amd64"),
    ("Debian", "12", "6.12.95+deb12-amd64", ["amd64"], "amd64"),
    # Ubuntu: GA and HWE share the "generic" suffix; the installed meta or the series tells them apart.
    ("Ubuntu", "22.04", "5.15.0-91-generic", ["generic"], "generic"),
    ("Ubuntu", "22.04", "6.8.0-45-generic", ["generic-hwe-22.04"], "generic-hwe-22.04"),
    ("Ubuntu", "22.04", "6.8.0-45-generic", [], "generic-hwe-22.04"),
    ("Ubuntu", "24.04", "6.8.0-45-generic", [], "generic"),
    ("Ubuntu", "24.04", "7.0.0-29-generic", ["generic-hwe-24.04"], "generic-hwe-24.04"),
    # linux-image-virtual runs a generic kernel.
    ("Ubuntu", "24.04", "6.8.0-45-generic", ["virtual"], "generic"),
    ("Ubuntu", "24.04", "6.8.0-1015-aws", ["aws"], "aws"),
    # A kernel the distribution did not build (this CI machine's).
    ("Debian", "12", "6.18.44-fc-v669", [], None),
])
def test_kernel_flavour(distribution, version, kernel, installed, flavour):
    assert kernel_flavour(distribution, version, kernel, installed) == flavour


def test_image_flavours_keep_only_meta_packages():
    installed = ["linux-image-6.1.0-57-amd64", "linux-image-amd64", "linux-image-unsigned-6.8.0-45-generic",
                 "linux-image-generic-hwe-22.04", "linux-image-amd64-dbg", "linux-headers-amd64"]
    assert image_flavours(installed) == ["amd64", "generic-hwe-22.04"]


# What apt had on Debian 12 on 2026-12-01 (bookworm 6.1.0-47/-50, bookworm-security -48 to -57).
DEBIAN_APT = {"linux-headers-amd64", "linux-image-amd64", "linux-headers-6.1.0-50-amd64",
              "linux-headers-6.1.0-57-amd64"}


def test_dkms_path_installs_the_headers_meta_and_the_running_kernels_headers():
    plan = kernel_packages("amd64", "6.1.0-57-amd64", "6.1.0-57-amd64", True, 535, DEBIAN_APT, ["amd64"])
    assert plan == {"packages": ["linux-headers-amd64", "linux-headers-6.1.0-57-amd64"], "upgrade": False,
                    "error": None}


def test_the_boot_kernels_headers_too_when_it_is_not_the_running_one():
    plan = kernel_packages("amd64", "6.1.0-50-amd64", "6.1.0-57-amd64", True, 535, DEBIAN_APT, ["amd64"])
    assert plan["packages"] == ["linux-headers-amd64", "linux-headers-6.1.0-50-amd64", "linux-headers-6.1.0-57-amd64"]


def test_an_old_kernel_with_a_newer_one_installed_needs_no_new_kernel():
    plan = kernel_packages("amd64", "6.1.0-28-amd64", "6.1.0-57-amd64", True, 535, DEBIAN_APT, ["amd64"])
    assert plan == {"packages": ["linux-headers-amd64", "linux-headers-6.1.0-57-amd64"], "upgrade": False,
                    "error": None}


def test_an_old_kernel_alone_brings_the_image_meta_to_the_current_kernel():
    # The image meta is installed at the old ABI: "present" would leave it there.
    plan = kernel_packages("amd64", "6.1.0-28-amd64", "6.1.0-28-amd64", True, 535, DEBIAN_APT, ["amd64"])
    assert plan == {"packages": ["linux-image-amd64", "linux-headers-amd64"], "upgrade": True, "error": None}


def test_a_kernel_kept_by_hand_is_refused_not_replaced():
    plan = kernel_packages("amd64", "6.1.0-28-amd64", "6.1.0-28-amd64", True, 535, DEBIAN_APT, [])
    assert plan["packages"] == [] and plan["error"].startswith(
        "apt has no linux-headers-6.1.0-28-amd64 for the running kernel 6.1.0-28-amd64 and the host does not "
        "follow the linux-image-amd64 meta")
    assert "nvidia_driver_kernel_packages" in plan["error"]


def test_a_flavour_without_metas_in_apt_is_refused():
    # Proxmox VE: uname 6.8.12-4-pve; its headers are proxmox-default-headers, there is no linux-headers-pve.
    assert kernel_flavour("Debian", "12", "6.8.12-4-pve", ["pve"]) == "pve"
    plan = kernel_packages("pve", "6.8.12-4-pve", "6.8.12-4-pve", True, 535, {"proxmox-default-headers"}, ["pve"])
    assert plan["error"].startswith("apt has no linux-headers-pve, the meta package of the running kernel's flavour")
    assert "nvidia_driver_kernel_packages (e.g. [linux-headers-6.8.12-4-pve])" in plan["error"]


def test_ubuntu_prebuilt_modules_follow_the_flavour():
    available = {"linux-modules-nvidia-580-server-generic-hwe-22.04", "linux-modules-nvidia-580-server-6.8.0-45-generic"}
    plan = kernel_packages("generic-hwe-22.04", "6.8.0-45-generic", "6.8.0-45-generic", False, 580, available,
                           ["generic-hwe-22.04"])
    assert plan["packages"] == ["linux-modules-nvidia-580-server-generic-hwe-22.04",
                                "linux-modules-nvidia-580-server-6.8.0-45-generic"]


@pytest.mark.parametrize("files, value", [
    ([], "0"),
    (['GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\n'], "0"),
    (['GRUB_DEFAULT=saved\n'], "saved"),
    (['GRUB_DEFAULT="1>2"  # the second submenu entry\n'], "1>2"),
    (['GRUB_DEFAULT=0\n', 'GRUB_DEFAULT=saved\n'], "saved"),
    (['#GRUB_DEFAULT=saved\n'], "0"),
])
def test_grub_default(files, value):
    assert grub_default(files) == value


@pytest.mark.parametrize("source, distribution, prebuilt, packages", [
    ("cuda_repo", "Debian", False, ["cuda-drivers-580"]),
    ("distro", "Ubuntu", False, ["nvidia-headless-580-server", "nvidia-utils-580-server"]),
    ("distro", "Ubuntu", True, ["nvidia-headless-no-dkms-580-server", "nvidia-utils-580-server"]),
    ("distro", "Debian", False, ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-cfg1",
                                 "nvidia-persistenced"]),
])
def test_driver_packages_per_source(source, distribution, prebuilt, packages):
    assert driver_packages(source, distribution, 580, prebuilt, False) == packages
    assert driver_packages(source, distribution, 580, prebuilt, True) == packages + ["nvidia-modprobe"]
    assert uses_dkms(source, distribution, prebuilt) == (not prebuilt)


def test_grub_boots_the_newest_kernel_by_version():
    boot = ["/boot/vmlinuz-6.1.0-9-amd64", "/boot/vmlinuz-6.1.0-57-amd64", "/boot/vmlinuz-6.1.0-50-amd64"]
    assert boot_default_kernel(boot) == "6.1.0-57-amd64"
    assert boot_default_kernel(boot + ["/boot/vmlinuz-6.12.95+deb12-amd64"]) == "6.12.95+deb12-amd64"
    assert boot_default_kernel(["/boot/vmlinuz-6.1.0-57-amd64.dpkg-tmp"]) is None
    assert boot_default_kernel([]) is None


def test_kernels_needing_the_module():
    # The boot kernel always; the running one only where it can have one (headers installed).
    assert kernels_needing_module("6.1.0-57-amd64", "6.1.0-50-amd64", ["6.1.0-50-amd64", "6.1.0-57-amd64"]) == [
        "6.1.0-57-amd64", "6.1.0-50-amd64"]
    assert kernels_needing_module("6.1.0-57-amd64", "6.1.0-28-amd64", ["6.1.0-57-amd64"]) == ["6.1.0-57-amd64"]
    assert kernels_needing_module(None, "6.1.0-57-amd64", ["6.1.0-57-amd64"]) == ["6.1.0-57-amd64"]
    assert kernels_needing_module(None, "6.18.44-fc-v669", []) == []


def test_debian_packages_only_535():
    assert source_error("distro", "Debian", "12.7", 535) is None
    assert source_error("cuda_repo", "Debian", "12.7", 580) is None
    assert source_error("distro", "Ubuntu", "24.04", 580) is None
    assert source_error("distro", "Debian", "12.7", 580).startswith(
        "nvidia_driver_branch=580 with nvidia_driver_source=distro on Debian 12: its archive packages only the 535 "
        "branch. Use nvidia_driver_branch=535, or nvidia_driver_source=cuda_repo for 580")


def test_debian_13_has_a_volta_driver_from_its_own_archive_only():
    assert source_error("distro", "Debian", "13.2", 550) is None
    # trixie's tesla-535 set needs nvidia-persistenced of its branch, which trixie has at 550 only.
    assert source_error("distro", "Debian", "13.2", 535) == (
        "nvidia_driver_branch=535 with nvidia_driver_source=distro on Debian 13: its archive packages only the 550 "
        "branch. Use nvidia_driver_branch=550")
    refused = source_error("cuda_repo", "Debian", "13.2", 580)
    assert refused.startswith("nvidia_driver_source=cuda_repo on Debian 13: NVIDIA's debian13 repository carries the "
                              "590 and newer drivers only")
    assert refused.endswith("Use nvidia_driver_source=distro with nvidia_driver_branch=550, and cuda_toolkit_source: "
                            "distro (Debian's own packages)")


# Recorded with bookworm, -security and -backports configured: backports' 6.12
# metas have priority 100, so apt's headers candidate stays on bookworm's 6.1.
BACKPORTS_POLICY = parse_apt_policy(
    (RECORDED / "apt-cache-policy_linux-headers-amd64_bookworm-backports.txt").read_text())
BACKPORTS_META = "6.12.95-1~bpo12+1"


def test_apt_policy_reads_the_candidate_and_every_version():
    assert BACKPORTS_POLICY == {"installed": None, "candidate": "6.1.192-3",
                                "versions": [BACKPORTS_META, "6.1.192-3", "6.1.176-1"]}


def test_a_backports_kernel_gets_the_backports_headers_meta():
    apt = DEBIAN_APT | {"linux-headers-6.12.95+deb12-amd64"}
    plan = kernel_packages("amd64", "6.12.95+deb12-amd64", "6.12.95+deb12-amd64", True, 535, apt, ["amd64"],
                           BACKPORTS_META, BACKPORTS_POLICY)
    assert plan["packages"] == ["linux-headers-amd64=" + BACKPORTS_META, "linux-headers-6.12.95+deb12-amd64"]


@pytest.mark.parametrize("image_meta, installed_headers_meta", [
    ("6.1.192-3", None),  # the usual host: the candidate is the image meta's version
    ("6.1.176-1", None),  # behind on updates: apt's candidate, as before
    (BACKPORTS_META, BACKPORTS_META),  # already there: apt follows backports for what is installed from it
    ("6.13.1-1~bpo12+1", None),  # a version apt does not have
    (None, None),  # no image meta installed (a container)
])
def test_the_headers_meta_is_left_to_apt_otherwise(image_meta, installed_headers_meta):
    policy = dict(BACKPORTS_POLICY, installed=installed_headers_meta)
    assert not headers_meta_behind_image(image_meta, policy)
    plan = kernel_packages("amd64", "6.1.0-57-amd64", "6.1.0-57-amd64", True, 535, DEBIAN_APT, ["amd64"],
                           image_meta, policy)
    assert plan["packages"][0] == "linux-headers-amd64"


def test_ubuntus_prebuilt_module_meta_is_never_versioned_by_the_image():
    assert not kernel_packages("generic", "6.8.0-90-generic", "6.8.0-90-generic", False, 580,
                               {"linux-modules-nvidia-580-server-generic",
                                "linux-modules-nvidia-580-server-6.8.0-90-generic"}, ["generic"],
                               BACKPORTS_META, BACKPORTS_POLICY)["packages"][0].count("=")


def test_apt_policy_reads_the_installed_version_marked_with_stars():
    text = ("linux-headers-amd64:\n  Installed: 6.1.192-3\n  Candidate: 6.1.192-3\n  Version table:\n"
            " *** 6.1.192-3 500\n        500 http://deb.debian.org/debian-security bookworm-security/main amd64 "
            "Packages\n        100 /var/lib/dpkg/status\n     6.1.176-1 500\n")
    assert parse_apt_policy(text) == {"installed": "6.1.192-3", "candidate": "6.1.192-3",
                                      "versions": ["6.1.192-3", "6.1.176-1"]}
