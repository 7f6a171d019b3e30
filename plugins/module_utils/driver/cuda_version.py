# -*- coding: utf-8 -*-
"""The CUDA release a toolkit reports, read from `nvcc --version`.

The last lines of that output look like (tests/fixtures/recorded/):

    Cuda compilation tools, release 12.4, V12.4.131
    Build cuda_12.4.r12.4/compiler.34097967_0

"release 12.4" is the major.minor that package names (cuda-toolkit-12-4),
folders (/usr/local/cuda-12.4) and `cuda_toolkit_version` use; V12.4.131 is
the full compiler version. Pure functions over the text, no I/O.
"""
from __future__ import annotations

import re
from typing import Optional

_RELEASE_LINE = re.compile(
    r"^Cuda compilation tools, release (?P<release>\d+\.\d+), V(?P<version>\d+\.\d+(?:\.\d+)*)\s*$",
    re.MULTILINE,
)


def nvcc_release(text: str) -> Optional[str]:
    """``"12.4"`` from `nvcc --version` output; None when no release line is there."""
    match = _RELEASE_LINE.search(text or "")
    return match.group("release") if match else None


def nvcc_full_version(text: str) -> Optional[str]:
    """``"12.4.131"`` (the V... part) from `nvcc --version` output; None when absent."""
    match = _RELEASE_LINE.search(text or "")
    return match.group("version") if match else None
