"""The service-health script the health timers and ExecStartPost run, against a real HTTP server."""
from __future__ import annotations

import http.server
import importlib.machinery
import importlib.util
import json
import threading
import time

import pytest
from conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "roles" / "server_systemd" / "files" / "service-health"
_loader = importlib.machinery.SourceFileLoader("service_health", str(SCRIPT))
_spec = importlib.util.spec_from_loader("service_health", _loader)
service_health = importlib.util.module_from_spec(_spec)
_loader.exec_module(service_health)


@pytest.mark.parametrize(("failures", "healthy", "expected"), [
    (0, True, (0, False)),
    (2, True, (0, False)),
    (0, False, (1, False)),
    (1, False, (2, False)),
    (2, False, (0, True)),
])
def test_restart_after_three_failures_in_a_row(failures, healthy, expected):
    assert service_health.next_failures(failures, healthy, 3) == expected


def test_a_limit_of_one_restarts_at_the_first_failure():
    assert service_health.next_failures(0, False, 1) == (0, True)


class _Handler(http.server.BaseHTTPRequestHandler):
    """/health answers `status`; /v1/completions stalls `stall` seconds (a stuck generation) and records what it
    was asked; /slots answers `slots`."""
    status = 200
    stall = 0.0
    slots = []
    asked = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = json.dumps(type(self).slots).encode() if self.path == "/slots" else b'{"status":"ok"}'
        self.send_response(type(self).status if self.path == "/health" else 200)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).asked.append((self.headers.get("Authorization"), request))
        time.sleep(type(self).stall)
        try:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"choices":[{"text":"!"}]}')
        except BrokenPipeError:
            pass  # the probe gave up waiting

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    handler = type("Handler", (_Handler,), {"status": 200, "stall": 0.0, "slots": [], "asked": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield handler, "http://127.0.0.1:%d/health" % httpd.server_address[1]
    httpd.shutdown()


def test_probe_is_healthy_only_on_200(server):
    handler, url = server
    assert service_health.probe(url, 2) == (True, "HTTP 200")
    handler.status = 503
    assert service_health.probe(url, 2) == (False, "HTTP 503")


def test_probe_of_a_closed_port_fails():
    healthy, seen = service_health.probe("http://127.0.0.1:9/health", 2)
    assert not healthy and seen


def test_wait_returns_once_healthy_and_fails_after_the_timeout(server):
    handler, url = server
    assert service_health.main(["wait", url, "--timeout", "5"]) == 0
    handler.status = 503
    assert service_health.main(["wait", url, "--timeout", "1"]) == 1


@pytest.fixture
def restarts(monkeypatch):
    """An active unit; the restarts the script asks systemd for."""
    asked = []
    monkeypatch.setattr(service_health, "unit_state", lambda unit: "active")
    monkeypatch.setattr(service_health.subprocess, "run", lambda argv, check: asked.append(argv))
    return asked


def test_check_counts_failures_and_restarts_an_active_unit(server, tmp_path, restarts):
    handler, url = server
    handler.status = 503
    args = ["check", "x.service", url, "--failures", "2", "--state-dir", str(tmp_path), "--timeout", "2"]
    assert service_health.main(args) == 1
    assert (tmp_path / "x.service.failures").read_text() == "1\n" and restarts == []
    assert service_health.main(args) == 1
    assert restarts == [["systemctl", "restart", "--no-block", "x.service"]]
    assert (tmp_path / "x.service.failures").read_text() == "0\n"
    handler.status = 200
    assert service_health.main(args) == 0


def test_check_leaves_a_unit_that_is_not_active_to_systemd(tmp_path, monkeypatch):
    monkeypatch.setattr(service_health, "unit_state", lambda unit: "activating")
    assert service_health.main(["check", "x.service", "http://127.0.0.1:9/health",
                                "--state-dir", str(tmp_path)]) == 0
    assert not (tmp_path / "x.service.failures").exists()


def test_failures_before_a_stop_do_not_count_after_it(tmp_path, monkeypatch):
    (tmp_path / "x.service.failures").write_text("2\n")
    monkeypatch.setattr(service_health, "unit_state", lambda unit: "activating")
    assert service_health.main(["check", "x.service", "http://127.0.0.1:9/health",
                                "--state-dir", str(tmp_path)]) == 0
    assert (tmp_path / "x.service.failures").read_text() == "0\n"


@pytest.mark.parametrize(("probes", "every", "failures", "deep"), [
    (0, 5, 0, True), (1, 5, 0, False), (5, 5, 0, True), (3, 5, 1, True), (0, 0, 0, False), (3, 0, 2, False)])
def test_every_nth_probe_is_deep_and_every_one_after_a_failure(probes, every, failures, deep):
    assert service_health.deep_due(probes, every, failures) is deep


def test_the_key_is_read_from_a_key_file_or_an_environment_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    (tmp_path / "api-key").write_text("sk-plain\n")
    assert service_health.read_key("api-key", "") == "sk-plain"
    # As roles/vllm_server/templates/vllm-server.env.j2 writes it: backslash and double quote escaped.
    (tmp_path / "api-key").write_text('HF_TOKEN="hf_x"\nVLLM_API_KEY="a\\\\b\\"c"\n')
    assert service_health.read_key("api-key", "VLLM_API_KEY") == 'a\\b"c'
    assert service_health.read_key("", "") == ""


def deep_args(url, tmp_path, *more):
    base = url[:-len("/health")]
    return ["check", "x.service", url, "--failures", "2", "--state-dir", str(tmp_path), "--timeout", "1",
            "--deep-url", base + "/v1/completions", "--deep-every", "3", "--deep-timeout", "1", *more]


def test_a_stuck_generation_behind_a_healthy_health_endpoint_is_restarted(server, tmp_path, restarts, monkeypatch):
    handler, url = server
    handler.stall = 3
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    (tmp_path / "api-key").write_text("sk-test\n")
    args = deep_args(url, tmp_path, "--key-credential", "api-key", "--model", "m")
    assert service_health.main(args) == 1 and restarts == []
    # The failure makes the next probe deep too, though it is not the third.
    assert service_health.main(args) == 1
    assert restarts == [["systemctl", "restart", "--no-block", "x.service"]]
    assert handler.asked[0] == ("Bearer sk-test", {"prompt": "Hi", "max_tokens": 1, "model": "m"})
    handler.stall = 0
    assert service_health.main(args) == 0


def test_a_deep_probe_waiting_behind_busy_slots_is_not_a_failure(server, tmp_path, restarts):
    handler, url = server
    handler.stall = 3
    handler.slots = [{"id": 0, "is_processing": True}, {"id": 1, "is_processing": True}]
    args = deep_args(url, tmp_path, "--busy-url", url[:-len("/health")] + "/slots")
    assert service_health.main(args) == 0 and restarts == []
    assert (tmp_path / "x.service.failures").read_text() == "0\n"
    handler.slots = [{"id": 0, "is_processing": True}, {"id": 1, "is_processing": False}]
    assert service_health.main(args + ["--deep-every", "1"]) == 1


def test_shallow_probes_between_deep_ones_ask_only_health(server, tmp_path, restarts):
    handler, url = server
    for _ in range(4):
        assert service_health.main(deep_args(url, tmp_path)) == 0
    assert len(handler.asked) == 2  # probes 0 and 3


def test_the_failure_report_goes_to_the_journal_and_a_file(tmp_path, monkeypatch, capsys):
    shown = type("Shown", (), {"stdout": "Result=exit-code\nNRestarts=4\nExecMainStatus=1\n"})
    monkeypatch.setattr(service_health.subprocess, "run", lambda argv, **kwargs: shown)
    assert service_health.main(["failed", "llama-server-chat.service", "--state-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "llama-server-chat.service.json").read_text())
    assert report["Result"] == "exit-code" and report["NRestarts"] == "4" and report["failed_at"]
    assert "llama-server-chat.service ended failed: its start limit was reached (NRestarts=4" in capsys.readouterr().out


def test_wait_gives_up_as_soon_as_the_server_process_is_gone(server):
    handler, url = server
    handler.status = 503
    started = time.monotonic()
    assert service_health.main(["wait", url, "--timeout", "60", "--pid", "999999999"]) == 1
    assert time.monotonic() - started < 10
    handler.status = 200
    assert service_health.main(["wait", url, "--timeout", "5", "--pid", str(__import__("os").getpid())]) == 0


# vLLM 0.5.4's /metrics lines (vllm/engine/metrics.py: gauges with the model_name label).
VLLM_METRICS = """# HELP vllm:num_requests_running Number of requests currently running on GPU.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="qwen"} %s
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="qwen"} %s
"""


@pytest.mark.parametrize(("running", "waiting", "busy"), [("0.0", "0.0", False), ("3.0", "0.0", True),
                                                          ("0.0", "12.0", True)])
def test_vllm_with_requests_in_flight_is_busy(running, waiting, busy):
    assert service_health.vllm_requests_in_flight(VLLM_METRICS % (running, waiting)) is busy
