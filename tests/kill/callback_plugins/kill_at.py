"""Callback plugin for the kill harness (tests/kill/harness.py): dies at the start of a chosen task.

KILL_AT_TASK: a task name, or the start of one (the first task whose name starts with it).
KILL_AFTER: seconds into that task (default 0: before its worker starts, so the task never runs).
KILL_WHEN_FILE: instead of seconds, wait until this path exists in KILL_CONTAINER (a step the
    host has reached, e.g. a maintainer script that has started).
KILL_CONTAINER: the container the play runs against. KILL_POWER=1: `docker kill` it as well (a
    power cut), in a process of its own so that the controller dies at once.
KILL_STOP_LOCK_HOLDERS: a lock file on the host (the run lock): first stop (SIGSTOP) the processes
    holding it and what they started, once one does (within 60 s), so that the step stays running,
    holding the lock, until the harness lets go (SIGCONT) the pids listed in STOPPED there.
The controller and its forked workers (which Ansible puts in sessions of their
own) die with SIGKILL, as in a crash of the controller's machine: no handler,
no cleanup, no "PLAY RECAP". What a worker already started on the host (apt,
cmake, a download) goes on there, as it does over SSH.

A kill later than the task's start is waited for by a process of its own,
started before the task's worker is forked: a thread of the controller that
started `docker` while the worker was forked would share its exec pipe with
the worker and wait for the worker's end, i.e. for the task it should cut.
"""
from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time

from ansible.plugins.callback import CallbackBase

# On the host: the pids KILL_STOP_LOCK_HOLDERS stopped (on /run, so a power cut forgets them with the processes).
STOPPED = "/run/v100-test/stopped-at-kill"

DOCUMENTATION = r"""
name: kill_at
type: aggregate
short_description: SIGKILL the controller (and optionally power off a container) at a named task
description: Test harness only (tests/kill). Reads KILL_AT_TASK, KILL_AFTER, KILL_WHEN_FILE, KILL_CONTAINER, KILL_POWER,
  KILL_STOP_LOCK_HOLDERS.
"""


def _descendants(pid):
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % entry) as stat:
                # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _settings():
    """_die's arguments from KILL_AFTER, KILL_WHEN_FILE, KILL_CONTAINER, KILL_POWER and KILL_STOP_LOCK_HOLDERS."""
    return {"after": float(os.environ.get("KILL_AFTER", "0") or 0), "when_file": os.environ.get("KILL_WHEN_FILE", ""),
            "container": os.environ.get("KILL_CONTAINER", ""), "power": os.environ.get("KILL_POWER", "") == "1",
            "lock": os.environ.get("KILL_STOP_LOCK_HOLDERS", "")}


# Run in the container with the lock's path: SIGSTOP to the processes that hold it (not those waiting for it,
# marked "->" in /proc/locks) and to what they started (flock(1) holds it for cmake, make and the compilers),
# parents first; their pids go to the file named second, for the harness to let go. Exits 1 while none holds it.
_STOP_LOCK_HOLDERS = "import os\n" + inspect.getsource(_descendants) + r"""
import re, signal, sys
st = os.stat(sys.argv[1])
lock = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
holders = [int(pid) for pid, held in re.findall(r"^\d+: \S+\s+\S+\s+\S+\s+(\d+) (\w+:\w+:\d+) ",
                                                open("/proc/locks").read(), re.M) if held == lock and int(pid) > 0]
stopped = [pid for holder in holders for pid in [holder] + _descendants(holder)]
for pid in stopped:
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        pass
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
with open(sys.argv[2], "w") as out:
    out.write(" ".join(map(str, stopped)))
sys.exit(0 if stopped else 1)
"""


def _until(seconds, argv, **kwargs):
    """Run argv until it succeeds, at most `seconds` long."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and subprocess.run(argv, check=False, stdout=subprocess.DEVNULL,
                                                         stderr=subprocess.DEVNULL, **kwargs).returncode:
        time.sleep(0.5)


def _die(controller, after, when_file, container, power, lock):
    """Wait `after` seconds or for `when_file` in `container`, stop the holders of `lock` there, then SIGKILL the
    controller and what it forked."""
    if when_file:
        _until(600, ["docker", "exec", container, "test", "-e", when_file])
    else:
        time.sleep(after)
    if lock:
        _until(60, ["docker", "exec", "-i", container, "python3", "-", lock, STOPPED],
               input=_STOP_LOCK_HOLDERS.encode())
    doomed = [pid for pid in _descendants(controller) if pid != os.getpid()]
    if power:
        subprocess.Popen(["docker", "kill", container], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    for pid in doomed + [controller]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kill_at"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._task = os.environ.get("KILL_AT_TASK", "")
        self._settings = _settings()
        self._armed = bool(self._task)

    def v2_playbook_on_task_start(self, task, is_conditional):
        # The task's own name, without its role ("llama_cpp : ..."), as templated for display.
        # Called before the strategy forks the task's worker.
        if self._armed and (task.name or "").startswith(self._task):
            self._armed = False
            if self._settings["after"] or self._settings["when_file"]:
                subprocess.Popen([sys.executable, __file__, str(os.getpid())], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:
                _die(os.getpid(), **self._settings)


if __name__ == "__main__":
    _die(int(sys.argv[1]), **_settings())
