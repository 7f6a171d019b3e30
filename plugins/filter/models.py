"""Filters of the models stage: where each model comes from and what is on disk, and a model's shape from its
config.json (module_utils/models and memory, unit-tested in tests/unit)."""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_MODELS = Deferred("models.sources")
_MEMORY = Deferred("memory.plan")


def hf_model_shape(config: Any) -> Dict[str, Any]:
    """config.json content (parsed, or its text) | hf_model_shape -> the model's shape, or {"error": "..."}."""
    try:
        if isinstance(config, str):
            config = json.loads(config)
        if not isinstance(config, Mapping):
            raise ValueError("config.json is not a JSON object")
        shape = _MEMORY.shape_from_hf_config(config)
    except (ValueError, TypeError) as exc:
        return {"error": str(exc)}
    result = dict(vars(shape))
    result["error"] = ""
    return result


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # models_list | models_fetch_plan(models_dir, hf_endpoint) -> {"models": [...], "errors": [...]}
            "models_fetch_plan": _MODELS.fetch_plan,
            # folders | models_folder_orders(listings by name, hf_endpoint) -> {"models": [...], "errors": [...]}
            "models_folder_orders": _MODELS.folder_orders,
            # fetch orders | models_files(model_files results) -> {name: {path, sha256, verified, size, gguf, parts}}
            "models_files": _MODELS.models_files,
            # fetch_plan's result | models_planned_files -> models_files' shape, nothing fetched yet (preflight)
            "models_planned_files": _MODELS.planned_files,
            # config.json | hf_model_shape -> {layers, kv_heads, head_dim, architecture, quantization, dtype, ...}
            "hf_model_shape": hf_model_shape,
        }
