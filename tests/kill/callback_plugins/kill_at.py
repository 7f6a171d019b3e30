"""Callback plugin for the kill harness (tests/kill/harness.py): dies at the start of a chosen task.

KILL_AT_TASK: a task name, or the start of one (the first task whose name starts with it).
KILL_AFTER: seconds to wait once that task started (default 0).
KILL_POWER: a container name: `docker kill` it as well (a power cut), in a process of its own
so that the controller dies at once, without noticing the host go.
The controller dies with SIGKILL, as from `kill -9` or a lost session: no
handler, no cleanup, no "PLAY RECAP".
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: kill_at
type: aggregate
short_description: SIGKILL the controller (and optionally power off a container) at a named task
description: Test harness only (tests/kill). Reads KILL_AT_TASK, KILL_AFTER and KILL_POWER.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kill_at"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._task = os.environ.get("KILL_AT_TASK", "")
        self._after = float(os.environ.get("KILL_AFTER", "0") or 0)
        self._power = os.environ.get("KILL_POWER", "")
        self._armed = bool(self._task)

    def _die(self):
        time.sleep(self._after)
        if self._power:
            subprocess.Popen(["docker", "kill", self._power], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        with open(os.environ.get("KILL_REPORT", os.devnull), "a") as report:
            report.write("killed at %s after %.0fs%s\n" % (self._task, self._after, " (power cut)" if self._power else ""))
        os.kill(os.getpid(), signal.SIGKILL)

    def v2_playbook_on_task_start(self, task, is_conditional):
        # The task's own name, without its role ("llama_cpp : ..."), untemplated.
        if self._armed and (task.name or "").startswith(self._task):
            self._armed = False
            threading.Thread(target=self._die, daemon=True).start()
