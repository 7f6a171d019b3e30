# -*- coding: utf-8 -*-
"""Model files: where each comes from, and whether the copy on the host is
the one asked for.

Pure functions: ``fetch_plan`` turns the models role's ``models_list`` into
one download/copy order per file (or the reasons it refuses), and
``stamp_matches`` decides from a stamp (sha256, size, mtime written after the
file was verified) whether a file must be fetched or hashed again, so a 20 GB
model is not re-hashed on every run.
"""
from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence
from urllib.parse import quote

SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A name other roles refer to (llama_server_instances[].model).
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A file name inside models_dir: no folders, no hidden files.
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
SOURCE_KEYS = ("url", "hf_repo", "controller_file")
KNOWN_KEYS = frozenset(("name", "file", "url", "hf_repo", "hf_revision", "hf_file", "controller_file",
                        "sha256", "size_bytes"))


def hf_resolve_url(endpoint: str, repo: str, revision: str, file: str) -> str:
    """The URL huggingface_hub downloads a file from (also what HF mirrors serve):
    {HF_ENDPOINT}/{repo}/resolve/{revision}/{file}."""
    return "%s/%s/resolve/%s/%s" % (endpoint.rstrip("/"), repo, quote(revision, safe=""),
                                    quote(file, safe="/"))


def _entry_errors(index: int, entry: Mapping[str, Any]) -> List[str]:
    where = "models_list[%d]" % index
    errors = []
    unknown = sorted(set(entry) - KNOWN_KEYS)
    if unknown:
        errors.append("%s has unknown keys %s: the keys are %s." % (where, ", ".join(unknown),
                                                                    ", ".join(sorted(KNOWN_KEYS))))
    name = entry.get("name")
    if not isinstance(name, str) or not MODEL_NAME.match(name):
        errors.append("%s.name=%r is not a model name: use letters, digits, '.', '_' and '-' "
                      "(it is how llama_server_instances[].model refers to the file)." % (where, name))
    sources = [key for key in SOURCE_KEYS if entry.get(key)]
    if len(sources) != 1:
        errors.append("%s (%s) names %s: give exactly one of url (+ sha256), hf_repo + hf_file (+ sha256) "
                      "or controller_file." % (where, name, " and ".join(sources) if sources else "no source"))
    sha256 = entry.get("sha256")
    needs_sha = bool(entry.get("url") or entry.get("hf_repo"))
    if sha256 in (None, ""):
        if needs_sha:
            errors.append("%s (%s) has no sha256: a download without a checksum is never done. Set sha256 "
                          "to the file's sha256 (`sha256sum FILE` of a copy you trust, or the SHA256 the "
                          "Hugging Face file page shows)." % (where, name))
    elif not isinstance(sha256, str) or not SHA256.match(sha256):
        errors.append("%s (%s).sha256=%r is not a sha256: 64 lowercase hex digits." % (where, name, sha256))
    if entry.get("hf_repo"):
        if not HF_REPO.match(str(entry["hf_repo"])):
            errors.append("%s (%s).hf_repo=%r is not a Hugging Face repository: use owner/name, e.g. "
                          "bartowski/Qwen2.5-Coder-14B-Instruct-GGUF." % (where, name, entry["hf_repo"]))
        if not entry.get("hf_file"):
            errors.append("%s (%s) has hf_repo but no hf_file: name the file in the repository." % (where, name))
    elif entry.get("hf_file") or entry.get("hf_revision"):
        errors.append("%s (%s) has hf_file/hf_revision without hf_repo." % (where, name))
    url = entry.get("url")
    if url and not re.match(r"^https?://", str(url)):
        errors.append("%s (%s).url=%r is not an http(s) URL; for a file on the controller use "
                      "controller_file." % (where, name, url))
    size = entry.get("size_bytes")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        errors.append("%s (%s).size_bytes=%r must be a positive whole number of bytes." % (where, name, size))
    return errors


def _file_name(entry: Mapping[str, Any]) -> str:
    if entry.get("file"):
        return str(entry["file"])
    source = entry.get("url") or entry.get("hf_file") or entry.get("controller_file") or ""
    return posixpath.basename(str(source).split("?", 1)[0])


def fetch_plan(models: Sequence[Mapping[str, Any]], models_dir: str, hf_endpoint: str) -> Dict[str, Any]:
    """models_list -> {"models": [order, ...], "errors": [message, ...]}.

    An order: name, file, path, source (url | hf | controller), url (url and
    hf), controller_file, sha256 ("" for a controller file without one: the
    role hashes it on the controller), size_bytes (None when unknown).
    """
    errors: List[str] = []
    orders: List[Dict[str, Any]] = []
    if not isinstance(models, (list, tuple)):
        return {"models": [], "errors": ["models_list must be a list of models (got %r)." % (models,)]}
    for index, entry in enumerate(models):
        if not isinstance(entry, Mapping):
            errors.append("models_list[%d]=%r is not a mapping with name and a source." % (index, entry))
            continue
        entry_errors = _entry_errors(index, entry)
        file_name = _file_name(entry)
        if not FILE_NAME.match(file_name):
            entry_errors.append("models_list[%d] (%s) would be stored as %r: set file to a plain file name "
                                "(no folders, not hidden)." % (index, entry.get("name"), file_name))
        errors += entry_errors
        if entry_errors:
            continue
        if entry.get("url"):
            source, url = "url", str(entry["url"])
        elif entry.get("hf_repo"):
            source = "hf"
            url = hf_resolve_url(hf_endpoint, str(entry["hf_repo"]), str(entry.get("hf_revision") or "main"),
                                 str(entry["hf_file"]))
        else:
            source, url = "controller", ""
        orders.append({
            "name": entry["name"],
            "file": file_name,
            "path": posixpath.join(models_dir, file_name),
            "source": source,
            "url": url,
            "controller_file": str(entry.get("controller_file") or ""),
            "sha256": str(entry.get("sha256") or ""),
            "size_bytes": entry.get("size_bytes"),
        })
    for key, label in (("name", "name"), ("file", "file")):
        seen: Dict[str, int] = {}
        for order in orders:
            seen[order[key]] = seen.get(order[key], 0) + 1
        errors += ["models_list has %d entries with %s %r: each needs its own." % (count, label, value)
                   for value, count in sorted(seen.items()) if count > 1]
    return {"models": orders if not errors else [], "errors": errors}


def stamp_matches(stamp: Optional[Mapping[str, Any]], sha256: str, size: int, mtime_ns: int) -> bool:
    """True when the stamp was written for this very file (same size and
    mtime) after it hashed to sha256."""
    if not stamp:
        return False
    return (stamp.get("sha256") == sha256 and stamp.get("size") == size
            and stamp.get("mtime_ns") == mtime_ns)


def file_sha256(path: str) -> str:
    """sha256 of a (multi-GB) file, read in 8 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(8 * 1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()
