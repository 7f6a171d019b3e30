"""A port on the controller's loopback that reaches a port on a managed host's loopback.

The servers listen on the host's 127.0.0.1 (the roles' default), so a client
on the controller gets there through the host's own connection: `ssh -W`
over SSH, a small relay run with `docker exec -i` in a container, or the
port itself with the local connection. Each client connection gets its own
transport process; nothing listens on the host beyond the server itself.
"""
from __future__ import annotations

import shlex
import socket
import subprocess
import threading
from typing import List, Mapping, Optional

# Run on the host by `docker exec -i`: stdin to the port, the port to stdout.
DOCKER_RELAY = (
    "import os, socket, sys, threading\n"
    "peer = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
    "def send():\n"
    "    while True:\n"
    "        data = os.read(0, 65536)\n"
    "        if not data:\n"
    "            peer.shutdown(socket.SHUT_WR)\n"
    "            return\n"
    "        peer.sendall(data)\n"
    "threading.Thread(target=send, daemon=True).start()\n"
    "while True:\n"
    "    data = peer.recv(65536)\n"
    "    if not data:\n"
    "        break\n"
    "    os.write(1, data)\n"
)


def transport_command(connection: str, options: Mapping[str, object], address: str,
                      port: int) -> Optional[List[str]]:
    """The command whose stdin and stdout are a TCP connection to address:port on the host, for Ansible's
    connection plugin `connection` and its options; None for the local connection (the port is the controller's);
    ValueError for a connection this cannot tunnel through."""
    name = connection.rsplit(".", 1)[-1]
    if name == "local":
        return None
    if name in ("ssh", "paramiko_ssh"):
        command = ["ssh", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", "-W", "[%s]:%d" % (address, port) if ":" in address
                   else "%s:%d" % (address, port)]
        if options.get("port"):
            command += ["-p", str(options["port"])]
        if options.get("remote_user"):
            command += ["-l", str(options["remote_user"])]
        if options.get("private_key_file"):
            command += ["-i", str(options["private_key_file"])]
        for key in ("ssh_common_args", "ssh_extra_args"):
            command += shlex.split(str(options.get(key) or ""))
        return command + [str(options["host"])]
    if name in ("docker", "docker_api"):
        return ["docker", "exec", "-i", str(options["remote_addr"]), "python3", "-c", DOCKER_RELAY, address,
                str(port)]
    raise ValueError("the connection %s cannot carry a port forward here: use ssh, local or community.docker.docker"
                     % connection)


class Tunnel:
    """Listens on 127.0.0.1:<free port>; each accepted connection is piped through a transport command (None: the
    port is this machine's own)."""

    def __init__(self, command: Optional[List[str]], port: int) -> None:
        self.command = command
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1] if command else port
        self.processes: List[subprocess.Popen] = []
        if command:
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL)
            self.processes.append(process)
            threading.Thread(target=self._client_to_host, args=(client, process), daemon=True).start()
            threading.Thread(target=self._host_to_client, args=(client, process), daemon=True).start()

    @staticmethod
    def _client_to_host(client: socket.socket, process: subprocess.Popen) -> None:
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                process.stdin.write(data)
                process.stdin.flush()
        except OSError:
            pass
        finally:
            try:
                process.stdin.close()
            except OSError:
                pass

    @staticmethod
    def _host_to_client(client: socket.socket, process: subprocess.Popen) -> None:
        try:
            while True:
                data = process.stdout.read1(65536)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            # shutdown, not only close: the other thread's recv() keeps the socket open until it is woken, and
            # the client would wait for an answer that never comes.
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            client.close()

    def close(self) -> None:
        self.listener.close()
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
