"""Filters of the models stage: where each model comes from and what is on disk (module_utils/models,
unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_MODELS = Deferred("models.sources")


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
        }
