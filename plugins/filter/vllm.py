"""Filters of the vLLM stage: pip's sources, the server's command line and its memory plan (module_utils/vllm,
unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict, Mapping

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_VLLM = Deferred("vllm.server_plan")
_PIP = Deferred("vllm.pip_options")


def vllm_memory_plan(shape: Mapping[str, Any], *args: Any) -> Dict[str, Any]:
    plan = _VLLM.plan_max_model_len(shape, *args)
    plan["verdict"] = _VLLM.memory_verdict(plan)
    return plan


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # settings | vllm_server_plan -> {"errors": [...], "argv": [...], "environment": {...}, ...}
            "vllm_server_plan": _VLLM.plan_server,
            # llama_server_instances | vllm_shared_gpu_errors(serving GPUs, vllm_server_gpus, utilization) -> [...]
            "vllm_shared_gpu_errors": _VLLM.shared_gpu_errors,
            # llama_server_instances | vllm_port_clash_errors(llama_server_host, vllm_server_host, vllm_server_port)
            "vllm_port_clash_errors": _VLLM.port_clash_errors,
            # {index_url, extra_index_urls, wheelhouse, ca_bundle, proxy} | pip_plan -> {"errors", "args", "environment"}
            "pip_plan": _PIP.pip_plan,
            # shape | vllm_memory_plan(weights_bytes, max_model_len (or auto), gpus, gpu_memory_mib, utilization,
            #   kv_cache_dtype) -> the terms, "max_model_len" (chosen), "fits", "fitting_max_model_len", "verdict"
            "vllm_memory_plan": vllm_memory_plan,
            # find's files | vllm_weights_bytes -> bytes vLLM loads (safetensors, else .bin)
            "vllm_weights_bytes": _VLLM.weights_bytes,
        }
