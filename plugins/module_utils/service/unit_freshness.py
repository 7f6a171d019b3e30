"""Whether a systemd unit runs on the files it has now: the one restart rule of every role.

A restart decided from this run's change events is lost when the run dies
between writing a file and its handler: the next run sees no change and the old
server keeps its old key. This decides from the host instead. A unit that has
run since before one of its files last changed (unit file, drop-ins, key,
environment file, model, binary) started on the old contents and owes a restart.

The comparison is of two realtime clocks read at the two events: systemd's
InactiveExitTimestamp (when the unit last left "inactive", i.e. its current
process was started) and each file's ctime (content, owner, mode or name change;
unlike mtime it cannot be set into the future by cp -p or an archive).
"""
from __future__ import annotations

# "activating": ExecStartPost waits for /health while a model loads (minutes).
RUNNING_STATES = frozenset({"active", "activating", "reloading"})


def unit_object_path(unit: str) -> str:
    """The D-Bus object path of a unit, escaped as sd_bus_path_encode does it."""
    escaped = "".join(
        char if char.isascii() and (char.isalnum() and not (index == 0 and char.isdigit()))
        else "_%02x" % ord(char)
        for index, char in enumerate(unit))
    return "/org/freedesktop/systemd1/unit/" + escaped


def unit_action(props: dict, changed_at: dict, start: bool, restart: bool, now_us: int) -> dict:
    """What a unit needs so that it runs on the files it has now.

    props: LoadState, ActiveState, NeedDaemonReload ("yes"/"no") and
      started_us (InactiveExitTimestamp, realtime microseconds; 0 = never).
    changed_at: path -> ctime in realtime microseconds (None: no such file).
    start: the unit should run (a stopped one is started).
    restart: a running unit whose files changed since it started is restarted.
    Returns action ("restart", "start" or "none"), reason, stale (the newer
    files) and future (files changed after now: a clock step; ignored).
    """
    state = props.get("ActiveState", "inactive")
    started = int(props.get("started_us") or 0)
    present = {path: when for path, when in changed_at.items() if when is not None}
    future = sorted(path for path, when in present.items() if when > now_us)
    stale = sorted(path for path, when in present.items() if started < when <= now_us)
    running = state in RUNNING_STATES
    result = {"action": "none", "reason": "", "stale": stale, "future": future, "running": running}
    if props.get("LoadState") == "not-found":
        if start:
            result.update(action="start", reason="new unit")
        return result
    if running and restart and (stale or props.get("NeedDaemonReload") == "yes"):
        reason = ("started before " + ", ".join(stale) + " changed") if stale else "unit file changed on disk"
        result.update(action="restart", reason=reason)
    elif running and state == "activating" and start:
        # A start that an earlier run left waiting for /health: join it.
        result.update(action="start", reason="still starting")
    elif not running and start:
        result.update(action="start", reason=state)
    return result


def needs_daemon_reload(props: dict, unit_file_exists: bool) -> bool:
    """systemd has not read the unit's files as they are on disk."""
    if props.get("LoadState") == "not-found":
        return unit_file_exists
    return props.get("NeedDaemonReload") == "yes"
