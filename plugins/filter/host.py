"""Filters of the host itself: stamps, the run lock, dpkg's state and mounts (module_utils/host, unit-tested in
tests/unit), and role_default, the default of the role a variable is prefixed with."""
from __future__ import annotations

import functools
from pathlib import Path
from posixpath import normpath
from typing import Any, Dict, List, Optional

import yaml

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

ROLES = Path(__file__).resolve().parents[2] / "roles"

_STAMPS = Deferred("host.stamps")
_RUN_LOCK = Deferred("host.run_lock")
_DPKG = Deferred("host.dpkg_state")


def role_default(name: str) -> Any:
    """'vllm_dtype' | role_default -> its default in the defaults/main.yml of the role it is prefixed with.

    For a role that reads another role's variable where that role may not be
    in the play (preflight checks the whole stack first): the default has
    one owner and no copies.
    """
    for role in sorted((p.name for p in ROLES.iterdir()), key=len, reverse=True):
        path = ROLES / role / "defaults" / "main.yml"
        if name.startswith(role + "_") and path.is_file():
            value = _defaults(str(path), path.stat().st_mtime_ns).get(name, _MISSING)
            if value is _MISSING:
                continue
            # A filter's result is not templated again: a templated default would reach the role as text.
            if isinstance(value, str) and ("{{" in value or "{%" in value):
                raise ValueError("%s's default in %s is a template; role_default gives plain values only"
                                 % (name, path))
            return value
    raise KeyError("no role's defaults/main.yml has %s" % name)


_MISSING = object()


@functools.lru_cache(maxsize=None)
def _defaults(path: str, mtime_ns: int) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


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
            # 'vllm_dtype' | role_default -> the default of the role the name is prefixed with
            "role_default": role_default,
            # slurp's content | read_stamp -> the stamp's JSON object, {} when missing or torn
            "read_stamp": _STAMPS.read_slurped_stamp,
            # argv | with_run_lock -> argv under flock(1) on the host's run lock (host_guard waits for it)
            "with_run_lock": _RUN_LOCK.with_run_lock,
            # dpkg-query status lines | dpkg_not_installed(names) -> the names not fully installed
            "dpkg_not_installed": _DPKG.not_installed,
            # ansible_facts.mounts | nearest_mount(path) -> the mount that holds the path
            "nearest_mount": nearest_mount,
        }
