"""driver_packages: the branch is read from versions, on real Debian 12 outputs."""
from __future__ import annotations

import pytest

from ansible_collections.v100.llm.plugins.module_utils.driver.packages import (
    dkms_kernels,
    dkms_registered,
    driver_branch,
    foreign_branch_installs,
    open_flavor_installs,
    other_branch_packages,
    packages_to_hold,
    role_packages,
    stale_packages,
    parse_apt_simulation,
    parse_dkms_status,
    still_to_install,
    parse_dpkg_query,
)
from conftest import FIXTURES

DEBIAN12 = FIXTURES / "debian12"


@pytest.mark.parametrize("version, branch", [
    ("535.216.03-3~deb12u1", 535), ("550.54.15-1", 550), ("1:580.95.05-0ubuntu1", 580),
    ("535.161.07-1~deb12u1", 535), ("20220217+3~deb12u1", None), ("1.2.2", None), ("12.4.1-1", None)])
def test_driver_branch_from_versions(version, branch):
    assert driver_branch(version) == branch


@pytest.fixture(scope="module")
def simulated():
    return parse_apt_simulation((DEBIAN12 / "apt-get-s-install_nvidia-tesla-535_debian12.txt").read_text())


def test_apt_simulation_lists_every_install(simulated):
    assert len(simulated) == 63
    assert ("nvidia-tesla-535-kernel-dkms", "535.216.03-3~deb12u1") in simulated
    assert ("nvidia-kernel-common", "20220217+3~deb12u1") in simulated


def test_debian_535_set_is_all_branch_535(simulated):
    assert foreign_branch_installs(simulated, 535) == []
    assert open_flavor_installs(simulated) == []


def test_the_same_set_is_foreign_when_550_is_asked_for(simulated):
    foreign = foreign_branch_installs(simulated, 550)
    assert "nvidia-tesla-535-kernel-dkms 535.216.03-3~deb12u1" in foreign
    # versions that are not driver versions never count as a branch
    assert not [f for f in foreign if f.startswith(("nvidia-kernel-common ", "glx-alternative-nvidia "))]


def test_open_flavor_detected_by_name():
    assert open_flavor_installs([("nvidia-driver-550-open", "550.54.15-1"), ("nvidia-kernel-open-dkms", "580.1-1"),
                                 ("nvidia-opencl-icd", "535.1-1")]) == ["nvidia-driver-550-open",
                                                                          "nvidia-kernel-open-dkms"]


def test_other_branch_packages_ignores_non_driver_versions():
    installed = [("nvidia-tesla-535-smi", "535.216.03-3~deb12u1"), ("nvidia-kernel-common", "20220217+3~deb12u1"),
                 ("nvidia-driver-550", "550.54.15-1")]
    assert other_branch_packages(installed, 550) == ["nvidia-tesla-535-smi"]
    assert other_branch_packages(installed, 535) == ["nvidia-driver-550"]


def test_dkms_status_of_the_real_debian_build():
    entries = parse_dkms_status((DEBIAN12 / "dkms-status_nvidia-tesla-535_debian12.txt").read_text())
    assert entries == [{"module": "nvidia-tesla-535", "version": "535.216.03", "kernel": "6.1.0-50-amd64",
                        "arch": "x86_64", "state": "installed"}]
    assert dkms_kernels(entries, 535) == ["6.1.0-50-amd64"]
    assert dkms_kernels(entries, 550) == []


def test_dkms_2x_form_and_unfinished_builds():
    entries = parse_dkms_status("nvidia, 550.54.15, 5.15.0-91-generic, x86_64: installed\n"
                                "nvidia, 550.54.15, 5.15.0-92-generic, x86_64: built\n")
    assert dkms_kernels(entries, 550) == ["5.15.0-91-generic"]


def test_installed_packages_of_the_real_debian_install():
    installed = parse_dpkg_query((DEBIAN12 / "dpkg-query_nvidia_debian12.txt").read_text())
    names = dict(installed)
    assert names["nvidia-tesla-535-kernel-dkms"] == "535.216.03-3~deb12u1"
    # dpkg-query also lists virtual and removed names ("un"): those are not installed
    assert "libnvidia-cfg1-any" not in names
    assert other_branch_packages(installed, 535) == []
    assert "nvidia-tesla-535-smi" in other_branch_packages(installed, 550)


def test_nvidia_modprobe_is_never_another_branch():
    # Debian 12's contrib ships nvidia-modprobe 535.161.07 (driver 535.216.03);
    # it works with every branch, so neither a removal nor a refusal.
    installed = [("nvidia-modprobe", "535.161.07-1~deb12u1"), ("nvidia-driver-550", "550.54.15-1")]
    assert other_branch_packages(installed, 550) == []
    simulated = [("nvidia-modprobe", "535.161.07-1~deb12u1"), ("nvidia-driver-550", "550.54.15-1")]
    assert foreign_branch_installs(simulated, 550) == []
    assert foreign_branch_installs(simulated + [("nvidia-dkms-535", "535.129.03-1")], 550) == [
        "nvidia-dkms-535 535.129.03-1"]


def test_stale_packages_of_the_same_branch_outside_the_set():
    """Debian's tesla-535 set left beside nvidia-graphics-drivers (the old distro source) goes."""
    installed = [("nvidia-tesla-535-smi", "535.216.03-3~deb12u1"), ("libnvidia-tesla-535-cuda1", "535.216.03-3~deb12u1"),
                 ("nvidia-smi", "535.261.03-1"), ("nvidia-persistenced", "535.171.04-1~deb12u1"),
                 ("nvidia-modprobe", "535.161.07-1~deb12u1"), ("nvidia-kernel-common", "20151021+13")]
    keep = ["nvidia-smi", "nvidia-persistenced"]
    assert stale_packages(installed, 535, keep, "535.261.03-1") == ["libnvidia-tesla-535-cuda1", "nvidia-tesla-535-smi"]
    # Packages of the anchor's own version stay (another package of the same driver), and no anchor: nothing.
    assert stale_packages([("nvidia-settings", "535.261.03-1")], 535, keep, "535.261.03-1") == []
    assert stale_packages(installed, 535, keep, "") == []


def test_a_module_dkms_lost_from_its_tree_is_told_from_one_built_for_no_kernel_yet():
    added = parse_dkms_status("nvidia-current/535.261.03: added\n")
    assert added == [{"module": "nvidia-current", "version": "535.261.03", "kernel": None, "arch": None,
                      "state": "added"}]
    assert dkms_registered(added, 535) and dkms_kernels(added, 535) == []
    assert not dkms_registered(parse_dkms_status(""), 535)
    assert not dkms_registered(parse_dkms_status("nvidia-current/550.163.01: added\n"), 535)
    old_format = parse_dkms_status("nvidia, 535.261.03, 6.1.0-50-amd64, x86_64: installed\n")
    assert dkms_registered(old_format, 535) and dkms_kernels(old_format, 535) == ["6.1.0-50-amd64"]


def test_the_simulation_asks_apt_for_what_the_apt_module_would():
    installed = [("nvidia-utils-580-server", "580.95.05-0ubuntu0.24.04.2"), ("libcuda1", "535.261.03-1")]
    requested = ["nvidia-utils-580-server", "linux-modules-nvidia-580-server-6.8.0-91-generic",
                 "libcuda1=535.261.03-1", "nvidia-kernel-dkms=535.261.03-1", "libcuda1=535.309.01-1"]
    assert still_to_install(requested, installed) == [
        "linux-modules-nvidia-580-server-6.8.0-91-generic", "nvidia-kernel-dkms=535.261.03-1", "libcuda1=535.309.01-1"]


def test_only_driver_versioned_packages_are_held():
    # Debian 13 (trixie's Packages): the 550 set beside Debian's CUDA 12.4, whose names are nvidia-* too.
    installed = [("nvidia-kernel-dkms", "550.163.01-2"), ("libcuda1", "550.163.01-2"),
                 ("nvidia-persistenced", "550.163.01-1"), ("nvidia-modprobe", "570.133.07-1"),
                 ("nvidia-cuda-toolkit", "12.4.131~12.4.1-2"), ("nvidia-cuda-dev", "12.4.127~12.4.1-2"),
                 ("libnvidia-ml-dev", "12.4.127~12.4.1-2"),
                 ("linux-modules-nvidia-580-server-generic", "5.15.0-91.101")]
    assert packages_to_hold(installed) == [
        "nvidia-kernel-dkms 550.163.01-2", "libcuda1 550.163.01-2", "nvidia-persistenced 550.163.01-1"]
    # What the role releases when it holds nothing keeps the toolkit's names (an earlier run may have held them).
    assert "nvidia-cuda-toolkit 12.4.131~12.4.1-2" in role_packages(installed)
    assert not [entry for entry in role_packages(installed) if entry.startswith(("nvidia-modprobe ", "linux-"))]
