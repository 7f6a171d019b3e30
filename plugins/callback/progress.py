"""One line per stage, then what verify.yml found and how to use the servers, for a person at a terminal."""
from __future__ import annotations

import os
import sys
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: progress
type: notification
short_description: One line per stage, the failing task, the verify report and how to use the servers
description:
  - "For scripts/demo, which keeps Ansible's full output in a log file: prints one line per play (a stage of
    site.yml) with its time and counts, each failing task with its message, each host's recap, the checks of
    v100.llm.endpoint_check and how to call each endpoint, then the log's path."
  - Writes to the file descriptor in C(V100_LLM_PROGRESS_FD) (standard error when unset).
requirements:
  - enabled in C(callbacks_enabled) (C(ANSIBLE_CALLBACKS_ENABLED=v100.llm.progress))
options:
  log:
    description: The full log's path, named at the end.
    type: str
    default: ""
    env:
      - name: V100_LLM_LOG
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "v100.llm.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        fd = os.environ.get("V100_LLM_PROGRESS_FD", "")
        self._out = os.fdopen(int(fd), "w", buffering=1, closefd=False) if fd.isdigit() else sys.stderr
        self._play, self._started, self._counts = None, 0.0, {}
        self._failures, self._reports, self._usage = [], [], []

    def _say(self, line=""):
        self._out.write(line + "\n")

    def _end_play(self):
        if self._play is None:
            return
        counts = self._counts
        ran = counts.get("ok", 0) + counts.get("failed", 0)
        state = "FAILED" if counts.get("failed") else "ok" if ran else "skipped"
        self._say("  %-12s %-7s %5.0f s  %d tasks, %d changed" % (self._play, state, time.monotonic() - self._started,
                                                                  ran, counts.get("changed", 0)))
        self._play = None

    def v2_playbook_on_play_start(self, play):
        self._end_play()
        self._play, self._started, self._counts = play.get_name().strip(), time.monotonic(), {}

    def _count(self, key):
        self._counts[key] = self._counts.get(key, 0) + 1

    def _keep_report(self, result):
        if result._task.action.endswith("endpoint_check"):  # pylint: disable=protected-access
            self._reports += result._result.get("summary", [])  # pylint: disable=protected-access
            self._usage += result._result.get("usage", [])  # pylint: disable=protected-access

    def v2_runner_on_ok(self, result):
        self._count("ok")
        if result._result.get("changed"):  # pylint: disable=protected-access
            self._count("changed")
        self._keep_report(result)

    def v2_runner_on_skipped(self, result):
        self._count("skipped")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            self._count("ok")
            return
        self._count("failed")
        self._keep_report(result)
        message = result._result.get("msg") or result._result.get("stderr") or result._result  # pylint: disable=protected-access
        self._failures.append("FAILED on %s at %r: %s" % (result._host.get_name(),  # pylint: disable=protected-access
                                                         result._task.get_name().strip(), message))  # pylint: disable=protected-access

    def v2_runner_on_unreachable(self, result):
        self._count("failed")
        self._failures.append("UNREACHABLE %s at %r: %s" % (
            result._host.get_name(), result._task.get_name().strip(),  # pylint: disable=protected-access
            result._result.get("msg", "")))  # pylint: disable=protected-access

    def v2_playbook_on_stats(self, stats):
        self._end_play()
        for host in sorted(stats.processed):
            summary = stats.summarize(host)
            self._say("%-26s : ok=%-4d changed=%-4d unreachable=%-4d failed=%-4d skipped=%-4d" % (
                host, summary["ok"], summary["changed"], summary["unreachable"], summary["failures"],
                summary["skipped"]))
        for line in self._failures:
            self._say(line)
        if self._reports:
            self._say("What the OpenAI client found:")
            for line in self._reports:
                self._say("  " + line)
        if self._usage and not self._failures:
            self._say("How to use it:")
            for line in self._usage:
                self._say(line)
        log = self.get_option("log")
        if log:
            self._say("the full log: %s" % log)
