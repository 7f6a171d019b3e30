"""Filters for reasoning about paths on the managed host from its facts."""
from __future__ import annotations

from posixpath import normpath
from typing import Any


def nearest_mount(mounts: list[dict[str, Any]], path: str) -> dict[str, Any] | None:
    """Return the mount (from ansible_facts.mounts) that holds ``path``.

    That is the mount whose mount point is the longest prefix of the path, so
    a path that does not exist yet still maps to the file system it will be
    created on.
    """
    target = normpath(path)
    best: dict[str, Any] | None = None
    for mount in mounts:
        point = normpath(mount.get("mount", ""))
        inside = point == "/" or target == point or target.startswith(point + "/")
        if inside and (best is None or len(point) > len(normpath(best["mount"]))):
            best = mount
    return best


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"nearest_mount": nearest_mount}
