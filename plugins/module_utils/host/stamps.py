"""Stamps: the JSON written last into what was built or fetched, naming exactly what it is.

A power cut can leave a stamp truncated or empty; that means "not certified,
build again", never a crash that the next run repeats.

A model file's stamp, <folder>/.stamps/<file>.json: the digest, size and mtime of the file when it hashed to that
digest. A file whose stamp matches is not hashed again (models role: model_files); model_download writes it as soon
as a download is in place, so a run that dies after the download still leaves it stamped.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
from typing import Any, Dict, Optional


def read_slurped_stamp(encoded: str) -> dict:
    """The JSON object of a stamp from slurp's base64 content; {} when missing, unreadable or truncated."""
    try:
        stamp = json.loads(base64.b64decode(encoded or "", validate=True).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}


def stamp_path(path: str) -> str:
    return os.path.join(os.path.dirname(path), ".stamps", os.path.basename(path) + ".json")


def read_file_stamp(path: str) -> Optional[Dict[str, Any]]:
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
