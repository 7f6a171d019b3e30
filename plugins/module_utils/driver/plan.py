# -*- coding: utf-8 -*-
"""What the driver stage installs on one host, and for which kernels.

Pure functions over what the host says (distribution, `uname -r`, the kernel
meta packages dpkg has, what apt can install); nvidia_driver_plan is the
module on top, preflight prints its answer and nvidia_driver acts on it.

Kernel packages (the DKMS path builds the module against headers; Ubuntu's
prebuilt path installs a module package per kernel):

- Debian: a kernel is linux-image-<abi>-<flavour> ("6.1.0-57-amd64"; in
  bookworm-backports "6.12.95+deb12-amd64"); the
  meta packages linux-image-<flavour> and linux-headers-<flavour> depend on
  the current ABI (`apt-cache show linux-headers-amd64` in bookworm-security,
  6.1.192-3: "Depends: linux-headers-6.1.0-57-amd64 (= 6.1.192-3)"; src:linux
  debian/templates/control.headers.meta.in). Flavours on amd64: amd64,
  cloud-amd64, rt-amd64. The archive carries headers for current ABIs only,
  so an older running kernel may have none to install.
- Ubuntu: "5.15.0-91-generic", "6.8.0-1015-aws"; metas linux-image-<flavour>
  and linux-headers-<flavour> (src:linux-meta), where the HWE kernels have
  their own: linux-headers-generic-hwe-22.04. Canonical's prebuilt NVIDIA
  modules follow the same flavour names:
  linux-modules-nvidia-<branch>-server-<flavour> (src:linux-restricted-modules;
  packages.ubuntu.com/jammy/linux-modules-nvidia-580-server-generic: "dep:
  linux-modules-nvidia-580-server-5.15.0-...-generic (= <kernel version>)",
  "nvidia-kernel-common-580-server (>= 580...)"), versioned like the kernel, so
  they move with kernel updates and are never held. Ubuntu's "virtual" kernels
  are generic ones (linux-image-virtual depends on linux-image-<abi>-generic).

Which kernel boots next: Debian's and Ubuntu's GRUB (GRUB_DEFAULT=0) boots the
first entry of /etc/grub.d/10_linux, which lists /boot/vmlinuz-* newest first
(by version; a backports kernel 6.12 comes before 6.1). A GRUB_DEFAULT set to
another entry is not read.

Runs on the managed host's Python (3.8+): no third-party imports.
"""
from __future__ import annotations

import re
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence

from ansible_collections.v100.llm.plugins.module_utils.driver.closure import compare_versions
from ansible_collections.v100.llm.plugins.module_utils.driver.releases import REPOS_WITHOUT_VOLTA_DRIVERS, system_label, system_name

# The GA kernel series of each Ubuntu LTS (Ubuntu kernel release cycle,
# ubuntu.com/about/release-cycle#ubuntu-kernel-release-cycle): a generic or
# lowlatency kernel of another series is an HWE kernel, whose metas carry
# -hwe-<release>.
UBUNTU_GA_SERIES = {"22.04": "5.15", "24.04": "6.8"}
_HWE_FLAVOURS = ("generic", "lowlatency")

# "6.1.0-57-amd64", "6.1.0-57-cloud-amd64", Debian's backports "6.12.95+deb12-amd64";
# Ubuntu's "5.15.0-91-generic", "6.8.0-1015-aws".
_KERNEL_RELEASE = re.compile(r"^(?P<series>\d+\.\d+)\.\d+(?:-\d+|\+deb\d+)-(?P<flavour>[a-z][a-z0-9-]*)$")
# Installed image packages that are not metas: ABI-versioned, unsigned, debug.
_NOT_A_META = re.compile(r"^(\d|unsigned-)|-dbg$")

# What each source installs for a headless compute host (no X server):
# cuda_repo: NVIDIA's CUDA repository (cuda-drivers-<branch> pulls the rest);
# Ubuntu distro: the -server packages (Ubuntu Server docs, "NVIDIA drivers
# installation"); Debian distro: src:nvidia-graphics-drivers (535 in Debian 12;
# unlike nvidia-graphics-drivers-tesla-535, 535.216.03 in bookworm only, it
# gets security fixes in bookworm-security, 535.309.01-0+deb12u1).
_DEBIAN_DISTRO_PACKAGES = ("nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-cfg1", "nvidia-persistenced")
# The branches a Debian release's own archive packages that this toolkit can
# install (Debian 12: only src:nvidia-graphics-drivers 535,
# packages.debian.org/bookworm/nvidia-driver; Debian 13: nvidia-graphics-drivers
# 550.163.01, trixie's non-free Packages, 2026-12-04). Debian 13's other
# Volta branch, src:nvidia-graphics-drivers-tesla-535, is no stack: its set
# needs nvidia-persistenced, which trixie has at 550.163.01 only, and Debian's
# CUDA 12.4 needs libcuda1 (>= 550) (driver/releases.py: DISTRIBUTION_TOOLKITS).
# Ubuntu's archive has the -server packages of every branch here.
DISTRO_BRANCHES = {"debian12": (535,), "debian13": (550,)}

FLAVOUR_EXAMPLES = {"Debian": "amd64, cloud-amd64", "Ubuntu": "generic, generic-hwe-22.04, generic-hwe-24.04, aws"}


def uses_dkms(source: str, distribution: str, prebuilt: bool) -> bool:
    return not (source == "distro" and distribution == "Ubuntu" and prebuilt)


def source_error(source: str, distribution: str, version: str, branch: int) -> Optional[str]:
    """Why the source cannot give this branch on this system, else None."""
    system = system_name(distribution, version) or ""
    packaged = DISTRO_BRANCHES.get(system)
    label = system_label(distribution, version)
    if source == "cuda_repo" and system in REPOS_WITHOUT_VOLTA_DRIVERS:
        return ("nvidia_driver_source=cuda_repo on %s: NVIDIA's %s repository carries the 590 and newer drivers "
                "only, which do not drive Volta, and its debian12 repository's key is refused by this release's apt. "
                "Use nvidia_driver_source=distro with nvidia_driver_branch=%s, and cuda_toolkit_source: distro "
                "(Debian's own packages)" % (label, system, "/".join(map(str, packaged or ()))))
    if source != "distro" or packaged is None or branch in packaged:
        return None
    return ("nvidia_driver_branch=%d with nvidia_driver_source=distro on %s: its archive packages only the %s "
            "branch. Use nvidia_driver_branch=%d%s"
            % (branch, label, "/".join(map(str, packaged)), packaged[-1],
               "" if system in REPOS_WITHOUT_VOLTA_DRIVERS else ", or nvidia_driver_source=cuda_repo for %d" % branch))


def kept_version_error(dkms: bool, version: str, branch: int) -> Optional[str]:
    """Why nvidia_driver_package_version cannot be kept on Ubuntu's prebuilt path, else None.

    Canonical builds each kernel's linux-modules-nvidia-<branch>-server-<abi>-<flavour>
    against the driver version of that kernel release, and it depends on
    nvidia-kernel-common-<branch>-server (>= that version) (src:linux-restricted-modules;
    packages.ubuntu.com/focal/amd64/kernel/linux-modules-nvidia-450-server-aws:
    "nvidia-kernel-common-450-server (>= 450.248.02)"). A driver kept at one
    version would keep the next kernel's module out, and that kernel would boot
    without one; so on that path the driver follows the branch with the kernel.
    """
    if dkms or not version:
        return None
    return ("nvidia_driver_package_version=%s with Ubuntu's prebuilt modules (nvidia_driver_prebuilt_modules=true): "
            "Canonical builds each kernel's linux-modules-nvidia-%d-server package against the driver version of "
            "that kernel release (it depends on nvidia-kernel-common-%d-server >= that version), so a driver kept "
            "at one version would leave the next kernel without a module. On this path the driver follows branch "
            "%d with the kernel, unheld. Set nvidia_driver_package_version to \"\", or nvidia_driver_prebuilt_modules "
            "to false (DKMS builds the module of the version you choose for every kernel)" % (version, branch, branch,
                                                                                              branch))


def driver_packages(source: str, distribution: str, branch: int, prebuilt: bool, modprobe: bool) -> List[str]:
    """The packages the role asks apt for (the closure brings the rest), kernel packages apart."""
    if source == "cuda_repo":
        packages = ["cuda-drivers-%d" % branch]
    elif distribution == "Ubuntu":
        packages = ["nvidia-headless-%s%d-server" % ("no-dkms-" if prebuilt else "", branch),
                    "nvidia-utils-%d-server" % branch]
    else:
        packages = list(_DEBIAN_DISTRO_PACKAGES)
    return packages + (["nvidia-modprobe"] if modprobe else [])


def image_flavours(installed_image_packages: Sequence[str]) -> List[str]:
    """Flavours of the installed linux-image-<flavour> metas ("linux-image-amd64" -> "amd64")."""
    flavours = []
    for name in installed_image_packages:
        if name.startswith("linux-image-"):
            flavour = name[len("linux-image-"):]
            if flavour and not _NOT_A_META.search(flavour):
                flavours.append(flavour)
    return sorted(set(flavours))


def kernel_flavour(distribution: str, distribution_version: str, kernel_release: str,
                   installed_flavours: Sequence[str]) -> Optional[str]:
    """The meta-package flavour of the running kernel, None for a kernel the distribution did not build."""
    match = _KERNEL_RELEASE.match(kernel_release)
    if not match:
        return None
    flavour = match.group("flavour")
    if distribution != "Ubuntu" or flavour not in _HWE_FLAVOURS:
        return flavour
    hwe = "%s-hwe-%s" % (flavour, distribution_version)
    if hwe in installed_flavours and flavour not in installed_flavours:
        return hwe
    if flavour in installed_flavours and hwe not in installed_flavours:
        return flavour
    ga_series = UBUNTU_GA_SERIES.get(distribution_version)
    return hwe if ga_series and match.group("series") != ga_series else flavour


def per_kernel_package(kernel: str, dkms: bool, branch: int) -> str:
    """What one kernel needs for the module: its headers (DKMS), or Ubuntu's prebuilt module for it.
    Given a flavour instead of a kernel release, the meta package of that flavour."""
    return "linux-headers-%s" % kernel if dkms else "linux-modules-nvidia-%d-server-%s" % (branch, kernel)


def kernel_packages(flavour: str, kernel_release: str, boot_kernel: Optional[str], dkms: bool, branch: int,
                    available: Collection[str], installed_flavours: Sequence[str],
                    image_meta_version: Optional[str] = None,
                    meta_policy: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The kernel-side packages: {"packages": [...], "upgrade": bool, "error": str or None}.

    The flavour's meta keeps every later kernel covered (DKMS builds on each
    headers install; Ubuntu's module meta follows the kernel meta); then the
    running kernel's and the boot kernel's own package, where apt has them.
    When neither kernel can get one (Debian keeps current ABIs only), the
    image meta is brought to the current kernel (upgrade: state latest) so the
    reboot the driver asks for lands on it; only where the host follows that
    meta: a kernel managed by hand is refused, not replaced. `available` is
    the set of names apt knows; `image_meta_version` the installed
    linux-image-<flavour>'s version, `meta_policy` the headers meta's
    parse_apt_policy.
    """
    meta = per_kernel_package(flavour, dkms, branch)
    pinned_meta = meta + "=" + image_meta_version if dkms and headers_meta_behind_image(
        image_meta_version, meta_policy) else meta
    if meta not in available:
        return {"packages": [], "upgrade": False, "error": (
            "apt has no %s, the meta package of the running kernel's flavour %s: the kernel is not one the "
            "distribution packages (Proxmox, a vendor or custom kernel). Set nvidia_driver_kernel_flavour to a "
            "flavour whose metas apt has, or list what the module needs in nvidia_driver_kernel_packages (e.g. "
            "[%s]) and keep it current yourself" % (meta, flavour, per_kernel_package(kernel_release, dkms, branch)))}
    kernels = [kernel_release] + ([boot_kernel] if boot_kernel and boot_kernel != kernel_release else [])
    own = [per_kernel_package(kernel, dkms, branch) for kernel in kernels]
    own = [name for name in own if name in available]
    if own:
        return {"packages": [pinned_meta] + own, "upgrade": False, "error": None}
    image = "linux-image-%s" % flavour
    if flavour not in installed_flavours or image not in available:
        return {"packages": [], "upgrade": False, "error": (
            "apt has no %s for the running kernel %s and the host does not follow the %s meta (a kernel kept by "
            "hand): install what the module needs for this kernel, or boot a kernel apt has it for, or list the "
            "packages in nvidia_driver_kernel_packages" % (per_kernel_package(kernel_release, dkms, branch),
                                                          kernel_release, image))}
    return {"packages": [image, meta], "upgrade": True, "error": None}


def parse_apt_policy(text: str) -> Dict[str, Any]:
    """`apt-cache policy <one name>`: {"installed", "candidate" (None for "(none)"), "versions": [...]}."""
    fields = dict(re.findall(r"^\s+(Installed|Candidate): (\S+)$", text, re.M))
    return {"installed": None if fields.get("Installed", "(none)") == "(none)" else fields["Installed"],
            "candidate": None if fields.get("Candidate", "(none)") == "(none)" else fields["Candidate"],
            "versions": re.findall(r"^(?: {5}| \*\*\* )(\S+) -?\d+$", text, re.M)}


def headers_meta_behind_image(image_meta_version: Optional[str], meta_policy: Optional[Mapping[str, Any]]) -> bool:
    """Whether the headers meta must be asked for at the installed image meta's version.

    Both metas come from one source version (src:linux's linux-headers-<flavour>,
    linux-signed-amd64's linux-image-<flavour>: 6.1.192-3 each in bookworm-security).
    A kernel taken from bookworm-backports (`apt install -t bookworm-backports
    linux-image-amd64`, as Debian documents it; backports has priority 100)
    leaves apt's headers candidate on bookworm's series, so DKMS would never see
    the headers of that kernel's updates. Only where apt has that version and
    it is newer than both the candidate and what is installed: a host merely
    behind on updates keeps apt's candidate, and nothing is ever downgraded.
    """
    if not image_meta_version or not meta_policy or image_meta_version not in meta_policy["versions"]:
        return False
    return all(compare_versions(image_meta_version, other) > 0
               for other in (meta_policy["candidate"], meta_policy["installed"]) if other)


def _version_key(text: str) -> List[object]:
    # sort -V / GRUB's version_sort: digit runs compare as numbers.
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part]


def boot_default_kernel(boot_files: Sequence[str]) -> Optional[str]:
    """The kernel GRUB_DEFAULT=0 boots: the newest /boot/vmlinuz-<release>, None without one."""
    releases = [name.split("vmlinuz-", 1)[1] for name in boot_files
                if "vmlinuz-" in name and not name.endswith((".old", ".bak", ".dpkg-tmp"))]
    return max(releases, key=_version_key) if releases else None


def kernels_needing_module(boot_kernel: Optional[str], running_kernel: str, ready_kernels: Sequence[str]) -> List[str]:
    """Kernels the module must exist for before a reboot: the one that boots next, and the running one when
    it can have one (its headers installed; for Ubuntu's prebuilt path, its module package in apt). An older
    kernel the archive has nothing for is left behind on purpose."""
    kernels = [boot_kernel] if boot_kernel else []
    if running_kernel in ready_kernels and running_kernel not in kernels:
        kernels.append(running_kernel)
    return kernels


def grub_default(default_files: Sequence[str]) -> str:
    """GRUB_DEFAULT from /etc/default/grub and grub.d/*.cfg (sourced in that order: the last one wins)."""
    value = "0"
    for text in default_files:
        for line in text.splitlines():
            match = re.match(r"^\s*GRUB_DEFAULT=(['\"]?)(.*?)\1\s*(?:#.*)?$", line)
            if match:
                value = match.group(2)
    return value


def flavour_error(distribution: str, kernel_release: str) -> str:
    return ("the running kernel %s is not one %s builds (no <abi>-<flavour> suffix), so the role cannot tell which "
            "kernel meta packages keep the NVIDIA module building across kernel updates. Set "
            "nvidia_driver_kernel_flavour to the flavour the host should boot (%s: %s)"
            % (kernel_release, distribution, distribution, FLAVOUR_EXAMPLES.get(distribution, "amd64")))
