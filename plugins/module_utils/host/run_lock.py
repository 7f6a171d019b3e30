"""The host's run lock: one per host, held by each long remote step of a run.

A controller killed mid-run leaves its remote steps running (apt, cmake, pip,
a model download). Each such step runs under flock(1) on RUN_LOCK, so the
kernel releases the lock when the step ends or dies; the next run waits for
it before it changes anything (module host_guard) instead of racing it.
"""
from __future__ import annotations

import re
from typing import List

RUN_LOCK = "/run/lock/v100-llm.lock"


def with_run_lock(argv: List[str]) -> List[str]:
    """argv run under the host's run lock (flock(1), util-linux, Essential on Debian and Ubuntu)."""
    return ["flock", RUN_LOCK] + list(argv)


def lock_holders(proc_locks: str, inodes: List[int]) -> List[int]:
    """PIDs holding a lock (POSIX, FLOCK or OFD) on one of the inodes, from /proc/locks.

    Lines marked "->" are processes waiting for the lock, not holding it.
    """
    pids = []
    for line in proc_locks.splitlines():
        match = re.match(r"^\d+:\s+\S+\s+\S+\s+\S+\s+(-?\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s", line)
        if match and int(match.group(2)) in inodes and int(match.group(1)) > 0:
            pids.append(int(match.group(1)))
    return sorted(set(pids))
