"""What the actions that talk to the served endpoints from the controller share (endpoint_check,
endpoint_benchmark): the OpenAI client, the tunnel through the host's own connection, the key read on the host."""
from __future__ import annotations

import base64
import contextlib
from typing import Any, Dict, Iterator, Mapping, Tuple

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import key_from_file
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_tunnel import Tunnel, transport_command

# What the usage lines and the docker relay read; ssh builds its own command (_ssh_command).
CONNECTION_OPTIONS = ("host", "port", "remote_user", "private_key_file", "ssh_common_args", "ssh_extra_args",
                      "remote_addr")


class EndpointAction(ActionBase):
    """An action on the controller that reaches the host's loopback endpoints."""

    TRANSFERS_FILES = False

    def begin(self, tmp: Any, task_vars: Mapping[str, Any]) -> Tuple[Dict[str, Any], Any, str, Dict[str, Any]]:
        """ActionBase's result, the openai package, the connection plugin's name and the options the tunnel and the
        usage lines read."""
        result = super().run(tmp, task_vars)
        try:
            import openai  # pylint: disable=import-outside-toplevel
        except ImportError as exc:
            raise AnsibleActionFail("%s needs the openai package on the controller (requirements-controller.txt; "
                                    "scripts/bootstrap hosts installs it): %s" % (self._task.action, exc)) from exc
        return (result, openai) + self._transport()

    def _transport(self) -> Tuple[str, Dict[str, Any]]:
        connection = self._connection._load_name  # pylint: disable=protected-access
        options = {}
        for name in CONNECTION_OPTIONS:
            try:
                options[name] = self._connection.get_option(name)
            except KeyError:
                pass
        if connection.rsplit(".", 1)[-1] == "ssh":
            options["ssh_command"] = self._ssh_command(options)
        return connection, options

    @contextlib.contextmanager
    def reach(self, connection: str, options: Mapping[str, Any], endpoint: Mapping[str, Any]) -> Iterator[
            Tuple[str, Tunnel]]:
        """The endpoint's /v1 base URL as this controller reaches it, and the tunnel (its errors say why not)."""
        try:
            tunnel = Tunnel(transport_command(connection, options, endpoint["address"], int(endpoint["port"])),
                            int(endpoint["port"]))
        except ValueError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        try:
            scheme = endpoint["url"].split("://", 1)[0]
            yield ("%s://127.0.0.1:%d/v1" % (scheme, tunnel.port) if tunnel.command else endpoint["url"] + "/v1"), tunnel
        finally:
            tunnel.close()

    def _ssh_command(self, options):
        """ssh as the connection runs it (its own _build_command: ssh_args with the control path, host key
        checking, user, port, key, common and extra args), with other arguments before the host."""
        connection = self._connection
        if connection.get_option("password") or self._play_context.password:
            raise AnsibleActionFail("%s reaches the servers with ssh -W, which cannot type ansible_password: use a "
                                    "key or an ssh-agent for this host, or run the playbook on the host itself "
                                    "(-c local)" % self._task.action)
        host = options.get("host") or self._play_context.remote_addr

        def command(*arguments):
            built = connection._build_command(  # pylint: disable=protected-access
                connection.get_option("ssh_executable"), "ssh", *arguments, host)
            return [to_text(word) for word in built]
        return command

    def key(self, endpoint: Mapping[str, Any], task_vars: Mapping[str, Any]) -> str:
        """The key the server reads, from its file on the host (root only: the task runs with become); through the
        front door, the key of the user it names, from front_door_users (the host keeps only its hash)."""
        if endpoint.get("key_user"):
            users = self._templar.template(task_vars.get("front_door_users") or {})
            return str(users.get(endpoint["key_user"], ""))
        if not endpoint.get("key_file"):
            return ""
        return key_from_file(self.host_file(endpoint, endpoint["key_file"], task_vars), endpoint.get("key_variable", ""))

    def host_file(self, endpoint: Mapping[str, Any], path: str, task_vars: Mapping[str, Any]) -> str:
        """A file on the host, read with slurp (a key file, the front door's certificate authority)."""
        read = self._execute_module(module_name="ansible.builtin.slurp", module_args={"src": path},
                                    task_vars=task_vars)
        if read.get("failed"):
            raise AnsibleActionFail("%s: cannot read %s: %s" % (endpoint["name"], path, read.get("msg")))
        return base64.b64decode(read["content"]).decode()
