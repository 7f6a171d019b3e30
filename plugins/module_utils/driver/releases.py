# -*- coding: utf-8 -*-
"""What NVIDIA publishes, per distribution and per release: data, with sources.

Three tables the driver and toolkit rules read, each as NVIDIA publishes it
(docs/VOLTA_FACTS.md names the pages; re-check there before changing a row):

- CUDA_REPO_TOOLKITS: the cuda-toolkit-12-<minor> packages NVIDIA's CUDA apt
  repository carries for each distribution (the repo's own directory listing).
- NVCC_MAX_GCC: the newest host GCC each nvcc release accepts (the CUDA
  Installation Guide for Linux of that release, "Supported Linux
  Distributions"; nvcc's crt/host_config.h refuses newer: "unsupported GNU
  version! gcc versions later than N are not supported!").
- DRIVER_BRANCH_LIFECYCLE: the data-center branches with a published end of
  life, with their kind (NVIDIA Data Center Drivers, "Supported Drivers and
  CUDA Toolkit Versions", table "CUDA and Drivers", pages 615 and 620; 535's
  June 2026 is past, and page 620 no longer lists it: preflight compares the
  date); UNSUPPORTED_BRANCHES: the branches this toolkit knows that were
  dropped from that table without a date of their own.

Last checked 2026-12-02, against:
- debian12's repository listing (developer.download.nvidia.com/compute/cuda/
  repos/debian12/x86_64/): the first toolkit is cuda-12-3 (2023-10-16);
- ubuntu2404 and ubuntu2204: NVIDIA's CUDA container Dockerfiles per release
  (gitlab.com/nvidia/container-images/cuda, dist/<release>/<distro>): the
  first ubuntu2404 one is 12.5.1, and no 12.7 exists (the listings themselves
  were not readable from here);
- host_config.h of every nvcc above, from NVIDIA's nvidia-cuda-nvcc-cu12
  wheels on PyPI: "#if __GNUC__ > 12" in 12.0-12.3, "> 13" in 12.4-12.6,
  "> 14" in 12.8-12.9;
- pages 615 and 620 above (R535 June 2026, R580 June 2028; R550, R570 and
  R575 not listed); packages.ubuntu.com and packages.debian.org for each
  distribution's gcc (jammy 11.2, noble 13.2, bookworm 12.2).

- DISTRIBUTION_TOOLKITS: the CUDA toolkit a distribution packages itself
  (`nvidia-cuda-toolkit`), for cuda_toolkit_source: distro, and the oldest
  driver branch its packages accept (deb.debian.org, dists/<release>/non-free/
  binary-amd64/Packages, read 2026-12-04).

Plus small pure functions: the repository name for a distribution, and the
default toolkit for a distribution and a driver branch.

Runs on the managed host's Python (3.8+): no third-party imports.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

Release = Tuple[int, int]

SOURCE_REPO_TOOLKITS = ("VOLTA_FACTS.md, CUDA toolkit (NVIDIA's repository listings, "
                        "developer.download.nvidia.com/compute/cuda/repos/<distro>/x86_64/)")
SOURCE_HOST_GCC = "VOLTA_FACTS.md, CUDA toolkit (CUDA Installation Guide for Linux, host compilers per release)"
SOURCE_LIFECYCLE = "VOLTA_FACTS.md, Driver branches (NVIDIA Data Center Drivers, Supported Drivers and CUDA Toolkit Versions)"

# NVIDIA repository name -> CUDA 12 toolkits it carries (cuda-toolkit-12-<minor>).
# 12.7 was never released. ubuntu2404 begins at 12.5: 12.4 and older were never
# built for it.
CUDA_REPO_TOOLKITS: Dict[str, Tuple[Release, ...]] = {
    "ubuntu2204": ((12, 0), (12, 1), (12, 2), (12, 3), (12, 4), (12, 5), (12, 6), (12, 8), (12, 9)),
    "ubuntu2404": ((12, 5), (12, 6), (12, 8), (12, 9)),
    # Debian 12 arrived with CUDA 12.3 (CUDA Installation Guide 12.3, supported distributions).
    "debian12": ((12, 3), (12, 4), (12, 5), (12, 6), (12, 8), (12, 9)),
    # Opened with CUDA 13 and the 590 drivers, neither of which runs a V100: no
    # 12.x toolkit, no 580 driver (NVIDIA/cuda-repo-management#38 and #40).
    "debian13": (),
}
SOURCE_DEBIAN13_REPO = "VOLTA_FACTS.md, Debian 13 (NVIDIA/cuda-repo-management #34, #38, #40)"
# Systems whose NVIDIA repository has no driver that runs Volta: debian13
# opened with the 590 drivers and had no 580 (#38, #40), and Debian 13's apt
# refuses the debian12 repository's key (its SHA-1 binding signature, since
# 2026-02-01: #34).
REPOS_WITHOUT_VOLTA_DRIVERS = ("debian13",)

# nvcc release -> newest GCC major it accepts as host compiler (read in
# crt/host_config.h of each release's nvcc, "#if __GNUC__ > N").
NVCC_MAX_GCC: Dict[Release, int] = {
    (12, 0): 12, (12, 1): 12, (12, 2): 12, (12, 3): 12,
    (12, 4): 13, (12, 5): 13, (12, 6): 13,
    (12, 8): 14, (12, 9): 14,
}

# Repository name -> the distribution's default GCC major (its gcc package).
DISTRIBUTION_GCC: Dict[str, int] = {"ubuntu2204": 11, "ubuntu2404": 13, "debian12": 12, "debian13": 14}

SOURCE_DISTRIBUTION_TOOLKITS = ("VOLTA_FACTS.md, Debian 13 (Debian's own toolkits: nvidia-cuda-toolkit and "
                                "nvidia-cuda-dev in deb.debian.org dists/<release>/non-free/binary-amd64/Packages)")


@dataclass(frozen=True)
class DistributionToolkit:
    """A distribution's own nvidia-cuda-toolkit: its release, package version and oldest driver branch.

    Debian's nvcc brings its own host compiler (nvidia-cuda-toolkit depends on
    the g++ it accepts: g++-13 for 12.4, g++-11 for 11.8, and points nvcc at it
    through /usr/lib/nvidia-cuda-toolkit/bin), so the distribution's default GCC
    does not matter for it.
    """

    release: Release
    version: str
    # nvidia-cuda-dev Depends: libcuda1 (>= N) | libcuda.so.1 (>= N) | ...:
    # the driver must be of branch N or newer (0: no such bound).
    min_branch: int = 0


# Only the distributions whose archive was read here; Ubuntu's archive was not
# reachable (its toolkit is in multiverse: use NVIDIA's repository there).
DISTRIBUTION_TOOLKITS: Dict[str, DistributionToolkit] = {
    "debian12": DistributionToolkit((11, 8), "11.8.89~11.8.0-5~deb12u1"),
    "debian13": DistributionToolkit((12, 4), "12.4.131~12.4.1-2", min_branch=550),
}

# Branch -> (kind, end of life "YYYY-MM"). LTSB: long-term support branch.
# After its end of life a branch gets no security fixes.
DRIVER_BRANCH_LIFECYCLE: Dict[int, Tuple[str, str]] = {
    535: ("LTSB", "2026-06"),
    580: ("LTSB", "2028-06"),
}
# Branch -> kind. Production branches get fixes for up to a year, new-feature
# branches are short-lived with no end-of-life date (same NVIDIA pages); these
# have left NVIDIA's table of supported branches.
UNSUPPORTED_BRANCHES: Dict[int, str] = {550: "PB", 570: "PB", 575: "NFB"}
# The long-term branch that still drives Volta (590 and newer do not).
MAINTAINED_VOLTA_BRANCH = 580


def system_name(distribution: str, version: str) -> Optional[str]:
    """("Ubuntu", "24.04") -> "ubuntu2404"; ("Debian", "12.7") -> "debian12"; None for other systems."""
    distribution, version = str(distribution or ""), str(version or "")
    if distribution == "Ubuntu":
        return "ubuntu" + "".join(version.split(".")[:2])
    if distribution == "Debian":
        return "debian" + version.split(".")[0]
    return None


def system_label(distribution: str, version: str) -> str:
    """("Debian", "13.2") -> "Debian 13"; ("Ubuntu", "24.04") -> "Ubuntu 24.04": the release the tables know."""
    version = str(version or "")
    release = version.split(".")[0] if distribution == "Debian" else ".".join(version.split(".")[:2])
    return ("%s %s" % (distribution or "", release)).strip()


def repo_name(distribution: str, version: str) -> Optional[str]:
    """NVIDIA's repository name for the system (system_name), None when NVIDIA has none."""
    name = system_name(distribution, version)
    return name if name in CUDA_REPO_TOOLKITS else None


def distribution_toolkit(distribution: str, version: str) -> Optional[DistributionToolkit]:
    """The system's own nvidia-cuda-toolkit, None when this toolkit does not know it."""
    return DISTRIBUTION_TOOLKITS.get(system_name(distribution, version) or "")


def format_release(release: Release) -> str:
    return "%d.%d" % release


def carried_toolkits(repo: str) -> Tuple[Release, ...]:
    return CUDA_REPO_TOOLKITS.get(repo, ())


def accepts_gcc(release: Release, gcc_major: Optional[int]) -> bool:
    """Whether nvcc of `release` takes `gcc_major` as host compiler (unknown either way: yes)."""
    newest = NVCC_MAX_GCC.get(release)
    return gcc_major is None or newest is None or gcc_major <= newest


def default_toolkit(repo: str, branch_cuda: Optional[Release]) -> Optional[Release]:
    """The toolkit to install when cuda_toolkit_version is empty.

    Among the 12.x releases the repository carries and the distribution's GCC
    accepts: the newest no newer than the CUDA the driver branch ships (no
    minor-version-compatibility limits at all), else the oldest newer one (the
    smallest gap). None when the repository is unknown.
    """
    gcc = DISTRIBUTION_GCC.get(repo)
    usable = [release for release in carried_toolkits(repo) if release[0] == 12 and accepts_gcc(release, gcc)]
    if not usable:
        return None
    if branch_cuda is None:
        return usable[-1]
    within = [release for release in usable if release <= branch_cuda]
    return within[-1] if within else usable[0]
