"""The service-health script the health timers and ExecStartPost run, against a real HTTP server."""
from __future__ import annotations

import http.server
import importlib.machinery
import importlib.util
import threading

import pytest
from conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "roles" / "gpu_service" / "files" / "service-health"
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
    status = 200

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    handler = type("Handler", (_Handler,), {"status": 200})
    httpd = http.server.HTTPServer(("127.0.0.1", 0), handler)
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


def test_check_counts_failures_and_restarts_an_active_unit(server, tmp_path, monkeypatch):
    handler, url = server
    handler.status = 503
    restarts = []
    monkeypatch.setattr(service_health, "unit_state", lambda unit: "active")
    monkeypatch.setattr(service_health.subprocess, "run", lambda argv, check: restarts.append(argv))
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
