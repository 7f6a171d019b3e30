"""Which units a GPU service has, so that writing, starting and retiring them agree."""
from __future__ import annotations

from ansible.module_utils.gpu_service import retired_files, systemd_units, unit_files, unwanted_restart_timers

CHAT = {"unit": "llama-server-chat", "health_url": "http://127.0.0.1:8081/health", "restart_calendar": "*-*-* 04:00:00",
        "inputs": ["/etc/llama-server/chat.key"], "start": True}
MINI = dict(CHAT, unit="llama-server-mini", restart_calendar="", inputs=[])


def test_timer_files_follow_the_schedule():
    assert [f["dest"] for f in unit_files([CHAT, MINI])] == [
        "/etc/systemd/system/llama-server-chat-health.service", "/etc/systemd/system/llama-server-chat-health.timer",
        "/etc/systemd/system/llama-server-chat-restart.service", "/etc/systemd/system/llama-server-chat-restart.timer",
        "/etc/systemd/system/llama-server-mini-health.service", "/etc/systemd/system/llama-server-mini-health.timer"]
    assert unwanted_restart_timers([CHAT, MINI]) == ["llama-server-mini-restart.service",
                                                     "llama-server-mini-restart.timer"]


def test_servers_and_timers_run_and_the_oneshots_only_reload():
    units = {u["name"]: u for u in systemd_units([CHAT], device_nodes=True)}
    assert list(units)[0] == "nvidia-device-nodes.service"
    # Pulled in by the servers: never started on its own (its condition fails without nvidia-modprobe).
    assert units["nvidia-device-nodes.service"]["start"] is False
    assert units["llama-server-chat.service"] == {"name": "llama-server-chat.service", "start": True,
                                                  "restart": True, "enable": True,
                                                  "inputs": ["/etc/llama-server/chat.key"]}
    assert units["llama-server-chat-health.timer"]["start"] and units["llama-server-chat-restart.timer"]["restart"]
    for oneshot in ("llama-server-chat-health.service", "llama-server-chat-restart.service"):
        assert not (units[oneshot]["start"] or units[oneshot]["restart"] or units[oneshot]["enable"])
    assert "nvidia-device-nodes.service" not in {u["name"] for u in systemd_units([CHAT], device_nodes=False)}


def test_a_server_that_should_not_run_is_still_restarted_if_running():
    server = systemd_units([dict(MINI, start=False)], device_nodes=False)[0]
    assert server["start"] is False and server["restart"] is True


def test_retirement_removes_every_file_the_server_had():
    assert retired_files(["llama-server-old"]) == [
        "llama-server-old.service", "llama-server-old.service.d", "llama-server-old-health.service",
        "llama-server-old-health.timer", "llama-server-old-restart.service", "llama-server-old-restart.timer"]
