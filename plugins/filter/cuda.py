"""Filters over CUDA tool output. The parsing is in plugins/module_utils/cuda_version.py
(pure functions, unit-tested against real recorded `nvcc --version` outputs);
module_utils are not importable from controller plugins outside a collection,
so the file is loaded from its place in this project.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any


def _cuda_version() -> Any:
    path = Path(__file__).resolve().parents[1] / "module_utils" / "cuda_version.py"
    spec = importlib.util.spec_from_file_location("v100_llm_cuda_version", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CUDA = _cuda_version()


class FilterModule:
    def filters(self) -> dict[str, Any]:
        # "...release 12.4, V12.4.131..." | nvcc_release -> "12.4" (None when absent)
        return {"nvcc_release": _CUDA.nvcc_release}
