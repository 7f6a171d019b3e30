# -*- coding: utf-8 -*-
"""A llama.cpp install as one file: the llama_cpp role's checked install
folder (<prefix>/<version>-<stamp hash>, its build-stamp.json included) as a
.tar.gz, so that one host compiles and hosts with the same GPUs install.

member_errors and library_problems are pure (parsed data in, messages out);
the rest does the file work for the modules
llama_cpp_artifact (on the build host) and llama_cpp_artifact_info (on the
controller). Whether an archive fits a host is llama_cpp_build.artifact_plan.
tests/unit/test_llama_cpp_artifact.py.

The archive is reproducible: members in name order, owned by root, gzip
without a name or time, so exporting the same install twice gives the same
bytes and the same sha256.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import posixpath
import re
import stat
import tarfile
from typing import Any, Dict, List, Sequence, Tuple

from ansible_collections.v100.llm.plugins.module_utils.models.sources import file_digest

STAMP_FILE = "build-stamp.json"
# Which distribution release built it (/etc/os-release), added to the archive only: a build links that
# release's glibc, libstdc++ and OpenSSL.
BUILT_ON_FILE = "built-on.json"
SUFFIX = ".tar.gz"
_SERVER = "bin/llama-server"


def member_errors(members: Sequence[Tuple[str, str, int]]) -> List[str]:
    """[(name, kind, mode)], kind "dir", "file" or anything else -> what makes
    the archive unfit to extract as root: it must hold one folder and only
    plain files and folders inside it (a link or device member is how a crafted
    archive writes outside its folder), each named once and in normal form
    ("x/./y" would slip past tar's --exclude of x/y), none writable by group or
    others or setuid, with a build stamp and bin/llama-server."""
    folders = {name.split("/", 1)[0] for name, _, _ in members}
    if len(folders) != 1:
        return ["it holds %s at its top level, not one install folder" % (", ".join(sorted(folders)) or "nothing")]
    folder = folders.pop()
    errors = []
    seen = set()
    for name, kind, mode in members:
        if name.startswith("/") or ".." in name.split("/") or folder in ("", ".", ".."):
            errors.append("%s leaves the install folder" % name)
        elif posixpath.normpath(name) != name or name in seen:
            errors.append("%s is %s" % (name, "named twice" if name in seen else "not a normal path"))
        elif kind not in ("dir", "file"):
            errors.append("%s is a %s, not a plain file or folder" % (name, kind))
        elif mode & 0o7022:
            errors.append("%s has mode %04o (writable by others, or setuid)" % (name, mode & 0o7777))
        seen.add(name)
    names = {name for name, kind, _ in members if kind == "file"}
    errors += ["it has no %s/%s" % (folder, wanted) for wanted in (STAMP_FILE, _SERVER)
               if "%s/%s" % (folder, wanted) not in names]
    return errors


def _kind(member: tarfile.TarInfo) -> str:
    return "dir" if member.isdir() else "file" if member.isfile() else \
        "symbolic link" if member.issym() else "hard link" if member.islnk() else "special file"


def read_archive(path: str) -> Dict[str, Any]:
    """{"sha256", "folder", "stamp", "error"} of an exported archive; "error"
    says why it cannot be installed (unreadable, or member_errors)."""
    result: Dict[str, Any] = {"sha256": "", "folder": "", "stamp": {}, "built_on": {}, "error": ""}
    try:
        result["sha256"] = file_digest(path)
        with tarfile.open(path, "r:gz") as archive:
            members = archive.getmembers()
            errors = member_errors([(member.name.rstrip("/"), _kind(member), member.mode) for member in members])
            if errors:
                result["error"] = "; ".join(errors)
                return result
            result["folder"] = members[0].name.split("/", 1)[0]
            for key, member in (("stamp", STAMP_FILE), ("built_on", BUILT_ON_FILE)):
                found = archive.extractfile("%s/%s" % (result["folder"], member)) \
                    if "%s/%s" % (result["folder"], member) in archive.getnames() else None
                result[key] = json.loads(found.read().decode("utf-8")) if found else {}
    except (OSError, tarfile.TarError, EOFError, ValueError) as error:
        result["error"] = "it cannot be read as a .tar.gz with a JSON stamp (%s)" % error
    return result


def leftovers(dest: str) -> List[str]:
    """The other archives and .partial files in dest's folder (earlier exports, killed writes)."""
    folder = os.path.dirname(dest)
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if os.path.join(folder, name) != dest and (name.endswith(SUFFIX) or name.endswith(".partial")))


def is_current(install_dir: str, dest: str) -> bool:
    """dest was written after the install's stamp, which the role writes last with every new install of that name."""
    return os.path.isfile(dest) and os.stat(dest).st_mtime >= os.stat(os.path.join(install_dir, STAMP_FILE)).st_mtime


def os_release(text: str) -> Dict[str, str]:
    """/etc/os-release -> {"id", "version_id"} ("debian", "13"; "ubuntu", "24.04")."""
    fields = dict(re.findall(r'^([A-Z_]+)="?([^"\n]*)"?$', text or "", re.M))
    return {"id": fields.get("ID", ""), "version_id": fields.get("VERSION_ID", "")}


def write_archive(install_dir: str, dest: str, built_on: Dict[str, str]) -> List[str]:
    """Writes install_dir as the archive dest (through dest.partial, flushed,
    then renamed, mode 0644), with built_on (the build host's os_release) as
    BUILT_ON_FILE inside its folder; nothing, and the reasons, when the folder
    is not one that member_errors accepts."""
    top = os.path.basename(install_dir.rstrip("/"))
    # An install that came from an archive holds the build host's record: this host's replaces it.
    entries = [(path, name) for path, name in _walk(install_dir, top) if name != "%s/%s" % (top, BUILT_ON_FILE)]
    errors = member_errors([(name, _file_kind(os.lstat(path)), os.lstat(path).st_mode) for path, name in entries])
    if errors:
        return errors
    stamp_mtime = os.stat(os.path.join(install_dir, STAMP_FILE)).st_mtime
    host = (json.dumps(built_on, sort_keys=True) + "\n").encode("utf-8")
    partial = dest + ".partial"
    with open(partial, "wb") as raw:
        # Level 6 (gzip's default): the sm_70 binaries shrink to a third, five times faster than level 9.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as compressed:
            with tarfile.open(fileobj=compressed, mode="w", format=tarfile.GNU_FORMAT) as archive:
                for path, arcname in entries:
                    info = _owned_by_root(archive.gettarinfo(path, arcname))
                    if info.isfile():
                        with open(path, "rb") as handle:
                            archive.addfile(info, handle)
                    else:
                        archive.addfile(info)
                info = _owned_by_root(tarfile.TarInfo("%s/%s" % (top, BUILT_ON_FILE)))
                info.size, info.mode, info.mtime = len(host), 0o644, int(stamp_mtime)
                archive.addfile(info, io.BytesIO(host))
        raw.flush()
        os.fsync(raw.fileno())
    os.chmod(partial, 0o644)
    os.rename(partial, dest)
    directory = os.open(os.path.dirname(dest), os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return []


def _file_kind(status: os.stat_result) -> str:
    """As _kind names an archive member: a file with several names would be archived as a hard link."""
    if stat.S_ISDIR(status.st_mode):
        return "dir"
    if stat.S_ISREG(status.st_mode):
        return "file" if status.st_nlink == 1 else "hard link"
    return "symbolic link" if stat.S_ISLNK(status.st_mode) else "special file"


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _walk(path: str, name: str):
    """(path, name in the archive) for path and everything under it, depth first in name order."""
    yield path, name
    if os.path.isdir(path) and not os.path.islink(path):
        for child in sorted(os.listdir(path)):
            yield from _walk(os.path.join(path, child), "%s/%s" % (name, child))


# `ldd -r <binary>`: "\tlibcudart.so.12 => not found" and
# "undefined symbol: cublasLtMatmul, version libcublasLt.so.12\t(./llama-server)".
_NOT_FOUND = re.compile(r"^\s*(\S+) => not found\s*$", re.M)
_UNDEFINED = re.compile(r"^undefined symbol: ([^,\s]+)(?:, version (\S+))?\s+\(", re.M)

# Who gives each library a CUDA build of llama.cpp links (soname prefix -> where from):
# Debian's nvidia-cuda-toolkit source (libcudart12, libcublas12 with libcublasLt, in non-free),
# NVIDIA's CUDA repository (cuda-cudart-12-Y, libcublas-12-Y: what NVIDIA's CUDA runtime images
# install), the driver's libcuda.so.1, NVIDIA's libnccl2, and GCC's OpenMP runtime, which ggml's
# CPU backend links (GGML_OPENMP, on by default: ggml/CMakeLists.txt and ggml/src/CMakeLists.txt at the pinned
# commit) and which only a compiler brings along.
LIBRARY_SOURCES = (
    ("libcudart.so.", "the CUDA runtime: role cuda_toolkit, or libcudart12 (cuda_toolkit_source: distro) or "
                      "cuda-cudart-12-<minor> (cuda_repo)"),
    ("libcublas", "cuBLAS: role cuda_toolkit, or libcublas12 (distro) or libcublas-12-<minor> (cuda_repo)"),
    ("libcuda.so.", "the driver's CUDA library: role nvidia_driver"),
    ("libnccl.so.", "NCCL: NVIDIA's libnccl2, which this role installs when the stamp names one"),
    ("libgomp.so.", "GCC's OpenMP runtime: libgomp1, which this role installs for an exported build"),
    ("libssl.so.", "OpenSSL: libssl3 (Debian 12, Ubuntu 22.04) or libssl3t64 (Debian 13, Ubuntu 24.04)"),
)
_SHOWN_SYMBOLS = 5


def library_problems(ldd_output: str) -> List[str]:
    """`ldd -r` of a binary -> each library not found, with what gives it where known; when every
    library is found, the symbols none defines (an older library than the build's), by library.
    A library not found leaves all its symbols undefined: those are not listed."""
    missing = _NOT_FOUND.findall(ldd_output or "")
    if missing:
        return ["%s not found%s" % (soname, "".join(" (%s)" % text for prefix, text in LIBRARY_SOURCES
                                                    if soname.startswith(prefix)))
                for soname in missing]
    undefined: Dict[str, List[str]] = {}
    for symbol, version in _UNDEFINED.findall(ldd_output or ""):
        undefined.setdefault(version, []).append(symbol)
    return ["%s undefined%s" % (", ".join(symbols[:_SHOWN_SYMBOLS] + (["..."] if len(symbols) > _SHOWN_SYMBOLS
                                                                      else [])),
                                " (from %s: an older one is installed than the build's)" % version if version else "")
            for version, symbols in undefined.items()]
