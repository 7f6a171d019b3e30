"""Which units a GPU service has, so that writing, starting and retiring them agree."""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.module_utils.service.units import config_files, retired_files, systemd_units, unwanted_restart_timers

CHAT = {"unit": "llama-server-chat", "health_url": "http://127.0.0.1:8081/health", "restart_calendar": "*-*-* 04:00:00",
        "inputs": ["/etc/llama-server/chat.key"], "start": True}
MINI = dict(CHAT, unit="llama-server-mini", restart_calendar="", inputs=[])


def test_timer_files_follow_the_schedule():
    timers = [f["path"] for f in config_files([CHAT, MINI], device_nodes=False) if "-health." in f["path"]
              or "-restart." in f["path"]]
    assert timers == [
        "/etc/systemd/system/llama-server-chat-health.service", "/etc/systemd/system/llama-server-chat-health.timer",
        "/etc/systemd/system/llama-server-chat-restart.service", "/etc/systemd/system/llama-server-chat-restart.timer",
        "/etc/systemd/system/llama-server-mini-health.service", "/etc/systemd/system/llama-server-mini-health.timer"]
    assert unwanted_restart_timers([CHAT, MINI]) == ["llama-server-mini-restart.service",
                                                     "llama-server-mini-restart.timer"]


def test_every_file_is_written_after_its_folder_and_retired_with_its_server():
    files = config_files([CHAT], device_nodes=True)
    paths = [f["path"] for f in files]
    for path in paths:
        folder = path.rsplit("/", 1)[0]
        assert folder not in paths or paths.index(folder) < paths.index(path)
    assert "/etc/systemd/system/nvidia-device-nodes.service" in paths
    assert "/etc/systemd/system/nvidia-device-nodes.service" not in [
        f["path"] for f in config_files([CHAT], device_nodes=False)]
    # What retire removes covers what was written for the server (its own unit file is the calling role's).
    written = {p.split("/")[4] for p in paths if p.startswith("/etc/systemd/system/llama-server-chat")}
    assert written <= set(retired_files(["llama-server-chat"]))
    assert {f["vars"]["item"]["unit"] for f in files if "vars" in f} == {"llama-server-chat"}


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
