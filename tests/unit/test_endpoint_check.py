"""endpoint_check's checks with the real OpenAI client, against a stub that replays llama-server's recorded answers
(tests/fixtures/llama-server-api), and its tunnel with the relay the demo's container runs."""
import http.server
import json
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "collections"))
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import (  # noqa: E402
    check_endpoint, key_from_file)
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_tunnel import (  # noqa: E402
    DOCKER_RELAY, Tunnel, transport_command)
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_usage import usage_lines  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "llama-server-api"
KEY = "demo-key-not-a-secret"
ENDPOINT = {"name": "demo", "kind": "llama-server", "url": "http://127.0.0.1:8080", "address": "127.0.0.1",
            "port": 8080, "model": "smollm2", "key_file": "/etc/llama-server/demo.key", "api_key": KEY,
            "prompt_tokens_max": 8}


def stub(behaviour):
    """A server on a free loopback port answering as the recorded llama-server, changed by `behaviour`."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, body, content_type="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def authorized(self):
            if behaviour.get("open") or self.headers.get("Authorization") == "Bearer " + KEY:
                return True
            self.answer(401, (RECORDED / "unauthorized.txt").read_text().splitlines()[0].encode())
            return False

        def do_GET(self):
            if self.authorized():
                name = {"/v1/models": "models.json", "/slots": behaviour.get("slots", "slots.json")}.get(
                    self.path, "props.json")
                self.answer(200, (RECORDED / name).read_bytes())

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.authorized():
                return
            if self.path == "/v1/completions":
                recorded = json.loads((RECORDED / "completion.json").read_text())
                recorded["usage"]["prompt_tokens"] = len(request["prompt"]) - behaviour.get("cut", 0)
                self.answer(200, json.dumps(recorded).encode())
            elif request.get("stream"):
                events = (RECORDED / "chat-stream.sse").read_bytes()
                if behaviour.get("one_chunk"):  # what a buffering proxy makes of the content
                    lines = [json.loads(line[6:]) for line in events.decode().split("\n\n")
                             if line.startswith("data: {")]
                    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in lines if c["choices"])
                    lines = [lines[0], dict(lines[1], choices=[dict(lines[1]["choices"][0], delta={"content": text})]),
                             lines[-1]]
                    events = b"".join(b"data: " + json.dumps(line).encode() + b"\n\n" for line in lines) + \
                        b"data: [DONE]\n\n"
                self.answer(200, events, "text/event-stream")
            else:
                self.answer(200, (RECORDED / "chat.json").read_bytes())

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_checks(endpoint=None, **behaviour):
    server = stub(behaviour)
    try:
        rows = check_endpoint(openai, "http://127.0.0.1:%d/v1" % server.server_address[1], endpoint or ENDPOINT, 30)
    finally:
        server.shutdown()
    return {row["check"]: row for row in rows}


def test_llama_server_as_recorded_passes_each_check_and_skips_tools_its_template_lacks():
    rows = run_checks()
    assert {name: row["state"] for name, row in rows.items()} == {
        "models": "ok", "chat": "ok", "stream": "ok", "tool call": "skipped", "longest prompt": "ok", "API key": "ok"}
    assert rows["models"]["detail"] == "/v1/models lists smollm2"
    assert rows["stream"]["detail"].startswith("8 chunks, the first after ")
    assert rows["stream"]["detail"].endswith("usage 36 prompt + 8 completion tokens")
    assert "no tool support" in rows["tool call"]["detail"]
    assert rows["API key"]["detail"] == "401 without a key and with a wrong one"


def test_an_instance_planned_to_draft_is_checked_to_draft_in_every_slot():
    """llama-server serves without drafting when it cannot use the draft (server-context.cpp:1239-1261)."""
    drafting = dict(ENDPOINT, engine={"speculative": "draft-simple smollm2", "unit": "llama-server-demo"})
    rows = run_checks(drafting, slots="slots-drafting.json")
    assert rows["drafting"] == {"check": "drafting", "state": "ok",
                                "detail": "every slot drafts (draft-simple smollm2)"}
    assert run_checks(drafting)["drafting"] == {
        "check": "drafting", "state": "failed", "detail": "planned to speculate (draft-simple smollm2), but slots 0, 1 "
        "do not draft (/slots): llama-server said why when it started (journalctl -u llama-server-demo)"}
    # Planned off: no such check.
    assert "drafting" not in run_checks(dict(drafting, engine=dict(drafting["engine"], speculative="off")))


def test_a_stream_that_arrives_in_one_chunk_fails_and_says_why():
    row = run_checks(one_chunk=True)["stream"]
    assert row["state"] == "failed" and "1 content chunk(s): a proxy or the server buffers the stream" in row["detail"]


def test_a_server_without_its_key_fails_the_key_check():
    assert run_checks(open=True)["API key"] == {
        "check": "API key", "state": "failed", "detail": "served without a key and with a wrong key"}


def test_a_prompt_cut_short_fails():
    assert run_checks(cut=1)["longest prompt"]["detail"] == "8 tokens sent, the server counted 7"


def test_no_server_fails_every_check_and_names_the_error():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    rows = check_endpoint(openai, "http://127.0.0.1:%d/v1" % port, ENDPOINT, 5)
    assert rows[0]["state"] == "failed" and rows[0]["detail"].startswith("no answer on the host's 127.0.0.1 port")


def test_the_relay_carries_http_through_the_tunnel():
    server = stub({})
    tunnel = Tunnel([sys.executable, "-c", DOCKER_RELAY, "127.0.0.1", str(server.server_address[1])], 8080)
    try:
        request = urllib.request.Request("http://127.0.0.1:%d/v1/models" % tunnel.port,
                                         headers={"Authorization": "Bearer " + KEY})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.load(answer)["data"][0]["id"] == "smollm2"
        rows = check_endpoint(openai, "http://127.0.0.1:%d/v1" % tunnel.port, ENDPOINT, 30)
        assert [row["state"] for row in rows] == ["ok", "ok", "ok", "skipped", "ok", "ok"]
    finally:
        tunnel.close()
        server.shutdown()


def test_a_tunnel_to_a_stopped_server_fails_at_once_naming_the_connection():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    tunnel = Tunnel([sys.executable, "-c", DOCKER_RELAY, "127.0.0.1", str(port)], port)
    try:
        rows = check_endpoint(openai, "http://127.0.0.1:%d/v1" % tunnel.port, ENDPOINT, 20)
    finally:
        tunnel.close()
    assert rows[0] == {"check": "models", "state": "failed",
                       "detail": "no answer on the host's 127.0.0.1 port 8080: is the server running there?"}
    assert {row["state"] for row in rows[1:]} == {"skipped"}


def test_transport_commands():
    built = []
    ssh = {"ssh_command": lambda *arguments: built.append(arguments) or ["ssh", *arguments, "gpu1"]}
    assert transport_command("ansible.builtin.ssh", ssh, "127.0.0.1", 8080) == ["ssh", "-W", "127.0.0.1:8080", "gpu1"]
    assert transport_command("ssh", ssh, "::1", 8000)[2] == "[::1]:8000"
    assert transport_command("community.docker.docker", {"remote_addr": "v100-demo"}, "127.0.0.1", 8080)[:5] == [
        "docker", "exec", "-i", "v100-demo", "python3"]
    assert transport_command("local", {}, "127.0.0.1", 8080) is None
    for connection in ("ansible.builtin.paramiko_ssh", "ansible.builtin.winrm"):
        with pytest.raises(ValueError, match="the connection %s cannot carry a port forward" % connection):
            transport_command(connection, {}, "127.0.0.1", 8080)


def test_a_transport_that_fails_is_named_with_its_last_words():
    tunnel = Tunnel([sys.executable, "-c", "import sys; sys.exit('Permission denied (publickey).')"], 8080)
    try:
        rows = check_endpoint(openai, "http://127.0.0.1:%d/v1" % tunnel.port, ENDPOINT, 20)
    finally:
        tunnel.close()
    assert rows[0]["state"] == "failed" and tunnel.errors[-1] == "Permission denied (publickey)."
    missing = Tunnel(["/nonexistent/ssh"], 8080)
    try:
        check_endpoint(openai, "http://127.0.0.1:%d/v1" % missing.port, ENDPOINT, 20)
    finally:
        missing.close()
    assert missing.errors[0].startswith("/nonexistent/ssh: [Errno 2]")


def test_a_closed_tunnel_listens_no_more():
    server = stub({})
    tunnel = Tunnel([sys.executable, "-c", DOCKER_RELAY, "127.0.0.1", str(server.server_address[1])], 8080)
    tunnel.close()
    server.shutdown()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", tunnel.port), timeout=5).close()


def test_a_proxy_in_the_environment_is_not_used(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert {row["state"] for row in run_checks().values()} == {"ok", "skipped"}


def test_usage_over_ssh_forwards_the_port_and_reads_the_key_where_it_lives():
    lines = usage_lines("ansible.builtin.ssh", {"host": "gpu1", "remote_user": "ops", "port": 2222,
                                                "ssh_common_args": "-o ProxyJump=bastion"}, ENDPOINT)
    assert lines[:2] == [
        "  first, in another terminal: ssh -p 2222 -o ProxyJump=bastion ops@gpu1 -N -L 8080:127.0.0.1:8080",
        "  the key:    export KEY=$(ssh -p 2222 -o ProxyJump=bastion ops@gpu1 sudo -n cat /etc/llama-server/demo.key "
        "| head -n 1)"]
    assert lines[2] == ("  curl:   curl -s http://127.0.0.1:8080/v1/chat/completions -H \"Authorization: Bearer $KEY\" "
                        "-H 'Content-Type: application/json' -d '{\"model\": \"smollm2\", \"messages\": "
                        "[{\"role\": \"user\", \"content\": \"Hello from a V100 host\"}]}'")
    assert "- {name: smollm2, provider: openai, model: smollm2, apiBase: 'http://127.0.0.1:8080/v1'" in lines[4]
    assert "OPENAI_API_BASE_URL=http://127.0.0.1:8080/v1" in lines[5]


def test_usage_reads_vllms_key_out_of_its_environment_file(tmp_path):
    env = tmp_path / "vllm-server.env"
    env.write_text('# managed\nVLLM_API_KEY="k-123"\nHF_TOKEN="hf-secret"\n')
    vllm = dict(ENDPOINT, kind="vllm", key_file=str(env), key_variable="VLLM_API_KEY")
    line = usage_lines("ssh", {"host": "gpu1"}, vllm)[1]
    local = line.replace("  the key:    export KEY=$(ssh gpu1 sudo -n cat", "cat").rstrip(")")
    assert subprocess.run(["bash", "-c", local], capture_output=True, text=True, check=True).stdout == "k-123\n"


def test_usage_quotes_an_ipv6_forward():
    assert usage_lines("ssh", {"host": "gpu1"}, dict(ENDPOINT, address="::1"))[0].endswith("-N -L '8080:[::1]:8080'")


def test_usage_without_a_key_sends_none():
    lines = usage_lines("local", {}, dict(ENDPOINT, key_file=""))
    assert not any("export KEY" in line or "Authorization" in line for line in lines)
    assert lines[-1].startswith("  Open WebUI: OPENAI_API_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=none ")


def test_the_python_line_for_a_container_runs_as_printed(tmp_path):
    """The container's line, run here with `docker exec NAME` taken off, against the stub through its key file."""
    server = stub({})
    (tmp_path / "demo.key").write_text(KEY + "\n")
    endpoint = dict(ENDPOINT, url="http://127.0.0.1:%d" % server.server_address[1], key_file=str(tmp_path / "demo.key"))
    try:
        python = usage_lines("community.docker.docker", {"remote_addr": "v100-demo"}, endpoint)[2]
        assert python.startswith("  Python: docker exec v100-demo python3 -c ")
        command = python.replace("  Python: docker exec v100-demo python3", sys.executable, 1)
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60, check=False)
    finally:
        server.shutdown()
    assert done.returncode == 0 and done.stdout.strip() == json.loads(
        (RECORDED / "chat.json").read_text())["choices"][0]["message"]["content"].strip(), done.stderr


def test_keys_from_files():
    assert key_from_file("demo-key-not-a-secret\n", "") == KEY
    assert key_from_file('# managed\nVLLM_API_KEY="a\\"b\\\\c"\nHF_TOKEN="t"\n', "VLLM_API_KEY") == 'a"b\\c'
    assert key_from_file("HF_TOKEN=x\n", "VLLM_API_KEY") == ""
