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
    site.yml) with its time and counts, each failing task with its message, each host's recap, the message of
    each debug task named C(Summary: ...) (the telemetry's, the host report's), the checks of
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

# The name a debug task starts with to have its message printed at the end of the run.
SUMMARY = "Summary:"


def _message(result):
    """What a failed result says: its msg, an include's reason, a loop's first failed item, or its stderr."""
    failed_items = [item for item in result.get("results", []) if isinstance(item, dict) and item.get("failed")]
    if failed_items and result.get("msg", "").startswith("One or more items failed"):
        result = failed_items[0]
    return result.get("msg") or result.get("reason") or result.get("stderr") or "failed (no message)"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "v100.llm.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        fd = os.environ.get("V100_LLM_PROGRESS_FD", "")
        self._out = os.fdopen(int(fd), "w", buffering=1, closefd=False) if fd.isdigit() else sys.stderr
        self._play, self._started, self._counts, self._hosts = None, 0.0, {}, set()
        # A failure a rescue or a later task of the same host outlives is not the run's: held until then.
        self._pending, self._failures, self._reports, self._usage, self._summaries = {}, [], [], [], []
        # The last failure each host went on from: an `always:` runs after one that still ends the host's run.
        self._outlived = {}

    def _say(self, line=""):
        self._out.write(line + "\n")

    def _end_play(self):
        if self._play is None:
            return
        self._failures += self._pending.values()
        counts = self._counts
        ran = counts.get("ok", 0) + len(self._pending)
        state = "FAILED" if self._pending else "ok" if ran else "skipped"
        self._say("  %-12s %-7s %5.0f s  %d results on %d host(s), %d changed" % (
            self._play, state, time.monotonic() - self._started, ran, len(self._hosts), counts.get("changed", 0)))
        self._play, self._pending = None, {}

    def v2_playbook_on_play_start(self, play):
        self._end_play()
        self._play, self._started, self._counts, self._hosts = play.get_name().strip(), time.monotonic(), {}, set()

    def v2_playbook_on_no_hosts_matched(self):
        self._say("  no hosts matched: check the inventory and --limit")

    def _count(self, result, key):
        self._counts[key] = self._counts.get(key, 0) + 1
        self._hosts.add(result.host.get_name())

    def _keep_report(self, result):
        # A debug task named "Summary: ..." (the telemetry's and the host report's) is printed at the end.
        # A role's task is named "<role> : <name>".
        if result.task.action.endswith("debug") and result.task.get_name().split(" : ")[-1].strip().startswith(SUMMARY):
            message = result.result.get("msg", [])
            self._summaries += ["%s: %s" % (result.host.get_name(), line)
                                for line in (message if isinstance(message, list) else [message])]
        if result.task.action.endswith("endpoint_check"):
            host = result.host.get_name()
            self._reports += ["%s: %s" % (host, line) for line in result.result.get("summary", [])]
            self._usage += result.result.get("usage", [])

    def _went_on(self, result):
        failure = self._pending.pop(result.host.get_name(), None)
        if failure:
            self._outlived[result.host.get_name()] = failure

    def v2_runner_on_ok(self, result):
        self._went_on(result)
        self._count(result, "ok")
        if result.result.get("changed"):
            self._count(result, "changed")
        self._keep_report(result)

    def v2_runner_on_skipped(self, result):
        self._went_on(result)
        self._count(result, "skipped")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            self._count(result, "ok")
            return
        self._hosts.add(result.host.get_name())
        self._keep_report(result)
        self._pending[result.host.get_name()] = "FAILED on %s at %r: %s" % (
            result.host.get_name(), result.task.get_name().strip(), _message(result.result))

    def v2_runner_on_unreachable(self, result):
        self._hosts.add(result.host.get_name())
        self._pending[result.host.get_name()] = "UNREACHABLE %s at %r: %s" % (
            result.host.get_name(), result.task.get_name().strip(), result.result.get("msg", ""))

    def v2_playbook_on_stats(self, stats):
        self._end_play()
        for host in sorted(stats.processed):
            summary = stats.summarize(host)
            self._say("%-26s : ok=%-4d changed=%-4d unreachable=%-4d failed=%-4d skipped=%-4d" % (
                host, summary["ok"], summary["changed"], summary["unreachable"], summary["failures"],
                summary["skipped"]))
        failed = [host for host in stats.processed if stats.summarize(host)["failures"]]
        self._failures += [self._outlived[host] for host in sorted(failed) if host in self._outlived
                           and not any(line.startswith("FAILED on %s " % host) for line in self._failures)]
        for line in self._failures:
            self._say(line)
        for line in self._summaries:
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
