#!/usr/bin/env python3
"""Pack the llama.cpp tree that the llama-cpp-python sdist vendors
(vendor/llama.cpp) as a deterministic tar.gz, and write its sha256 next to it.

The archive STANDS IN for GitHub's archive of the same commit (GitHub is
unreachable from CI); its content is the real llama.cpp source. Deterministic
(sorted names, mtime 0, root owner, no gzip timestamp), so the sha256 is the
same on every machine and run.

    pack_source.py SDIST OUT.tar.gz
"""
from __future__ import annotations

import gzip
import hashlib
import io
import sys
import tarfile
from pathlib import Path

TOP = "llama.cpp"


def pack(sdist: Path, out: Path) -> str:
    picked = {}
    # One pass in stream order (a gzip stream cannot seek back cheaply).
    with tarfile.open(sdist, "r|gz") as source:
        for member in source:
            top = member.name.split("/", 1)[0]
            root = top + "/vendor/llama.cpp"
            if member.name != root and not member.name.startswith(root + "/"):
                continue
            relative = member.name[len(root):].lstrip("/")
            # vendor/llama.cpp/.git is a gitfile pointing into the sdist's own .git
            if relative == ".git" or relative.startswith(".git/"):
                continue
            name = TOP + ("/" + relative if relative else "")
            if member.isdir():
                picked[name] = ("dir", None)
            elif member.issym():
                picked[name] = ("sym", member.linkname)
            elif member.isfile():
                picked[name] = ("file" if not member.mode & 0o111 else "exe", source.extractfile(member).read())
    if not picked:
        raise SystemExit("%s has no vendor/llama.cpp" % sdist)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as target:
        for name in sorted(picked):
            kind, payload = picked[name]
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                target.addfile(info)
            elif kind == "sym":
                info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, payload
                target.addfile(info)
            else:
                info.mode = 0o755 if kind == "exe" else 0o644
                info.size = len(payload)
                target.addfile(info, io.BytesIO(payload))
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buffer.getvalue())
    data = raw.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    out.with_name(out.name + ".sha256").write_text("%s  %s\n" % (digest, out.name))
    return digest


if __name__ == "__main__":
    print(pack(Path(sys.argv[1]), Path(sys.argv[2])))
