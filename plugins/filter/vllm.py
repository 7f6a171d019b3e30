"""Filters of the vLLM stage: pip's sources, and llama-server instances beside vLLM (module_utils/vllm,
unit-tested in tests/unit). The server itself is planned by the vllm_server_plan action."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_VLLM = Deferred("vllm.server_plan")
_PIP = Deferred("vllm.pip_options")


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # llama_server_instances | vllm_shared_gpu_errors(serving GPUs, vllm_server_gpus, utilization) -> [...]
            "vllm_shared_gpu_errors": _VLLM.shared_gpu_errors,
            # llama_server_instances | vllm_port_clash_errors(llama_server_host, vllm_server_host, vllm_server_port)
            "vllm_port_clash_errors": _VLLM.port_clash_errors,
            # {index_url, extra_index_urls, wheelhouse, ca_bundle, proxy} | pip_plan -> {"errors", "args", "environment"}
            "pip_plan": _PIP.pip_plan,
        }
