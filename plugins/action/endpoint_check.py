"""Action plugin for endpoint_check: the OpenAI client on the controller, through a tunnel to the host's loopback."""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_action import EndpointAction
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import NO_ANSWER, check_endpoint
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_usage import usage_lines


def _key_source(endpoint):
    if endpoint.get("key_user"):
        return "the key of user %s" % endpoint["key_user"]
    return "key in %s (root only)" % endpoint["key_file"] if endpoint.get("key_file") else "no key"


class ActionModule(EndpointAction):
    """Checks each endpoint (endpoint_check's documentation) and fails naming the instance, URL and check."""

    _VALID_ARGS = frozenset(("endpoints", "timeout"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result, openai, connection, options = self.begin(tmp, task_vars)
        endpoints = self._task.args.get("endpoints") or []
        timeout = float(self._task.args.get("timeout", 600))
        reports, failed, summary, usage = [], [], [], []
        for endpoint in endpoints:
            endpoint = dict(endpoint, api_key=self.key(endpoint, task_vars),
                            ca_pem=self.host_file(endpoint, endpoint["ca_file"], task_vars) if endpoint.get("ca_file")
                            else "")
            with self.reach(connection, options, endpoint) as (base_url, tunnel):
                rows = check_endpoint(openai, base_url, endpoint, timeout)
            if tunnel.errors and rows[0]["state"] == "failed":
                rows[0]["detail"] = "%s on the host's %s port %s; the tunnel (%s) said: %s" % (
                    NO_ANSWER, endpoint["address"], endpoint["port"], tunnel.command[0], tunnel.errors[-1])
            reports.append({"name": endpoint["name"], "url": endpoint["url"], "checks": rows})
            summary += ["%s %s/v1 (model %s, %s)" % (endpoint["name"], endpoint["url"], endpoint["model"],
                                                     _key_source(endpoint))]
            summary += ["  %-14s %-7s %s" % (check["check"], check["state"], check["detail"]) for check in rows]
            usage += ["%s: %s/v1 on %s, model %s, %s" % (
                endpoint["name"], endpoint["url"], task_vars.get("inventory_hostname"), endpoint["model"],
                _key_source(endpoint))]
            usage += usage_lines(connection, options, endpoint)
            failed += ["%s (%s): %s: %s" % (endpoint["name"], endpoint["url"], check["check"], check["detail"])
                       for check in rows if check["state"] == "failed"]
        if not endpoints:
            summary.append("no server to check on this host (llama_cpp_enabled is off, and vllm_enabled or "
                           "vllm_server_model)")
        result.update(changed=False, endpoints=reports, summary=summary, usage=usage, failed=bool(failed))
        if failed:
            result["msg"] = "The OpenAI client found problems: " + " | ".join(failed)
        return result
