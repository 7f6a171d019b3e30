"""Action plugin for llama_server_plan: the llama-server instances planned, sized and written out in one step (its
documentation: plugins/modules/llama_server_plan.py)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible.plugins.action import ActionBase

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import (
    instance_commands,
    memory_refusal,
    plan_instances,
    split_row_warnings,
    unfetched_models,
)

UNCHANGED = " Nothing on the host was changed."


class ActionModule(ActionBase):
    """Plans on the controller (pure functions); sizes on the host, where the model files are (gpu_memory_plan)."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("instances", "settings", "models", "gpus", "size", "models_on_host"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        warnings: List[str] = []
        result.update(self._plan(self._task.args, task_vars, warnings))
        if warnings:
            result["warnings"] = result.get("warnings", []) + warnings
        return result

    def _plan(self, args: Mapping[str, Any], task_vars: Dict[str, Any], warnings: List[str]) -> Dict[str, Any]:
        models = args.get("models") or {}
        plan = plan_instances(args.get("instances", []), args["settings"], models)
        if plan["errors"] or not args.get("size", True):
            return _planned(plan, [])
        unfetched = unfetched_models(plan, models)
        if unfetched and args.get("models_on_host", True):
            return dict(failed=True, msg=(
                "llama_server_instances %s: the models_list file is not on the host, or differs from its sha256 (or "
                "was never stamped). Run the models stage with it (--tags models,llama_server, or the whole "
                "site.yml): it fetches and checks the file." % ", ".join(unfetched)) + UNCHANGED)
        sized: List[Dict[str, Any]] = []
        warnings += split_row_warnings(plan)
        if plan["instances"]:
            memory = self._execute_module(module_name="v100.llm.gpu_memory_plan", task_vars=task_vars, module_args={
                "gpus": args.get("gpus") or [], "memory_plans": [p["memory_plan"] for p in plan["instances"]]})
            warnings += memory.get("warnings", [])
            if memory.get("failed"):
                return _not_sized(memory, plan["instances"])
            sized = memory["memory_plans"]
        return _planned(instance_commands(plan, sized), sized)


def _not_sized(memory: Mapping[str, Any], instances: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The instances that do not fit their GPUs, in their own terms, or the module's own failure."""
    refusals = memory.get("refusals") or []
    by_plan = {instance["memory_plan"]["name"]: instance for instance in instances}
    return dict(failed=True, refusals=refusals, msg="\n".join(
        ["The llama-server instances do not fit their GPUs:"]
        + ["- " + (memory_refusal(refusal["message"], by_plan[refusal["value"]]) if refusal["value"] in by_plan
                   else refusal["message"].replace("memory_plans=", "", 1)) for refusal in refusals]
        + [UNCHANGED.strip()]) if refusals else "%s%s" % (memory.get("msg"), UNCHANGED))


def _planned(plan: Mapping[str, Any], sized: List[Dict[str, Any]]) -> Dict[str, Any]:
    result = dict(changed=False, instances=plan["instances"], errors=plan["errors"], memory_plans=sized,
                  endpoints=[instance["endpoint"] for instance in plan["instances"]])
    if plan["errors"]:
        result.update(failed=True, msg=" ".join(plan["errors"]) + UNCHANGED)
    return result
