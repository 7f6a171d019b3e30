"""Filters of the host itself: stamps, the run lock, dpkg's state and mounts (module_utils/host, unit-tested in
tests/unit)."""
from __future__ import annotations

from posixpath import normpath
from typing import Any, Dict, List, Optional

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_STAMPS = Deferred("host.stamps")
_RUN_LOCK = Deferred("host.run_lock")
_DPKG = Deferred("host.dpkg_state")


def nearest_mount(mounts: List[Dict[str, Any]], path: str) -> Optional[Dict[str, Any]]:
    """Return the mount (from ansible_facts.mounts) that holds ``path``.

    That is the mount whose mount point is the longest prefix of the path, so
    a path that does not exist yet still maps to the file system it will be
    created on.
    """
    target = normpath(path)
    best: Optional[Dict[str, Any]] = None
    for mount in mounts:
        point = normpath(mount.get("mount", ""))
        inside = point == "/" or target == point or target.startswith(point + "/")
        if inside and (best is None or len(point) > len(normpath(best["mount"]))):
            best = mount
    return best


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # slurp's content | read_stamp -> the stamp's JSON object, {} when missing or torn
            "read_stamp": _STAMPS.read_slurped_stamp,
            # argv | with_run_lock -> argv under flock(1) on the host's run lock (host_guard waits for it)
            "with_run_lock": _RUN_LOCK.with_run_lock,
            # dpkg-query status lines | dpkg_not_installed(names) -> the names not fully installed
            "dpkg_not_installed": _DPKG.not_installed,
            # ansible_facts.mounts | nearest_mount(path) -> the mount that holds the path
            "nearest_mount": nearest_mount,
        }
