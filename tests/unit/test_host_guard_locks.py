"""host_guard waits for a lock a real process holds, and names it (this machine's /proc/locks)."""
from __future__ import annotations

import os
import signal
import subprocess
import time

from ansible_collections.v100.llm.plugins.modules import host_guard


def hold(path, *argv):
    holder = subprocess.Popen(["flock", str(path), "sleep", "30"] if not argv else list(argv), start_new_session=True)
    for _ in range(50):
        if not host_guard._try_lock(str(path), flock=True):
            return holder
        time.sleep(0.1)
    holder.kill()
    raise AssertionError("the lock was never taken")


def test_a_held_run_lock_is_seen_and_its_holder_named(tmp_path):
    lock = tmp_path / "run.lock"
    holder = hold(lock)
    try:
        assert not host_guard._try_lock(str(lock), flock=True)
        # flock(1) holds it; the command it runs is its child.
        assert "PID %d (flock %s sleep 30)" % (holder.pid, lock) in host_guard._describe(str(lock))
        # The step outlives flock(1) (a killed run's orphan) and keeps the lock.
        holder.kill()
        holder.wait()
        assert not host_guard._try_lock(str(lock), flock=True)
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
    # The kernel released it with the step.
    for _ in range(50):
        if host_guard._try_lock(str(lock), flock=True):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the lock outlived its holders")


def test_a_free_lock_is_free(tmp_path):
    lock = tmp_path / "free.lock"
    assert host_guard._try_lock(str(lock), flock=True)
    assert host_guard._try_lock(str(lock), flock=False)
    assert os.path.exists(lock)
