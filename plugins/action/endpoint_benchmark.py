"""Action plugin for endpoint_benchmark: load from the controller, through a tunnel to the host's loopback."""
from __future__ import annotations

import datetime
import os
from pathlib import Path

from ansible.errors import AnsibleActionFail

from ansible_collections.v100.llm.plugins.plugin_utils.benchmark_report import decode_limit, engine_rows, markdown, write
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_action import EndpointAction
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import direct_client
from ansible_collections.v100.llm.plugins.plugin_utils.load_generator import against_baseline, run_endpoint

SETTINGS = ("workloads", "concurrency", "prompt_tokens", "generated_tokens", "rounds", "targets")


class ActionModule(EndpointAction):
    """Measures each endpoint (endpoint_benchmark's documentation) and writes its report on the controller."""

    _VALID_ARGS = frozenset(("endpoints", "settings", "memory_bandwidth_gbps", "engine", "output_dir", "timeout",
                             "baseline"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result, openai, connection, options = self.begin(tmp, task_vars)
        args = self._task.args
        settings = {key: args["settings"][key] for key in SETTINGS}
        engine = args.get("engine") or {}
        host = task_vars.get("inventory_hostname", "host")
        now = datetime.datetime.now(datetime.timezone.utc)
        folder = Path(os.path.abspath(os.path.expanduser(args["output_dir"])))
        files, summary, unreachable, measured_levels = [], [], [], {}
        for endpoint in args.get("endpoints") or []:
            endpoint = dict(endpoint, api_key=self.key(endpoint, task_vars))
            with self.reach(connection, options, endpoint) as (base_url, tunnel):
                model_bytes, context = self._model_card(openai, base_url, endpoint)
                endpoint["context_tokens"] = context
                levels = against_baseline(run_endpoint(openai, base_url, endpoint, settings,
                                                       float(args.get("timeout", 900))), args.get("baseline") or [])
            measured_levels[endpoint["name"]] = levels
            if all(row["failed"].get("connection") == row["requests"] for row in levels):
                unreachable.append("%s (%s): no answer on the host's %s port %s%s" % (
                    endpoint["name"], endpoint["url"], endpoint["address"], endpoint["port"],
                    "; the tunnel said: %s" % tunnel.errors[-1] if tunnel.errors else ""))
            measured = engine.get(endpoint["name"]) or {}
            report = {
                "host": host, "endpoint": endpoint["name"], "kind": endpoint["kind"], "model": endpoint["model"],
                "url": endpoint["url"], "time": now.strftime("%Y-%m-%d %H:%M UTC"), "settings": settings,
                # What a comparison started the server with (benchmark_speculative_types): a --spec-type, or the
                # instance's planned setting.
                "speculative": endpoint.get("speculative", ""),
                "limit": decode_limit(args.get("memory_bandwidth_gbps"), model_bytes), "levels": levels,
                "engine": {"argv": measured["argv"], "rows": engine_rows(measured["json"])} if measured.get("json")
                else {"skipped": measured.get("skipped", "not asked for (benchmark_engine)")},
            }
            written, no_plots = write(report, folder / ("%s-%s-%s" % (host, endpoint["name"],
                                                                     now.strftime("%Y%m%d-%H%M%S"))))
            files += written
            summary += markdown(report).splitlines() + ["written: " + ", ".join(written)] + \
                ([no_plots] if no_plots else []) + [""]
        if unreachable:
            raise AnsibleActionFail("endpoint_benchmark reached no server: " + " | ".join(unreachable))
        result.update(changed=False, files=files, summary=summary, levels=measured_levels)
        return result

    @staticmethod
    def _model_card(openai, base_url, endpoint):
        """From the server's /v1/models: the weights' bytes (llama-server's meta.size; vLLM tells none) and the
        tokens one request may hold (llama-server's meta.n_ctx, a slot; vLLM's max_model_len); None where not told
        or not reached (the load then reports the connection failures)."""
        client = direct_client(openai, base_url, endpoint.get("api_key", ""), 60)
        try:
            cards = [model.model_extra or {} for model in client.models.list().data if model.id == endpoint["model"]]
        except openai.APIError:
            return None, None
        card = cards[0] if cards else {}
        meta = card.get("meta") or {}
        return meta.get("size"), meta.get("n_ctx") or card.get("max_model_len")
