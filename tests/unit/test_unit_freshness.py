"""The one restart rule: decided from the host's state, so a restart owed by a killed run is still done."""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.module_utils.service.unit_freshness import needs_daemon_reload, unit_action, unit_object_path

NOW = 1_764_590_000_000_000
STARTED = NOW - 3_600_000_000


def running(state="active", reload="no", started=STARTED):
    return {"LoadState": "loaded", "ActiveState": state, "NeedDaemonReload": reload, "started_us": started}


def test_a_key_written_after_the_server_started_owes_a_restart():
    # The run that wrote the key died before its handler: the next run restarts.
    decision = unit_action(running(), {"/etc/llama-server/chat.key": STARTED + 5, "/etc/x.service": STARTED - 5},
                           start=True, restart=True, now_us=NOW)
    assert decision["action"] == "restart"
    assert decision["stale"] == ["/etc/llama-server/chat.key"]
    assert "chat.key" in decision["reason"]


def test_files_older_than_the_start_owe_nothing():
    decision = unit_action(running(), {"/etc/x.service": STARTED - 1, "/srv/m.gguf": STARTED - 10**9},
                           start=True, restart=True, now_us=NOW)
    assert decision["action"] == "none"


def test_a_unit_file_systemd_has_not_read_owes_a_restart():
    decision = unit_action(running(reload="yes"), {}, start=True, restart=True, now_us=NOW)
    assert decision["action"] == "restart"


def test_a_unit_still_loading_its_model_counts_as_running():
    stale = unit_action(running("activating"), {"/k": STARTED + 1}, start=True, restart=True, now_us=NOW)
    assert stale["action"] == "restart"
    # Fresh: join its start job, which waits for /health.
    fresh = unit_action(running("activating"), {"/k": STARTED - 1}, start=True, restart=True, now_us=NOW)
    assert fresh["action"] == "start"


def test_a_stopped_or_failed_unit_starts_only_when_it_should_run():
    for state in ("inactive", "failed"):
        props = running(state)
        assert unit_action(props, {"/k": STARTED + 1}, start=True, restart=True, now_us=NOW)["action"] == "start"
        assert unit_action(props, {"/k": STARTED + 1}, start=False, restart=True, now_us=NOW)["action"] == "none"


def test_a_unit_that_only_reloads_is_never_restarted():
    # The oneshot behind a timer: systemd re-reads it; a probe in flight is not cut.
    decision = unit_action(running("activating", reload="yes"), {"/k": STARTED + 1},
                           start=False, restart=False, now_us=NOW)
    assert decision["action"] == "none"


def test_a_change_time_after_now_is_reported_not_counted():
    # Otherwise a clock stepped back would restart the unit on every run.
    decision = unit_action(running(), {"/k": NOW + 10**9}, start=True, restart=True, now_us=NOW)
    assert decision == {"action": "none", "reason": "", "stale": [], "future": ["/k"], "running": True}


def test_missing_files_and_new_units():
    assert unit_action(running(), {"/gone": None}, start=True, restart=True, now_us=NOW)["action"] == "none"
    new = {"LoadState": "not-found", "ActiveState": "inactive", "NeedDaemonReload": "no", "started_us": 0}
    assert unit_action(new, {}, start=True, restart=True, now_us=NOW)["action"] == "start"
    assert unit_action(new, {}, start=False, restart=True, now_us=NOW)["action"] == "none"
    assert needs_daemon_reload(new, unit_file_exists=True)
    assert not needs_daemon_reload(new, unit_file_exists=False)
    assert needs_daemon_reload(running(reload="yes"), unit_file_exists=True)
    assert not needs_daemon_reload(running(), unit_file_exists=True)


def test_object_paths_are_escaped_like_systemd():
    # busctl tree org.freedesktop.systemd1 on Debian 12 lists these.
    assert unit_object_path("llama-server-chat.service") == \
        "/org/freedesktop/systemd1/unit/llama_2dserver_2dchat_2eservice"
    assert unit_object_path("getty@tty1.service") == "/org/freedesktop/systemd1/unit/getty_40tty1_2eservice"
    assert unit_object_path("1x.service") == "/org/freedesktop/systemd1/unit/_31x_2eservice"
