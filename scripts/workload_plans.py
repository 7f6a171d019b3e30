#!/usr/bin/env python3
"""The llama_server role's default plan for the hosts and models its users run.

For each case of tests/fixtures/models/workload-models.json (a ~27B model on
one or two V100s, and a 14B on a 16GB card): one instance with every
llama_server default (roles/llama_server/defaults/main.yml); and each host of
inventories/example as its owner gets it (its instances and llama_server_*
variables over the defaults). Planned by the role's own code (server_plan's plan_instances and instance_commands,
with gpu_memory_plan's sizing of the model's GGUF header against the GPUs' memory, as the action llama_server_plan
runs them). Prints a Markdown table:
slots x tokens, KV cache type, prompt cache, memory left, and whether a
slot holds one request of the longest prompt and answer, or the refusal.

    scripts/workload_plans.py              print the table
    scripts/workload_plans.py --check FILE exit 1 unless FILE has the table as printed

docs/BENCHMARKS.md carries the table; tests/unit/test_workload_plans.py
fails when it is stale.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

ROOT = Path(__file__).resolve().parents[1]
# The collection v100.llm, as a clone holds it (ansible.cfg's collections_path).
sys.path.insert(0, str(ROOT / "collections"))

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import instance_commands, plan_instances, request_tokens  # noqa: E402
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import shape_from_gguf  # noqa: E402
from ansible_collections.v100.llm.plugins.module_utils.memory.sizing import size_plans  # noqa: E402
from ansible_collections.v100.llm.plugins.modules.gpu_memory_plan import MEMORY_PLAN_SPEC  # noqa: E402

CASES = ROOT / "tests" / "fixtures" / "models" / "workload-models.json"
DEFAULTS = ROOT / "roles" / "llama_server" / "defaults" / "main.yml"
EXAMPLE = ROOT / "inventories" / "example"
# The example's hosts: GPUs as their comments in hosts.yml say.
EXAMPLE_HOSTS = {"v100-single": 1, "v100-dual": 2}
# The settings roles/llama_server/tasks/plan.yml passes from a role variable of the same name.
ROLE_SETTINGS = ("host", "ctx_size", "parallel", "slots_max", "prompt_tokens_max", "answer_tokens_max",
                 "slot_context_max", "kv_unified", "batch_size", "ubatch_size", "kv_cache_type", "prompt_cache_mib",
                 "speculative", "gpu_layers", "flash_attention", "metrics", "webui", "extra_args", "restart_schedule",
                 "restart_stagger_minutes")


def role_settings(gpu_count: int, inventory: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    variables = dict(yaml.safe_load(DEFAULTS.read_text()), **(inventory or {}))
    settings = {name: variables["llama_server_" + name] for name in ROLE_SETTINGS}
    settings.update(server_bin="/opt/llama.cpp/current/bin/llama-server", backend="cuda", gpu_count=gpu_count,
                    serving_gpus=list(range(gpu_count)), api_key_set=False, config_dir="/etc/llama-server")
    return settings


def plan_case(case: Dict[str, Any], models: Dict[str, Any], gpus: Dict[str, Any]) -> Dict[str, Any]:
    """One case -> its row: the planned instance, or the refusal."""
    model, gpu = models[case["model"]], gpus[case["gpu"]]
    settings = role_settings(case["count"], case.get("inventory"))
    instance = case.get("instance") or {"name": "serve", "model": case["model"], "port": 8081}
    planned = plan_instances([instance], settings,
                             {instance["model"]: {"path": "/srv/models/%s.gguf" % case["model"], "sha256": "0" * 64}})
    if planned["errors"]:
        return {"case": case, "refused": " ".join(planned["errors"])}
    spec = planned["instances"][0]["memory_plan"]
    # As gpu_memory_plan reads it: its option defaults, the GGUF header's shape and the file's size.
    plan = {option: option_spec.get("default") for option, option_spec in MEMORY_PLAN_SPEC.items()}
    plan.update(spec, missing=False, unreadable="", weights_bytes=model["size_bytes"],
                shape=shape_from_gguf({"metadata": model["header"], "parameter_count": None,
                                       "array_lengths": {"tokenizer.ggml.tokens": model["vocab_size"]}}))
    facts = [{"index": index, "name": gpu["name"], "memory_total_mib": gpu["memory_total_mib"]}
             for index in range(case["count"])]
    sized, refusals, _ = size_plans([plan], facts, facts)
    if refusals:
        return {"case": case, "refused": refusals[0].message()}
    commands = instance_commands(planned, sized)
    return {"case": case, "instance": commands["instances"][0], "sized": sized[0],
            "request": request_tokens(settings)}


def example_cases(models: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One case per instance of each inventories/example host, its model found by file name."""
    by_file = {model.get("file"): name for name, model in models.items()}
    cases = []
    for host, count in EXAMPLE_HOSTS.items():
        inventory = yaml.safe_load((EXAMPLE / "group_vars" / "llm_hosts" / "main.yml").read_text())
        host_vars = EXAMPLE / "host_vars" / ("%s.yml" % host)
        if host_vars.exists():
            inventory.update(yaml.safe_load(host_vars.read_text()) or {})
        files = {entry["name"]: entry.get("hf_file") for entry in inventory.get("models_list", [])}
        for instance in inventory["llama_server_instances"]:
            cases.append({"host": "inventories/example %s" % host, "gpu": "v100-32gb", "count": count,
                          "model": by_file[files[instance["model"]]], "instance": instance,
                          "inventory": {key: value for key, value in inventory.items()
                                        if key.startswith("llama_server_")}})
    return cases


def rows() -> List[Dict[str, Any]]:
    data = json.loads(CASES.read_text())
    cases = data["cases"] + example_cases(data["models"])
    return [plan_case(case, data["models"], data["gpus"]) for case in cases]


def table(planned: List[Dict[str, Any]]) -> str:
    lines = ["| host and model | slots x tokens | KV cache | prompt cache | left on the busiest GPU | "
             "one 16,384-token prompt + 4,096 answer |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in planned:
        case = row["case"]
        where = "%s, %s" % (case["host"], case["model"])
        if "refused" in row:
            lines.append("| %s | refused before any change: %s | | | | no (refused) |" % (where, row["refused"]))
            continue
        instance, sized = row["instance"], row["sized"]
        per_slot = instance["ctx_size"] // instance["parallel"]
        recurrent = " + %d MiB recurrent state" % sized["recurrent_mib"] if sized["recurrent_mib"] else ""
        lines.append("| %s | %d x %d | %s, %d MiB%s | %s | %d of %d MiB | %s |" % (
            where, instance["parallel"], per_slot, sized["kv_cache_type"], sized["kv_cache_mib"], recurrent,
            "off" if instance["launch"]["prompt_cache_mib"] == 0 else "%d MiB" % instance["launch"]["prompt_cache_mib"],
            sized["headroom_mib"], sized["gpu_memory_mib"], "yes" if per_slot >= row["request"] else "NO"))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", metavar="FILE", help="exit 1 unless FILE contains the table as printed")
    arguments = parser.parse_args()
    printed = table(rows())
    if arguments.check:
        if printed not in Path(arguments.check).read_text():
            print("%s does not have the current table; print it with %s and paste it in:\n\n%s" % (
                arguments.check, sys.argv[0], printed), file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(printed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
