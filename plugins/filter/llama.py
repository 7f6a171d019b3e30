"""Filters of the llama.cpp stage: the build plan and the exported build (module_utils/llama, unit-tested in
tests/unit). llama-server's instances are planned by the action llama_server_plan."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_BUILD = Deferred("llama.build")
_ARTIFACT = Deferred("llama.artifact")


def llama_cpp_build_plan(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """{...inputs...} | llama_cpp_build_plan -> plan dict; a malformed
    architecture list comes back as {"error": "..."} for the role's assert."""
    try:
        plan = _BUILD.build_plan(dict(inputs))
    except ValueError as exc:
        return {"error": str(exc)}
    plan["error"] = ""
    return plan


def llama_cpp_artifact_plan(info: Mapping[str, Any], prefix: str, arch_inputs: Mapping[str, Any],
                            os_release: str) -> Dict[str, Any]:
    """llama_cpp_artifact_info's result | llama_cpp_artifact_plan(prefix, {requested_architectures,
    preflight_architectures, gpus}, this host's /etc/os-release) -> the plan of installing it, with "error" when
    it does not fit."""
    try:
        return _BUILD.artifact_plan(info.get("stamp"), info.get("folder") or "", prefix,
                                    arch_inputs.get("requested_architectures"),
                                    arch_inputs.get("preflight_architectures"), arch_inputs.get("gpus"),
                                    info.get("built_on"), _ARTIFACT.os_release(os_release))
    except ValueError as exc:
        return {"error": str(exc)}


def llama_cpp_refused_args(extra_args: List[str]) -> List[str]:
    """llama_cpp_cmake_extra_args | llama_cpp_refused_args -> messages (empty when fine)."""
    return _BUILD.refused_extra_args(extra_args)


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            "llama_cpp_build_plan": llama_cpp_build_plan,
            "llama_cpp_refused_args": llama_cpp_refused_args,
            "llama_cpp_artifact_plan": llama_cpp_artifact_plan,
            # ldd -r output | llama_cpp_library_problems -> ["libcudart.so.12 not found (the CUDA runtime: ...)", ...]
            "llama_cpp_library_problems": _ARTIFACT.library_problems,
            # cuobjdump listing | llama_cpp_missing_gpu_code(architectures) -> ["70 (no sm_70 machine code)", ...]
            "llama_cpp_missing_gpu_code": _BUILD.missing_gpu_code,
            # llama_cpp_nccl | llama_cpp_nccl_wanted(cuda build, serving GPUs) -> {"wanted", "required", "error"}
            "llama_cpp_nccl_wanted": _BUILD.nccl_wanted,
            # madison output | llama_cpp_nccl_choice(installed, CUDA release, requested, required) -> {"version", ...}
            "llama_cpp_nccl_choice": _BUILD.nccl_choice,
        }
