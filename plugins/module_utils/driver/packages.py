# -*- coding: utf-8 -*-
"""Which NVIDIA driver branch apt and dpkg are really dealing with.

Package names lie: Ubuntu's `nvidia-*-535-server` became transitional packages
that pull 580, and NVIDIA's Debian repo names carry no branch at all. The
branch is read from versions instead (VOLTA_FACTS.md, "Driver branches"), in
three places: what is installed (dpkg-query), what an install would bring
(apt-get -s) and what DKMS built (dkms status).
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.v100.llm.plugins.module_utils.host.dpkg_state import parse_status, present

# "550.54.15-1", "535.216.03-3~deb12u1", "1:580.95.05-0ubuntu1": the upstream
# version starts with the three-digit branch.
_DRIVER_VERSION = re.compile(r"^(?:\d+:)?(?P<branch>\d{3})\.\d+")
_APT_INST = re.compile(r"^Inst (?P<name>\S+)(?: \[[^\]]*\])? \((?P<version>\S+)")
# Versioned like the driver but not tied to its branch: one nvidia-modprobe
# works with every driver (Ubuntu's archive ships a 510.x one next to 550
# drivers), so it is never removed or refused for its version.
BRANCH_INDEPENDENT = frozenset({"nvidia-modprobe"})
# Ubuntu's prebuilt modules are versioned like the kernel and must follow its
# updates: never held (plugins/module_utils/driver/plan.py).
KERNEL_VERSIONED_PREFIX = "linux-modules-nvidia-"
# "nvidia-current/535.261.03, 6.1.0-57-amd64, x86_64: installed" (3.x), "nvidia, 535.x, <kernel>, <arch>: built"
# (2.x); a module added but built for no kernel has no kernel and arch ("nvidia-current/535.261.03: added").
_DKMS_LINE = re.compile(
    r"^(?P<module>[^/,\s]+)[/,] ?(?P<version>[^,:\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>\w+)")


def driver_branch(version: str) -> Optional[int]:
    """The branch of a driver-versioned package version, None for other versions."""
    match = _DRIVER_VERSION.match(version.strip())
    return int(match.group("branch")) if match else None


def split_version(version: str) -> Tuple[int, str, str]:
    """(epoch, upstream, revision) of a Debian version: epoch before the first colon, revision after the last
    hyphen (deb-version(7))."""
    epoch, _, rest = version.partition(":") if ":" in version else ("0", "", version)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0), upstream, revision


def upstream_version(version: str) -> str:
    """"1:535.261.03-1" -> "535.261.03"."""
    return split_version(version)[1]


# What parse_dpkg_query reads: `dpkg-query -W -f DPKG_QUERY_FORMAT [patterns]`.
DPKG_QUERY_FORMAT = "${Package} ${Version} ${db:Status-Abbrev}\n"


def parse_dpkg_query(text: str) -> List[Tuple[str, str]]:
    """(name, version) of packages on disk from `dpkg-query -W -f DPKG_QUERY_FORMAT`.

    Half-installed, unpacked and half-configured packages count: their files
    are there (host_guard finishes them before any apt task), and a driver of
    another branch left half-installed must still be seen and replaced.
    """
    return [(entry["name"], entry["version"]) for entry in parse_status(text) if present(entry)]


def role_packages(installed: List[Tuple[str, str]]) -> List[str]:
    """'name version' of the installed packages the role may hold (and releases when it holds nothing): not
    the branch-independent helpers (nvidia-modprobe), not Ubuntu's kernel-versioned modules (they follow the
    kernel)."""
    return ["%s %s" % (name, version) for name, version in installed
            if name not in BRANCH_INDEPENDENT and not name.startswith(KERNEL_VERSIONED_PREFIX)]


def packages_to_hold(installed: List[Tuple[str, str]]) -> List[str]:
    """Of role_packages, the driver-versioned ones (535.x, 550.x) the role holds beside the set it chose:
    not Debian's CUDA toolkit, whose nvidia-cuda-* names carry 12.x versions and must keep their updates."""
    return [entry for entry in role_packages(installed) if driver_branch(entry.split(" ", 1)[1]) is not None]


def other_branch_packages(installed: List[Tuple[str, str]], branch: int) -> List[str]:
    """Installed driver packages whose version belongs to another branch."""
    return sorted(name for name, version in installed
                  if name not in BRANCH_INDEPENDENT and driver_branch(version) not in (None, branch))


def stale_packages(installed: List[Tuple[str, str]], branch: int, keep: List[str], anchor: str) -> List[str]:
    """Installed driver packages of the branch outside the new set, at another upstream version.

    For example Debian's nvidia-tesla-535-* (535.216.03) beside the nvidia-graphics-drivers
    set (535.261.03): the same branch, but left in place they keep an old driver selected.
    """
    upstream = upstream_version(anchor) if anchor else ""
    return sorted(name for name, version in installed
                  if upstream and name not in keep and name not in BRANCH_INDEPENDENT
                  and driver_branch(version) == branch and upstream_version(version) != upstream)


def still_to_install(requested: Sequence[str], installed: Sequence[Tuple[str, str]]) -> List[str]:
    """The `name` and `name=version` entries that ansible.builtin.apt (state present) passes to apt-get.

    It leaves out a bare name that is installed, and a name=version installed
    at that version (modules/apt.py, package_status and the install list); the
    simulation must ask apt for the same, or it would foresee upgrades the
    install never makes.
    """
    versions = dict(installed)
    wanted = []
    for entry in requested:
        name, _, version = entry.partition("=")
        if name not in versions or (version and versions[name] != version):
            wanted.append(entry)
    return wanted


def parse_apt_simulation(text: str) -> List[Tuple[str, str]]:
    """(name, version) of every package `apt-get -s install ...` would install or upgrade."""
    return [(m.group("name"), m.group("version")) for m in map(_APT_INST.match, text.splitlines()) if m]


def foreign_branch_installs(simulated: List[Tuple[str, str]], branch: int) -> List[str]:
    """Simulated installs that would bring a driver of another branch, as 'name version'."""
    return ["%s %s" % (name, version) for name, version in simulated
            if name not in BRANCH_INDEPENDENT and driver_branch(version) not in (None, branch)]


def open_flavor_installs(simulated: List[Tuple[str, str]]) -> List[str]:
    """Simulated installs of the open kernel modules, which cannot drive Volta."""
    return [name for name, _ in simulated if re.search(r"(^|-)open(-|$)", name)]


def parse_dkms_status(text: str) -> List[Dict[str, str]]:
    """Entries of `dkms status` (both the 2.x `m, v, k, a: s` and 3.x `m/v, k, a: s` forms)."""
    return [m.groupdict() for m in map(_DKMS_LINE.match, text.splitlines()) if m]


def dkms_registered(entries: List[Dict[str, str]], branch: int) -> bool:
    """Whether DKMS's tree has an NVIDIA module of the branch at all (added, built or installed, for any kernel).

    `dkms remove` for a module's last kernel deletes it from the tree (dkms
    3.0.10 remove_module: "Deleting module ... completely from the DKMS tree"),
    and `dkms autoinstall` then has nothing to build: the package that
    registers it must be installed again.
    """
    return any(e["module"].startswith("nvidia") and driver_branch(e["version"]) == branch for e in entries)


def dkms_kernels(entries: List[Dict[str, str]], branch: int) -> List[str]:
    """Kernels for which an NVIDIA module of the branch is built and installed."""
    return sorted({e["kernel"] for e in entries if e["module"].startswith("nvidia") and e["state"] == "installed"
                   and driver_branch(e["version"]) == branch})
