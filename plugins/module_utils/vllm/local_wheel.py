# -*- coding: utf-8 -*-
"""A pure-Python wheel made from source text, byte for byte the same on every run.

vLLM 0.5.x needs outlines 0.0.43-0.0.46, which imports `pyairports.airports`;
the only `pyairports` on PyPI (0.0.1) installs no such module (VOLTA_FACTS.md,
"Dependency rot"). The vllm role installs its own small package under that name
as a wheel built here: pip then counts the requirement as met and never fetches
the PyPI one. No build backend is needed (offline hosts, Python 3.12 venvs
without setuptools).
"""
from __future__ import annotations

import base64
import hashlib
import io
import re
import zipfile
from typing import Dict, List, Mapping, Sequence, Tuple

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*([a-z]+[0-9]+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?$")
# Zip entries carry a date; a fixed one keeps the wheel's sha256 stable.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def wheel_filename(name: str, version: str) -> str:
    """`name-version-py3-none-any.whl` with the name normalised as wheels want it."""
    if not _NAME.match(name):
        raise ValueError("%r is not a distribution name" % name)
    if not _VERSION.match(version):
        raise ValueError("%r is not a version this builder writes (e.g. 0.0.1+v100llm.1)" % version)
    return "%s-%s-py3-none-any.whl" % (re.sub(r"[-_.]+", "_", name).lower(), version)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def wheel_entries(name: str, version: str, files: Mapping[str, str], requires: Sequence[str] = (),
                  summary: str = "") -> List[Tuple[str, bytes]]:
    """The archive's entries in order: the package files, METADATA, WHEEL, RECORD."""
    dist_info = "%s-%s.dist-info" % (re.sub(r"[-_.]+", "_", name).lower(), version)
    entries: List[Tuple[str, bytes]] = []
    for path in sorted(files):
        if path.startswith("/") or ".." in path.split("/") or path.startswith(dist_info):
            raise ValueError("%r is not a path inside the wheel" % path)
        entries.append((path, files[path].encode("utf-8")))
    metadata = ["Metadata-Version: 2.1", "Name: %s" % name, "Version: %s" % version]
    if summary:
        metadata.append("Summary: %s" % summary)
    metadata += ["Requires-Dist: %s" % requirement for requirement in requires]
    entries.append((dist_info + "/METADATA", ("\n".join(metadata) + "\n").encode("utf-8")))
    entries.append((dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: v100-llm local_wheel\n"
                                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(path, data) for path, data in entries] + [dist_info + "/RECORD,,"]
    entries.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    return entries


def wheel_bytes(name: str, version: str, files: Mapping[str, str], requires: Sequence[str] = (),
                summary: str = "") -> bytes:
    """The wheel file's content (deterministic: fixed dates and order)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in wheel_entries(name, version, files, requires, summary):
            info = zipfile.ZipInfo(path, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_from_dict(files: Mapping[str, str]) -> Dict[str, str]:
    """Checks the file map the module receives: str paths to str contents."""
    if not files:
        raise ValueError("a wheel needs at least one file")
    for path, content in files.items():
        if not isinstance(path, str) or not isinstance(content, str):
            raise ValueError("files must map paths to text")
    return dict(files)
