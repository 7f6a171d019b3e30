# -*- coding: utf-8 -*-
"""A model file's stamp, <folder>/.stamps/<file>.json: the digest, size and mtime of the file when it hashed to that
digest. A file whose stamp matches is not hashed again (models role: model_files); model_download writes it as soon
as a download is in place, so a run that dies after the download still leaves it stamped."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional


def stamp_path(path: str) -> str:
    return os.path.join(os.path.dirname(path), ".stamps", os.path.basename(path) + ".json")


def read_stamp(path: str) -> Optional[Dict[str, Any]]:
    """The stamp of path (None when missing or torn)."""
    try:
        with open(stamp_path(path)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def fsync_path(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_stamp(path: str, algorithm: str, digest: str, stat: os.stat_result) -> None:
    """The stamp certifies the file's bytes: both are on disk before it names them (a power cut between the two
    leaves a file without a stamp, hashed again, never a stamp without its file). stat is the file's from before
    it was hashed: a file changed meanwhile does not match its stamp."""
    fsync_path(path)
    target = stamp_path(path)
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    temporary = target + ".tmp"
    with open(temporary, "w") as handle:
        json.dump({algorithm: digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    fsync_path(os.path.dirname(target))
