"""Ubuntu's prebuilt path: the driver must move with the kernel's module packages, and real apt shows it does.

The role's pin file (templates/nvidia-driver-branch.pref.j2), rendered for each
path, is handed to this machine's real apt (2.6.1; Ubuntu 24.04 has 2.7.14, with
the same resolver) in a sandbox root: a package list, a dpkg status and the pin
file, no network, nothing on this host touched.

The package list stands in for Ubuntu's archive, which is unreachable here. Its
shape is Canonical's (src:linux-restricted-modules and nvidia-graphics-drivers-580-server):
- linux-modules-nvidia-580-server-<abi>-generic is versioned like the kernel and
  depends on the kernel image and on nvidia-kernel-common-580-server (>= the
  driver version that kernel release was built with): packages.ubuntu.com/focal/
  amd64/kernel/linux-modules-nvidia-450-server-aws ("nvidia-kernel-common-450-server
  (>= 450.248.02)");
- the flavour's meta linux-modules-nvidia-580-server-generic depends on that ABI
  package at the kernel version (packages.ubuntu.com/noble/linux-modules-nvidia-580-server-generic);
- the driver's own packages depend on each other at the exact version.
Kernel ABIs 6.8.0-90 and -91 and driver versions 580.95.05 and 580.105.08 are
examples in Ubuntu's numbering, not recorded releases.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest

from conftest import PROJECT_ROOT

from ansible_collections.v100.llm.plugins.module_utils.driver.plan import kept_version_error

TEMPLATES = PROJECT_ROOT / "roles" / "nvidia_driver" / "templates"

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt-get (Debian's apt package)")

OLD, NEW = "580.95.05-0ubuntu0.24.04.2", "580.105.08-0ubuntu0.24.04.1"
KERNELS = {"6.8.0-90": ("6.8.0-90.90", OLD), "6.8.0-91": ("6.8.0-91.91", NEW)}
DRIVER = {
    "nvidia-headless-no-dkms-580-server": ["nvidia-kernel-common-580-server", "libnvidia-compute-580-server"],
    "nvidia-utils-580-server": ["libnvidia-compute-580-server"],
    "nvidia-kernel-common-580-server": [],
    "libnvidia-compute-580-server": [],
}


def _stanza(name: str, version: str, depends: list[str]) -> str:
    text = f"Package: {name}\nVersion: {version}\nArchitecture: amd64\nPriority: optional\n"
    text += f"Filename: pool/{name}_{version}_amd64.deb\nSize: 1\n"
    return text + (f"Depends: {', '.join(depends)}\n" if depends else "") + "\n"


def _archive() -> list[tuple[str, str, str]]:
    """(name, version, Depends) of every package in the stand-in archive."""
    packages = []
    for driver_version in (OLD, NEW):
        for name, needs in DRIVER.items():
            packages.append((name, driver_version, ", ".join(f"{dep} (= {driver_version})" for dep in needs)))
    for abi, (kernel_version, built_with) in KERNELS.items():
        common = f"nvidia-kernel-common-580-server (>= {built_with.split('-')[0]})"
        packages += [
            (f"linux-image-{abi}-generic", kernel_version, ""),
            (f"linux-modules-nvidia-580-server-{abi}-generic", kernel_version,
             f"linux-image-{abi}-generic, {common}"),
            ("linux-modules-nvidia-580-server-generic", kernel_version,
             f"linux-modules-nvidia-580-server-{abi}-generic (= {kernel_version}), {common}"),
            ("linux-image-generic", kernel_version, f"linux-image-{abi}-generic (= {kernel_version})"),
        ]
    return packages


def _installed_first_kernel(held: bool) -> str:
    """dpkg's status after the role's first run: kernel -90 with its module, the driver at OLD."""
    status = "hold ok installed" if held else "install ok installed"
    entries = []
    for name, version, depends in _archive():
        is_old = version == OLD or version == KERNELS["6.8.0-90"][0]
        if is_old:
            entries.append(f"Package: {name}\nStatus: {status if name in DRIVER else 'install ok installed'}\n"
                           f"Version: {version}\nArchitecture: amd64\n" + (f"Depends: {depends}\n" if depends else "")
                           + "\n")
    return "".join(entries)


def _pin_file(keeps_version: bool) -> str:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True,
                                     undefined=jinja2.StrictUndefined)
    # Ansible's `bool` filter, on the native booleans given here (importing
    # Ansible's filter plugins would reconfigure the warnings other tests read).
    environment.filters["bool"] = bool
    driver_set = [{"name": name, "version": OLD} for name in sorted(DRIVER)]
    return environment.get_template("nvidia-driver-branch.pref.j2").render(
        ansible_managed="managed", nvidia_driver_branch=580, nvidia_driver_source="distro",
        nvidia_driver_closure={"anchor": OLD, "pins": [{"version": OLD, "names": sorted(DRIVER)}]},
        __nvidia_driver_set=driver_set, __nvidia_driver_keeps_version=keeps_version)


def _dist_upgrade(root: Path, pins: str, held: bool, command: tuple[str, ...] = ("dist-upgrade",)) -> dict[str, str]:
    """What `apt-get -s <command>` installs (name -> version) on the sandbox host, after a kernel update."""
    (root / "repo").mkdir(parents=True)
    (root / "repo" / "Packages").write_text("".join(_stanza(*package[:2], [package[2]] if package[2] else [])
                                                    for package in _archive()))
    for folder in ("etc/apt/preferences.d", "etc/apt/apt.conf.d", "etc/apt/sources.list.d", "var/lib/dpkg",
                   "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/log/apt"):
        (root / folder).mkdir(parents=True)
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{root / 'repo'} ./\n")
    (root / "etc/apt/preferences.d/nvidia-driver-branch.pref").write_text(pins)
    (root / "var/lib/dpkg/status").write_text(_installed_first_kernel(held))
    config = root / "apt.conf"
    config.write_text(f'Dir "{root}/";\nDir::State::status "{root}/var/lib/dpkg/status";\n'
                      'APT::Architecture "amd64";\nAPT::Architectures { "amd64"; };\nDebug::NoLocking "true";\n'
                      'Acquire::Languages "none";\n')
    environment = {**os.environ, "APT_CONFIG": str(config), "LANG": "C"}
    subprocess.run(["apt-get", "-q", "update"], check=True, capture_output=True, text=True, env=environment)
    run = subprocess.run(["apt-get", "-s", "-q", *command], capture_output=True, text=True, env=environment)
    assert run.returncode == 0, run.stdout + run.stderr
    return dict(re.findall(r"^Inst (\S+) (?:\[\S+\] )?\((\S+)", run.stdout, re.MULTILINE))


def test_on_the_prebuilt_path_the_driver_moves_with_the_next_kernels_module(tmp_path):
    installs = _dist_upgrade(tmp_path, _pin_file(keeps_version=False), held=False)
    assert installs["linux-image-6.8.0-91-generic"] == "6.8.0-91.91"
    assert installs["linux-modules-nvidia-580-server-6.8.0-91-generic"] == "6.8.0-91.91"
    assert installs["linux-modules-nvidia-580-server-generic"] == "6.8.0-91.91"
    # The whole driver at the version the new module was built with, one version.
    assert {name: installs.get(name) for name in DRIVER} == {name: NEW for name in DRIVER}


def test_a_driver_kept_at_one_version_would_boot_the_next_kernel_without_a_module(tmp_path):
    # What the role did before: the set pinned at one version and held, as on the DKMS path.
    installs = _dist_upgrade(tmp_path, _pin_file(keeps_version=True), held=True)
    assert installs["linux-image-6.8.0-91-generic"] == "6.8.0-91.91"
    assert "linux-modules-nvidia-580-server-6.8.0-91-generic" not in installs
    assert not set(DRIVER) & set(installs)


def test_the_prebuilt_pin_file_keeps_the_branch_and_the_open_modules_out():
    pins = _pin_file(keeps_version=False)
    assert "Pin: version 580.*\nPin-Priority: 1001" in pins
    assert "Package: nvidia-open* *-open nvidia-kernel-open-dkms\nPin: version *\nPin-Priority: -1" in pins
    assert f"Pin: version {OLD}" not in pins


def test_a_version_kept_on_the_prebuilt_path_is_refused_naming_both_ways_out():
    error = kept_version_error(dkms=False, version="580.95.05", branch=580)
    assert "nvidia_driver_package_version=580.95.05" in error
    assert 'nvidia_driver_package_version to ""' in error and "nvidia_driver_prebuilt_modules to false" in error
    assert kept_version_error(dkms=False, version="", branch=580) is None
    assert kept_version_error(dkms=True, version="580.95.05", branch=580) is None


def test_a_host_an_earlier_run_held_moves_only_once_the_holds_are_released(tmp_path):
    # What the role's install asks for on such a host: ansible.builtin.apt leaves out the installed names, so
    # only the new kernel's module package reaches apt-get. Held, the driver it needs cannot come.
    new_module = ("install", "linux-modules-nvidia-580-server-6.8.0-91-generic")
    with pytest.raises(AssertionError, match="held broken packages"):
        _dist_upgrade(tmp_path / "held", _pin_file(keeps_version=False), held=True, command=new_module)
    # The role releases the holds first: then apt brings the driver version that module was built with.
    installs = _dist_upgrade(tmp_path / "released", _pin_file(keeps_version=False), held=False, command=new_module)
    assert installs["linux-modules-nvidia-580-server-6.8.0-91-generic"] == "6.8.0-91.91"
    assert {name: installs.get(name) for name in DRIVER} == {name: NEW for name in DRIVER}
