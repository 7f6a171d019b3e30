"""Filters over this project's module_utils: nvcc output (cuda_version.py) and
the llama.cpp build plan (llama_cpp_build.py), both pure functions unit-tested
in tests/unit. module_utils are not importable from controller plugins outside
a collection, so each file is loaded from its place in this project.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Dict, List, Mapping


def _module_utils(name: str) -> Any:
    path = Path(__file__).resolve().parents[1] / "module_utils" / (name + ".py")
    spec = importlib.util.spec_from_file_location("v100_llm_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CUDA = _module_utils("cuda_version")
_BUILD = _module_utils("llama_cpp_build")


def llama_cpp_build_plan(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """{...inputs...} | llama_cpp_build_plan -> plan dict; a malformed
    architecture list comes back as {"error": "..."} for the role's assert."""
    try:
        plan = _BUILD.build_plan(dict(inputs))
    except ValueError as exc:
        return {"error": str(exc)}
    plan["error"] = ""
    return plan


def llama_cpp_refused_args(extra_args: List[str]) -> List[str]:
    """llama_cpp_cmake_extra_args | llama_cpp_refused_args -> messages (empty when fine)."""
    return _BUILD.refused_extra_args(extra_args)


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # "...release 12.4, V12.4.131..." | nvcc_release -> "12.4" (None when absent)
            "nvcc_release": _CUDA.nvcc_release,
            "llama_cpp_build_plan": llama_cpp_build_plan,
            "llama_cpp_refused_args": llama_cpp_refused_args,
        }
