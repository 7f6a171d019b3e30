"""Action plugin for endpoint_check: the OpenAI client on the controller, through a tunnel to the host's loopback."""
from __future__ import annotations

import base64

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import NO_ANSWER, check_endpoint, key_from_file
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_tunnel import Tunnel, transport_command
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_usage import usage_lines

# What the usage lines and the docker relay read; ssh builds its own command (_ssh_command).
CONNECTION_OPTIONS = ("host", "port", "remote_user", "private_key_file", "ssh_common_args", "ssh_extra_args",
                      "remote_addr")


class ActionModule(ActionBase):
    """Checks each endpoint (endpoint_check's documentation) and fails naming the instance, URL and check."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("endpoints", "timeout"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp  # unused since Ansible 2.5
        try:
            import openai  # pylint: disable=import-outside-toplevel
        except ImportError as exc:
            raise AnsibleActionFail("endpoint_check needs the openai package on the controller (requirements-"
                                    "controller.txt; scripts/bootstrap hosts installs it): %s" % exc) from exc
        connection = self._connection._load_name  # pylint: disable=protected-access
        options = {}
        for name in CONNECTION_OPTIONS:
            try:
                options[name] = self._connection.get_option(name)
            except KeyError:
                pass
        if connection.rsplit(".", 1)[-1] == "ssh":
            options["ssh_command"] = self._ssh_command(options)
        endpoints = self._task.args.get("endpoints") or []
        timeout = float(self._task.args.get("timeout", 600))
        reports, failed, summary, usage = [], [], [], []
        for endpoint in endpoints:
            endpoint = dict(endpoint, api_key=self._key(endpoint, task_vars))
            try:
                tunnel = Tunnel(transport_command(connection, options, endpoint["address"], int(endpoint["port"])),
                                int(endpoint["port"]))
            except ValueError as exc:
                raise AnsibleActionFail(str(exc)) from exc
            try:
                base_url = "http://127.0.0.1:%d/v1" % tunnel.port if tunnel.command else endpoint["url"] + "/v1"
                rows = check_endpoint(openai, base_url, endpoint, timeout)
            finally:
                tunnel.close()
            if tunnel.errors and rows[0]["state"] == "failed":
                rows[0]["detail"] = "%s on the host's %s port %s; the tunnel (%s) said: %s" % (
                    NO_ANSWER, endpoint["address"], endpoint["port"], tunnel.command[0], tunnel.errors[-1])
            reports.append({"name": endpoint["name"], "url": endpoint["url"], "checks": rows})
            summary += ["%s %s/v1 (model %s, %s)" % (endpoint["name"], endpoint["url"], endpoint["model"],
                                                     "key in %s" % endpoint["key_file"] if endpoint.get("key_file")
                                                     else "no key")]
            summary += ["  %-14s %-7s %s" % (check["check"], check["state"], check["detail"]) for check in rows]
            usage += ["%s: %s/v1 on %s, model %s%s" % (
                endpoint["name"], endpoint["url"], task_vars.get("inventory_hostname"), endpoint["model"],
                ", key in %s (root only)" % endpoint["key_file"] if endpoint.get("key_file") else ", no key")]
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

    def _ssh_command(self, options):
        """ssh as the connection runs it (its own _build_command: ssh_args with the control path, host key
        checking, user, port, key, common and extra args), with other arguments before the host."""
        connection = self._connection
        if connection.get_option("password") or self._play_context.password:
            raise AnsibleActionFail("endpoint_check reaches the servers with ssh -W, which cannot type "
                                    "ansible_password: use a key or an ssh-agent for this host, or run "
                                    "playbooks/verify.yml on the host itself (-c local)")
        host = options.get("host") or self._play_context.remote_addr

        def command(*arguments):
            built = connection._build_command(  # pylint: disable=protected-access
                connection.get_option("ssh_executable"), "ssh", *arguments, host)
            return [to_text(word) for word in built]
        return command

    def _key(self, endpoint, task_vars):
        """The key the server reads, from its file on the host (root only: the task runs with become)."""
        if not endpoint.get("key_file"):
            return ""
        read = self._execute_module(module_name="ansible.builtin.slurp", module_args={"src": endpoint["key_file"]},
                                    task_vars=task_vars)
        if read.get("failed"):
            raise AnsibleActionFail("%s: cannot read its key file %s: %s" % (endpoint["name"], endpoint["key_file"],
                                                                             read.get("msg")))
        return key_from_file(base64.b64decode(read["content"]).decode(), endpoint.get("key_variable", ""))
