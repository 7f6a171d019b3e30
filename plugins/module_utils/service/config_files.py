"""What a role's small files and folders need: pure decisions for the config_files module.

A file or folder is only touched where it differs from what is wanted, so an
unchanged file keeps its mtime and ctime: unit_freshness (restarts) and the
nouveau role (initramfs rebuilds) decide from them.
"""
from __future__ import annotations

import os
import re
import stat

STATES = ("file", "directory")
MODE_PATTERN = re.compile(r"^0?[0-7]{3}$")


def entry_errors(entry: dict) -> list:
    """Why an entry cannot be applied, one sentence each; empty when it can."""
    path = entry.get("path") or ""
    errors = []
    if not path.startswith("/") or os.path.normpath(path) != path or path == "/":
        errors.append("path=%r: give an absolute, normalised path below /" % path)
    state = entry.get("state", "file")
    if state not in STATES:
        errors.append("%s: state=%r: use file or directory" % (path, state))
    mode = str(entry.get("mode", ""))
    if not MODE_PATTERN.match(mode):
        errors.append("%s: mode=%r: give an octal string such as '0644' (symbolic modes are not taken)" % (path, mode))
    if state == "file" and not isinstance(entry.get("content"), str):
        if entry.get("template") or entry.get("src"):
            errors.append("%s: template and src are read on the controller by the config_files action plugin, "
                          "which did not run: call the module by its full name, v100.llm.config_files" % path)
        else:
            errors.append("%s: a file needs its content" % path)
    if state == "directory" and entry.get("content") is not None:
        errors.append("%s: a directory has no content" % path)
    return errors


def found_kind(mode: int) -> str:
    """What lstat found: file, directory, link or other."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def actions(wanted: dict, found: dict | None) -> list:
    """What to do so the path is as wanted.

    wanted: state, mode (int), uid, gid (None when the owner or group does not
    exist yet, in check mode), content (bytes) for a file.
    found: None when nothing is there, else kind, mode (permission bits), uid,
    gid and, for a regular file, content (bytes).
    Returns a list of create, write, chown, chmod; raises ValueError where the
    path holds something this must not replace (a folder where a file goes,
    anything but a folder where a folder goes).
    """
    if found is None:
        return ["create"]
    if wanted["state"] == "directory":
        if found["kind"] != "directory":
            raise ValueError("a %s is where a directory should be; remove it first" % found["kind"])
        steps = []
    else:
        if found["kind"] == "directory":
            raise ValueError("a directory is where a file should be; remove it first")
        if found["kind"] != "file":
            # As template and copy (follow: false): the link or node is replaced by the file.
            return ["create"]
        steps = ["write"] if found["content"] != wanted["content"] else []
        if steps:
            # The new file is written whole with its owner and mode, then renamed over the old one.
            return steps
    if (wanted["uid"], wanted["gid"]) != (found["uid"], found["gid"]):
        steps.append("chown")
    if wanted["mode"] != found["mode"]:
        steps.append("chmod")
    return steps


def per_item(items: list, path: str, template: str, mode: str, owner: str = "root", group: str = "root") -> list:
    """config_files entries, one file per item from one template that sees it as ``item``.

    path is a %-format over the item's keys ('/etc/systemd/system/%(unit)s.service').
    """
    return [{"path": path % item, "template": template, "vars": {"item": item}, "mode": mode, "owner": owner,
             "group": group} for item in items]
