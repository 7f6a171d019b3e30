"""Filters for the llama_cpp role. The logic is in
plugins/module_utils/llama_cpp_build.py (pure functions, unit-tested);
module_utils are not importable from controller plugins outside a collection,
so the file is loaded from its place in this project (as plugins/filter/cuda.py does).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Dict, List, Mapping


def _load() -> Any:
    path = Path(__file__).resolve().parents[1] / "module_utils" / "llama_cpp_build.py"
    spec = importlib.util.spec_from_file_location("v100_llm_llama_cpp_build", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_BUILD = _load()


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
            "llama_cpp_build_plan": llama_cpp_build_plan,
            "llama_cpp_refused_args": llama_cpp_refused_args,
        }
