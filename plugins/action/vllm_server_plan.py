"""Action plugin for vllm_server_plan: the vLLM server read, sized, checked and written out in one step (its
documentation: plugins/modules/vllm_server_plan.py)."""
from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

from ansible.plugins.action import ActionBase

from ansible_collections.v100.llm.plugins.module_utils.vllm.server_plan import HF_REPO, is_local_model, plan_on_model

UNCHANGED = "Nothing on the host was changed."
HUB = "https://huggingface.co"


class ActionModule(ActionBase):
    """Reads the model on the host (a folder's config.json and weights, or a repository's config.json from the
    endpoint the host downloads from), plans on the controller (pure functions), and checks the model against
    the stack's vLLM rules (nvidia_stack_check)."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("settings", "gpus", "stack", "folder_on_host", "hf_token"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        settings = args["settings"]
        folder_on_host = bool(args.get("folder_on_host", True))
        local = is_local_model(str(settings["model"])) and folder_on_host
        gpus = args.get("gpus") or []
        stack = dict(args.get("stack") or {})
        warnings: List[str] = []
        weights: List[Dict[str, Any]] = []
        config: Optional[str] = None
        if local:
            config = self._folder_config(settings["model"], task_vars)
            weights = self._run("ansible.builtin.find", task_vars, paths=settings["model"],
                                patterns=["*.safetensors", "*.bin"]).get("files", [])
        elif HF_REPO.match(str(settings["model"])):
            config = self._repository_config(settings, args.get("hf_token") or "",
                                             stack.get("vllm_model_architecture") or '""', task_vars, warnings)
        serving = settings["gpus"] if isinstance(settings["gpus"], list) else []
        memory = [gpu["memory_total_mib"] for gpu in gpus
                  if gpu.get("index") in serving and gpu.get("memory_total_mib")]
        plan = plan_on_model(settings, config, weights, memory, folder_on_host)
        refusals = list(plan["errors"])
        # A folder without a readable config.json is refused above; it has nothing to check.
        if not local or plan["shape"].get("error") == "":
            checked = self._run("v100.llm.nvidia_stack_check", task_vars, **dict(
                stack, gpus=gpus, require_gpu=False, vllm_enabled=True,
                vllm_quantization=plan["quantization"], vllm_dtype=plan["dtype"],
                vllm_model_architecture=plan["shape"].get("architecture") or stack.get("vllm_model_architecture", ""),
                vllm_model_dtype=plan["shape"].get("dtype") or ""))
            warnings += checked.get("warnings", [])
            if checked.get("failed"):
                refusals += [refusal["message"] for refusal in checked.get("refusals") or []] or [checked.get("msg")]
        result["changed"] = False
        # plan_server's own (a repository's max_model_len auto, an fp8 cache) after the host's.
        warnings += plan.get("warnings", [])
        if warnings:
            result["warnings"] = result.get("warnings", []) + warnings
        if refusals:
            return dict(result, failed=True, errors=refusals, msg="\n".join(
                ["The vLLM server is refused:"] + ["- %s" % refusal for refusal in refusals] + [UNCHANGED]))
        result.update({key: value for key, value in plan.items() if key != "warnings"})
        if plan["memory"]:
            result["msg"] = "%s %s" % (settings["model"], plan["memory"]["verdict"])
        return result

    def _run(self, module: str, task_vars: Dict[str, Any], **module_args: Any) -> Dict[str, Any]:
        return self._execute_module(module_name=module, module_args=module_args, task_vars=task_vars)

    def _folder_config(self, folder: str, task_vars: Dict[str, Any]) -> Optional[str]:
        read = self._run("ansible.builtin.slurp", task_vars, src=folder + "/config.json")
        if read.get("failed") or "content" not in read:
            return None
        return base64.b64decode(read["content"]).decode("utf-8", "replace")

    def _repository_config(self, settings: Dict[str, Any], token: str, architecture: str,
                           task_vars: Dict[str, Any], warnings: List[str]) -> Optional[str]:
        """The endpoint's config.json, as vLLM will download it; offline, or unread, None (and a warning: the
        rules then use vllm_model_architecture and vllm_quantization)."""
        if settings.get("hf_offline"):
            return None
        url = "%s/%s/resolve/main/config.json" % (settings.get("hf_endpoint") or HUB, settings["model"])
        answer = self._run("v100.llm.http_text", task_vars, url=url, timeout=30,
                           headers={"Authorization": "Bearer " + token} if token else {})
        if answer.get("status") == 200 and "content" in answer:
            return answer["content"]
        warnings.append("%s's config.json was not read from the endpoint (%s): the rules use "
                        "vllm_model_architecture=%s and vllm_quantization=%s" % (
                            settings["model"], answer.get("msg") or "HTTP %s" % answer.get("status", -1),
                            architecture, settings.get("quantization") or '""'))
        return None

