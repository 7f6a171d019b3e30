# -*- coding: utf-8 -*-
"""Model files: where each comes from, and whether the copy on the host is
the one asked for.

Pure functions: ``fetch_plan`` turns the models role's ``models_list`` into
one download/copy order per file (or the reasons it refuses); a Hugging Face
model folder (for vLLM) becomes one order per file once ``folder_orders`` has
the repository's file listing; ``stamp_matches`` decides from a stamp (digest,
size, mtime written after the file was verified) whether a file must be
fetched or hashed again, so a 20 GB model is not re-hashed on every run.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote

SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A name other roles refer to (llama_server_instances[].model).
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A file name inside models_dir: no folders, no hidden files.
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
# A Hugging Face revision is a git branch, tag or commit id: git-check-ref-format(1) refuses control
# characters, space, ~ ^ : ? * [ and \, "..", "@{" and "//", a leading "-", and an ending "/", "." or ".lock".
GIT_REF = re.compile(r"^(?!-)(?!.*(?:\.\.|@\{|//))[^\x00-\x20\x7f~^:?*\[\\]+(?<![/.])(?<!\.lock)$")
# llama.cpp's name for part N of a split GGUF set (llama_split_path in src/llama.cpp at the pinned commit:
# "%s-%05d-of-%05d.gguf"); its loader finds parts 2..N next to part 1 by that name.
SPLIT_PART = re.compile(r"^(?P<prefix>.+)-(?P<part>[0-9]{5})-of-(?P<count>[0-9]{5})\.gguf$")
SOURCE_KEYS = ("url", "hf_repo", "controller_file")
KNOWN_KEYS = frozenset(("name", "file", "url", "hf_repo", "hf_revision", "hf_file", "hf_include", "controller_file",
                        "sha256", "size_bytes"))
GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")
# What vLLM 0.5.4 reads from a model folder: config.json and the tokenizer's files (transformers'
# AutoConfig/AutoTokenizer), the weights as safetensors (DefaultModelLoader's allow_patterns,
# vllm/model_executor/model_loader/loader.py:228-235; .bin only where a repository has no safetensors),
# quantize_config.json of GPTQ checkpoints. Top-level files only: vLLM reads no subfolder (the loader skips
# "original/").
HF_FOLDER_INCLUDE = ("*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken")


def hf_resolve_url(endpoint: str, repo: str, revision: str, file: str) -> str:
    """The URL huggingface_hub downloads a file from (also what HF mirrors serve):
    {HF_ENDPOINT}/{repo}/resolve/{revision}/{file}."""
    return "%s/%s/resolve/%s/%s" % (endpoint.rstrip("/"), repo, quote(revision, safe=""),
                                    quote(file, safe="/"))


def hf_tree_url(endpoint: str, repo: str, revision: str) -> str:
    """The file listing huggingface_hub's list_repo_tree asks for (hf_api.py, 0.24:
    {endpoint}/api/models/{repo}/tree/{quoted revision}; paginated with Link headers): each file's path, size,
    git blob id ("oid") and, for a Git LFS file, "lfs": {"oid": its sha256, "size"}. Not recursive: vLLM reads
    the folder's top level only, and fewer items mean fewer pages."""
    return "%s/api/models/%s/tree/%s" % (endpoint.rstrip("/"), repo, quote(revision, safe=""))


def _is_folder(entry: Mapping[str, Any]) -> bool:
    """A Hugging Face model folder (for vLLM): hf_repo without hf_file."""
    return bool(entry.get("hf_repo")) and not entry.get("hf_file")


def _folder_errors(where: str, name: Any, entry: Mapping[str, Any]) -> List[str]:
    """What is wrong with an hf_repo entry without hf_file: a model folder (for vLLM)."""
    errors = ["%s (%s) is a Hugging Face model folder (hf_repo without hf_file) with %s: leave it out (%s)." % (
        where, name, key, why) for key, why in (
            ("sha256", "each file's sha256 or git blob id comes from the repository's listing at hf_revision"),
            ("file", "the folder is models_dir/<name>"),
            ("size_bytes", "the listing gives each file's size")) if entry.get(key) not in (None, "", [])]
    include = entry.get("hf_include")
    if include is not None and (not isinstance(include, list) or not include
                                or not all(isinstance(glob, str) and glob and "/" not in glob for glob in include)):
        errors.append("%s (%s).hf_include=%r must be a list of file name patterns of the folder's top level (e.g. "
                      "['*.json', '*.safetensors']): vLLM reads no subfolder." % (where, name, include))
    return errors


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
        errors.append("%s (%s) names %s: give exactly one of url (+ sha256), hf_repo + hf_file (+ sha256), "
                      "hf_repo alone (a model folder) or controller_file." % (
                          where, name, " and ".join(sources) if sources else "no source"))
    sha256 = entry.get("sha256")
    needs_sha = bool(entry.get("url") or entry.get("hf_file"))
    if _is_folder(entry):
        errors += _folder_errors(where, name, entry)
    elif entry.get("hf_include") is not None:
        errors.append("%s (%s) has hf_include without being a model folder: hf_include chooses the files of an "
                      "hf_repo entry without hf_file." % (where, name))
    elif _names_a_split_part(_source_name(entry)):
        errors += _split_errors(where, name, entry, needs_sha)
    elif sha256 in (None, ""):
        if needs_sha:
            errors.append("%s (%s) has no sha256: a download without a checksum is never done. Set sha256 "
                          "to the file's sha256 (`sha256sum FILE` of a copy you trust, or the SHA256 the "
                          "Hugging Face file page shows)." % (where, name))
    elif not isinstance(sha256, str) or not SHA256.match(sha256):
        errors.append("%s (%s).sha256=%r is not a sha256: 64 lowercase hex digits." % (where, name, sha256))
    revision = entry.get("hf_revision")
    if revision is not None and (not isinstance(revision, str) or not revision):
        errors.append("%s (%s).hf_revision=%r is not a branch, tag or commit id: quote it (YAML reads a commit id "
                      "of digits only as a number)." % (where, name, revision))
    elif revision is not None and not GIT_REF.match(revision):
        errors.append("%s (%s).hf_revision=%r is not a branch, tag or commit id (git refuses spaces and ~^:?*[\\ "
                      "in one): set the commit id the repository's Files page shows (its history: \"Copy full "
                      "SHA\")." % (where, name, revision))
    if entry.get("hf_repo"):
        if not HF_REPO.match(str(entry["hf_repo"])):
            errors.append("%s (%s).hf_repo=%r is not a Hugging Face repository: use owner/name, e.g. "
                          "bartowski/Qwen2.5-Coder-14B-Instruct-GGUF." % (where, name, entry["hf_repo"]))
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


def _names_a_split_part(file_name: str) -> bool:
    """Named as a part of a split set (gguf-split names an unsplit file -00001-of-00001)."""
    split = SPLIT_PART.match(file_name)
    return bool(split) and (split.group("part"), split.group("count")) != ("00001", "00001")


def _split_errors(where: str, name: Any, entry: Mapping[str, Any], needs_sha: bool) -> List[str]:
    """What is wrong with an entry whose source names a part of a split GGUF set."""
    split = SPLIT_PART.match(_source_name(entry))
    part, count = int(split.group("part")), int(split.group("count"))
    if not 1 <= part <= count:
        return ["%s (%s) names %s, which is not a part of a split GGUF set: check the file name." % (
            where, name, split.group(0))]
    if part != 1:
        return ["%s (%s) names part %d of a split GGUF set: name part 1 (%s-00001-of-%05d.gguf); the entry "
                "fetches all %d parts and llama.cpp loads them from part 1." % (
                    where, name, part, split.group("prefix"), count, count)]
    if entry.get("size_bytes") is not None:
        return ["%s (%s) is a split GGUF set with size_bytes: leave it out (each part's size is asked of its "
                "server)." % (where, name)]
    if entry.get("file"):
        return ["%s (%s) is a split GGUF set with file=%r: leave file out. llama.cpp finds parts 2..%d by part 1's "
                "name, so the parts keep their own names." % (where, name, entry["file"], count)]
    sha256 = entry.get("sha256")
    if sha256 in (None, "", []) and not needs_sha:
        return []
    if (not isinstance(sha256, list) or len(sha256) != count
            or not all(isinstance(value, str) and SHA256.match(value) for value in sha256)):
        return ["%s (%s) is a split GGUF set of %d parts: set sha256 to a list of %d sha256s (64 lowercase hex "
                "digits each), one per part in order, not %r." % (where, name, count, count, sha256)]
    return []


def split_parts(file_name: str) -> List[str]:
    """The file names of a split GGUF set named by its part 1 (one name when it is not one)."""
    split = SPLIT_PART.match(file_name)
    count = int(split.group("count")) if split else 1
    if count < 2 or split.group("part") != "00001":
        return [file_name]
    return ["%s-%05d-of-%05d.gguf" % (split.group("prefix"), part, count) for part in range(1, count + 1)]


def _source_name(entry: Mapping[str, Any]) -> str:
    source = entry.get("url") or entry.get("hf_file") or entry.get("controller_file") or ""
    return posixpath.basename(str(source).split("?", 1)[0])


def _file_name(entry: Mapping[str, Any]) -> str:
    return str(entry["file"]) if entry.get("file") else _source_name(entry)


def _sibling(source: str, part_1: str, part: str) -> str:
    """The source (URL, Hugging Face file or controller path) of `part`, next to part 1's."""
    path, question, query = source.partition("?")
    return path[:len(path) - len(part_1)] + part + question + query


def _orders(entry: Mapping[str, Any], file_name: str, models_dir: str, hf_endpoint: str) -> List[Dict[str, Any]]:
    """One order per file: one, or every part of a split set (each its own URL, sha256 and stamp)."""
    parts = split_parts(_source_name(entry))
    split = len(parts) > 1
    parts = parts if split else [file_name]
    sums = entry.get("sha256") or ([""] * len(parts) if split else "")
    orders = []
    for index, part in enumerate(parts):
        source = {key: _sibling(str(entry[key]), file_name, part) if split else str(entry[key])
                  for key in ("url", "hf_file", "controller_file") if entry.get(key)}
        if "url" in source:
            kind, url = "url", source["url"]
        elif "hf_file" in source:
            kind = "hf"
            url = hf_resolve_url(hf_endpoint, str(entry["hf_repo"]), str(entry.get("hf_revision") or "main"),
                                 source["hf_file"])
        else:
            kind, url = "controller", ""
        orders.append({
            "name": "%s (part %d of %d)" % (entry["name"], index + 1, len(parts)) if split else entry["name"],
            "model": entry["name"],
            "part": index + 1,
            "file": part,
            "path": posixpath.join(models_dir, part),
            "source": kind,
            "url": url,
            "controller_file": source.get("controller_file", ""),
            "sha256": str((sums[index] if split else sums) or ""),
            "git_sha1": "",
            "size_bytes": None if split else entry.get("size_bytes"),
        })
    return orders


def _folder(entry: Mapping[str, Any], models_dir: str, hf_endpoint: str) -> Dict[str, Any]:
    revision = str(entry.get("hf_revision") or "main")
    return {"name": entry["name"], "repo": str(entry["hf_repo"]), "revision": revision,
            "path": posixpath.join(models_dir, entry["name"]),
            "include": list(entry.get("hf_include") or HF_FOLDER_INCLUDE),
            "listing_url": hf_tree_url(hf_endpoint, str(entry["hf_repo"]), revision),
            # A commit names the files for good: its listing, kept beside them, is read again without the network.
            "pinned": bool(GIT_SHA1.match(revision))}


def fetch_plan(models: Sequence[Mapping[str, Any]], models_dir: str, hf_endpoint: str) -> Dict[str, Any]:
    """models_list -> {"models": [order, ...], "folders": [folder, ...], "errors": [message, ...]}.

    An order: name (the entry's; "<name> (part N of M)" for each part of a
    split GGUF set), model (the entry's name), part (1 for a single file),
    file, path, source (url | hf | controller), url (url and hf),
    controller_file, sha256 ("" for a controller file without one: the role
    hashes it on the controller), git_sha1 (""; folder files without a sha256
    have it), size_bytes (None when unknown).

    A folder (an hf_repo entry without hf_file: a model folder for vLLM): name,
    repo, revision, path (models_dir/<name>), include (file name patterns),
    listing_url, pinned (revision is a commit). Its orders come from
    folder_orders once the repository's listing is read.
    """
    errors: List[str] = []
    orders: List[Dict[str, Any]] = []
    folders: List[Dict[str, Any]] = []
    if not isinstance(models, (list, tuple)):
        return {"models": [], "folders": [], "errors": ["models_list must be a list of models (got %r)." % (models,)]}
    if not isinstance(models_dir, str) or not models_dir.startswith("/") or models_dir != models_dir.strip():
        # A trailing space names another folder beside the one meant, which no listing shows.
        return {"models": [], "folders": [], "errors": [
            "models_dir=%r must be an absolute path without leading or trailing spaces." % (models_dir,)]}
    for index, entry in enumerate(models):
        if not isinstance(entry, Mapping):
            errors.append("models_list[%d]=%r is not a mapping with name and a source." % (index, entry))
            continue
        entry_errors = _entry_errors(index, entry)
        is_folder = _is_folder(entry)
        file_name = str(entry.get("name")) if is_folder else _file_name(entry)
        if not FILE_NAME.match(file_name):
            entry_errors.append("models_list[%d] (%s) would be stored as %r: set file to a plain file name "
                                "(no folders, not hidden)." % (index, entry.get("name"), file_name))
        errors += entry_errors
        if entry_errors:
            continue
        if is_folder:
            folders.append(_folder(entry, models_dir, hf_endpoint))
        else:
            orders += _orders(entry, file_name, models_dir, hf_endpoint)
    for key, label in (("name", "name"), ("file", "file")):
        seen: Dict[str, int] = {}
        for value in [order[key] for order in orders] + [folder["name"] for folder in folders]:
            seen[value] = seen.get(value, 0) + 1
        errors += ["models_list has %d entries with %s %r: each needs its own." % (count, label, value)
                   for value, count in sorted(seen.items()) if count > 1]
    failed = bool(errors)
    return {"models": [] if failed else orders, "folders": [] if failed else folders, "errors": errors}


def folder_orders(folders: Sequence[Mapping[str, Any]], listings: Mapping[str, Sequence[Mapping[str, Any]]],
                  hf_endpoint: str) -> Dict[str, Any]:
    """fetch_plan's folders and each one's listing (name -> the tree API's items) -> {"models": [order, ...],
    "errors": [...]}: one order per top-level file the folder's include patterns select, checked against the
    listing's sha256 (a Git LFS file: the weights) or git blob id (a small file kept in git: config.json)."""
    orders: List[Dict[str, Any]] = []
    errors: List[str] = []
    for folder in folders:
        where = "models_list entry %s (%s at %s)" % (folder["name"], folder["repo"], folder["revision"])
        # Hidden files (.gitattributes) are git's, and the folder's own .stamps and .partial are the role's.
        files = [item for item in listings.get(folder["name"], []) if item.get("type") == "file"
                 and "/" not in str(item.get("path", "")) and not str(item.get("path", "")).startswith(".")
                 and any(fnmatch.fnmatchcase(str(item["path"]), glob) for glob in folder["include"])]
        names = {str(item["path"]) for item in files}
        # Mistral's repositories carry consolidated.safetensors, the same weights again beside the shards, which
        # vLLM skips (filter_duplicate_safetensors_files, weight_utils.py): not fetched either.
        if "consolidated.safetensors" in names and len([n for n in names if n.endswith(".safetensors")]) > 1:
            files = [item for item in files if item["path"] != "consolidated.safetensors"]
            names.discard("consolidated.safetensors")
        if "config.json" not in names:
            errors.append("%s: the repository has no config.json at its top level, so it is not a model folder "
                          "vLLM loads. Check hf_repo and hf_revision." % where)
            continue
        if not any(name.endswith((".safetensors", ".bin")) for name in names):
            errors.append("%s: hf_include=%s selects no weights (*.safetensors). Check the repository has "
                          "safetensors weights, or add the pattern of its weight files to hf_include." % (
                              where, folder["include"]))
            continue
        for item in sorted(files, key=lambda item: str(item["path"])):
            lfs = item.get("lfs") or {}
            sha256 = str(lfs.get("oid") or "")
            git_sha1 = "" if sha256 else str(item.get("oid") or "")
            if not FILE_NAME.match(str(item["path"])):
                errors.append("%s: its file %r has a name the role does not store (letters, digits, '.', '_', '+' "
                              "and '-'): leave it out of hf_include." % (where, item["path"]))
                continue
            if not (SHA256.match(sha256) or GIT_SHA1.match(git_sha1)) or not isinstance(item.get("size"), int):
                errors.append("%s: the listing gives %s no size and sha256 or git blob id (%r): the server is not "
                              "a Hugging Face endpoint; check models_hf_endpoint." % (where, item["path"], item))
                continue
            orders.append({
                "name": "%s/%s" % (folder["name"], item["path"]), "model": folder["name"], "part": 1,
                "file": item["path"], "path": posixpath.join(folder["path"], item["path"]), "source": "hf",
                "url": hf_resolve_url(hf_endpoint, folder["repo"], folder["revision"], str(item["path"])),
                "controller_file": "", "sha256": sha256, "git_sha1": git_sha1, "size_bytes": int(item["size"]),
                "folder": folder["path"]})
    return {"models": orders if not errors else [], "errors": errors}


def models_files(orders: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The models role's hand-over to later roles: model name -> path (part 1 of a split set, which llama.cpp
    loads), sha256 (part 1's), source, verified (every part), size (the parts' sum; None until every part is
    there), gguf (part 1's summary), parts (every file's path).

    `orders` are fetch_plan's (every planned file, fetched or not: check mode on a new host plans the later
    roles with what a real run would fetch); `results` are model_files' by order name.
    A model folder's path is the folder (what vLLM loads), with folder true, sha256 "" and gguf None.
    """
    by_name = {result["name"]: result for result in results}
    files: Dict[str, Any] = {}
    for order in orders:
        state = by_name.get(order["name"], {})
        folder = order.get("folder", "")
        model = files.setdefault(order["model"], {
            "path": folder or order["path"], "sha256": "" if folder else order["sha256"], "source": order["source"],
            "folder": bool(folder), "verified": True, "size": 0, "gguf": None if folder else state.get("gguf"),
            "parts": []})
        model["parts"].append(order["path"])
        model["verified"] = model["verified"] and bool(state.get("up_to_date"))
        size = state.get("size")
        model["size"] = None if size is None or model["size"] is None else model["size"] + size
    return files


def planned_files(plan: Mapping[str, Any]) -> Dict[str, Any]:
    """fetch_plan's result -> models_files' shape for every models_list entry before anything is fetched
    (verified false, no GGUF header read), a folder by its path: what preflight checks the servers' model
    names against on a host that has none of the files yet."""
    files = models_files(plan["models"], [])
    for folder in plan["folders"]:
        files[folder["name"]] = {"path": folder["path"], "sha256": "", "source": "hf", "folder": True,
                                 "verified": False, "size": None, "gguf": None, "parts": []}
    return files


def wanted_digest(order: Mapping[str, Any]) -> Tuple[str, str]:
    """(algorithm, value) a file is checked against: its git blob id where the listing gives no sha256
    (a folder's small files), else its sha256 ("" takes the file's own)."""
    if order.get("git_sha1"):
        return "git_sha1", str(order["git_sha1"])
    return "sha256", str(order.get("sha256") or "")


def stamp_matches(stamp: Optional[Mapping[str, Any]], algorithm: str, digest: str, size: int, mtime_ns: int) -> bool:
    """True when the stamp was written for this very file (same size and
    mtime) after it hashed to digest with algorithm (sha256 or git_sha1)."""
    if not stamp:
        return False
    return (stamp.get(algorithm) == digest and stamp.get("size") == size
            and stamp.get("mtime_ns") == mtime_ns)


def file_digest(path: str, algorithm: str = "sha256") -> str:
    """sha256 of a (multi-GB) file, read in 8 MiB blocks; or with git_sha1 its git blob id: sha1 over
    "blob <size>\\0" and the bytes (Pro Git, 10.2 Git Objects), what a Hugging Face listing gives a file
    kept in git rather than Git LFS."""
    if algorithm == "git_sha1":
        digest = hashlib.sha1()  # nosec B324: git's object id, compared with the repository's, not a secret
        digest.update(b"blob %d\0" % os.path.getsize(path))
    else:
        digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(8 * 1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()
