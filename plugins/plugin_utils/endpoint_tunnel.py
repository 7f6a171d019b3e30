"""A port on the controller's loopback that reaches a port on a managed host's loopback.

The servers listen on the host's 127.0.0.1 (the roles' default), so a client
on the controller gets there through the host's own connection: `ssh -W`
over SSH, a small relay run with `docker exec -i` in a container, or the
port itself with the local connection. Each client connection gets its own
transport process; nothing listens on the host beyond the server itself.
The controller's end is a port on its own loopback, open to its local users
for the seconds the checks take.
"""
from __future__ import annotations

import socket
import subprocess
import threading
from typing import Any, List, Mapping, Optional

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


def transport_command(connection: str, options: Mapping[str, Any], address: str,
                      port: int) -> Optional[List[str]]:
    """The command whose stdin and stdout are a TCP connection to address:port on the host, for Ansible's
    connection plugin `connection` and its options; None for the local connection (the port is the controller's);
    ValueError for a connection this cannot tunnel through.

    Over SSH, options["ssh_command"] builds the command as the connection builds its own (its ssh_args, control
    path, host key checking, user, port, key, common and extra args), so `-W` rides the login Ansible made.
    """
    name = connection.rsplit(".", 1)[-1]
    if name == "local":
        return None
    if name == "ssh":
        return options["ssh_command"]("-W", "[%s]:%d" % (address, port) if ":" in address else "%s:%d" % (address, port))
    if name in ("docker", "docker_api"):
        return ["docker", "exec", "-i", str(options["remote_addr"]), "python3", "-c", DOCKER_RELAY, address,
                str(port)]
    raise ValueError("the connection %s cannot carry a port forward here: use ansible.builtin.ssh, local or "
                     "community.docker.docker" % connection)


class Tunnel:
    """Listens on 127.0.0.1:<free port>; each accepted connection is piped through a transport command (None: the
    port is this machine's own). Every transport's last words on stderr are kept (an ssh refusal, a missing
    binary), to say why nothing answered."""

    def __init__(self, command: Optional[List[str]], port: int) -> None:
        self.command = command
        self.errors: List[str] = []
        self._lock = threading.Lock()
        self._closed = False
        self._processes: List[subprocess.Popen] = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1] if command else port
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        if command:
            self._acceptor.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                try:
                    process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE)
                except OSError as exc:
                    self.errors.append("%s: %s" % (self.command[0], exc))
                    _close(client)
                    continue
                self._processes.append(process)
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

    def _host_to_client(self, client: socket.socket, process: subprocess.Popen) -> None:
        try:
            while True:
                data = process.stdout.read1(65536)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            # Its last words first: the client, woken by the close, may ask for them at once.
            said = process.stderr.read().decode(errors="replace").strip().splitlines()
            if process.wait() != 0 and said:
                self.errors.append(said[-1])
            _close(client)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            processes = list(self._processes)
        # shutdown wakes the accept() a plain close leaves blocked (and listening).
        _close(self.listener)
        if self.command:
            self._acceptor.join(timeout=10)
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()


def _close(sock: socket.socket) -> None:
    """shutdown, then close: another thread's recv() or accept() keeps a socket open until it is woken, and the
    peer would wait for an answer that never comes."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
