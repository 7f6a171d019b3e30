#!/usr/bin/python
"""Ansible module: a role's small files and folders, as wanted, in one call."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: config_files
short_description: Write a role's small files and folders in one call, touching only what differs
description:
  - Makes each folder and writes each file as given, in order, with its owner, group and mode. A file whose
    content differs is written whole beside the old one (owner and mode set, flushed) and renamed over it, so a
    reader never sees half a file. An unchanged file or folder is not touched, so its mtime and ctime stay
    (plugins/module_utils/service/config_files.py).
  - Every entry is checked first (absolute path, octal mode, known owner and group, nothing in the way) and
    nothing is changed when one is refused.
  - The action plugin of the same name renders C(template) entries from the role's templates/ and reads
    C(src) entries from its files/ on the controller, so a role's files cost one module run, not two per file
    as M(ansible.builtin.template) does.
  - Supports check mode and diff mode. Put C(no_log) on a task whose content is secret.
options:
  files:
    description: The folders and files, in the order they are made.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path.
        type: str
        required: true
      state:
        description: >-
          C(file) or C(directory). A missing folder's missing parents are made C(0755), root's, whatever the
          umask. A link to a folder stands for the folder, as with M(ansible.builtin.file).
        type: str
        choices: [file, directory]
        default: file
      content:
        description: The file's text (UTF-8). The action plugin fills it from C(template) or C(src).
        type: str
      template:
        description: A template in the role's templates/, rendered on the controller as M(ansible.builtin.template) does.
        type: str
      vars:
        description: Variables for the template only (for example C(item)).
        type: dict
      src:
        description: A file in the role's files/, copied as it is.
        type: str
      owner:
        description: Owner's user name.
        type: str
        default: root
      group:
        description: Group name.
        type: str
        default: root
      mode:
        description: Octal permission bits as a string (C("0644")).
        type: str
        required: true
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Write the units
  v100.llm.config_files:
    files:
      - path: /etc/systemd/system/llama-server-chat.service.d
        state: directory
        mode: "0755"
      - path: /etc/systemd/system/llama-server-chat.service
        template: llama-server.service.j2
        vars:
          item: "{{ instance }}"
        mode: "0644"
"""

RETURN = r"""
files:
  description: >-
    Each entry's path and what was (or in check mode would be) done to it (create, write, chown, chmod; clean:
    temporary copies a killed run left beside the file were removed).
  returned: always
  type: list
  sample: [{"path": "/etc/modprobe.d/blacklist-nouveau.conf", "actions": []}]
"""

import grp
import os
import pwd
import re
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.service.config_files import actions, entry_errors, found_kind

# tempfile.mkstemp's random part: eight letters, digits or underscores.
TEMPORARY_SUFFIX = r"[a-z0-9_]{8}"


def look(path: str, state: str) -> dict | None:
    """What is at path now (lstat; a regular file's bytes too). A link to a folder counts as the folder where a
    folder is wanted, as with the file module (an admin's link to a secrets volume)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if state == "directory" and stat.S_ISLNK(info.st_mode) and os.path.isdir(path):
        info = os.stat(path)
    kind = found_kind(info.st_mode)
    found = {"kind": kind, "mode": stat.S_IMODE(info.st_mode), "uid": info.st_uid, "gid": info.st_gid}
    if kind == "file":
        with open(path, "rb") as handle:
            found["content"] = handle.read()
    return found


def wanted_of(entry: dict, check_mode: bool) -> tuple:
    """The entry with numeric owner, group and mode; an error string instead where a name is unknown."""
    ids = {}
    for key, lookup, field in (("owner", pwd.getpwnam, "pw_uid"), ("group", grp.getgrnam, "gr_gid")):
        try:
            ids[key] = getattr(lookup(entry[key]), field)
        except KeyError:
            if not check_mode:
                return None, "%s: %s %r does not exist on this host" % (entry["path"], key, entry[key])
            ids[key] = None  # made by an earlier task that check mode did not run
    wanted = {"state": entry["state"], "mode": int(entry["mode"], 8), "uid": ids["owner"], "gid": ids["group"]}
    if entry["state"] == "file":
        wanted["content"] = entry["content"].encode("utf-8")
    return wanted, None


def leftovers(path: str) -> list:
    """Temporary copies write_file left beside path when its run was killed before the rename."""
    folder, name = os.path.split(path)
    pattern = re.compile(re.escape(".%s." % name) + TEMPORARY_SUFFIX)
    try:
        return sorted(os.path.join(folder, entry) for entry in os.listdir(folder) if pattern.fullmatch(entry))
    except (FileNotFoundError, NotADirectoryError):
        return []


def write_file(path: str, wanted: dict) -> None:
    """The whole file beside the old one, flushed, then renamed over it."""
    folder, name = os.path.split(path)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".%s." % name)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(wanted["content"])
            os.fchown(out.fileno(), wanted["uid"], wanted["gid"])
            os.fchmod(out.fileno(), wanted["mode"])
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise


def make_parents(folder: str) -> None:
    """Missing folders above a new one: root's, 0755 whatever the umask (a 0750 /usr/local/libexec would keep
    the service users from their health script)."""
    if os.path.isdir(folder):
        return
    make_parents(os.path.dirname(folder))
    os.mkdir(folder)
    os.chown(folder, 0, 0)
    os.chmod(folder, 0o755)


def apply(path: str, wanted: dict, steps: list) -> None:
    """Carry out the steps actions() chose."""
    if wanted["state"] == "directory":
        if "create" in steps:
            make_parents(os.path.dirname(path))
            os.mkdir(path, wanted["mode"])
            steps = ["chown", "chmod"]  # mkdir's mode passes through the umask
        if "chown" in steps:
            os.chown(path, wanted["uid"], wanted["gid"])
        if "chmod" in steps:
            os.chmod(path, wanted["mode"])
        return
    if "clean" in steps:
        for temporary in leftovers(path):
            os.unlink(temporary)
    if "create" in steps or "write" in steps:
        write_file(path, wanted)
        return
    if "chown" in steps:
        os.lchown(path, wanted["uid"], wanted["gid"])
    if "chmod" in steps:
        os.chmod(path, wanted["mode"])


def diff_of(entry: dict, found: dict | None, steps: list) -> dict:
    """A before/after for --diff: the text where it changes, the owner and mode in the headers."""
    def header(state: dict | None) -> str:
        if state is None:
            return "%s (absent)" % entry["path"]
        return "%s (%s %s %04o)" % (entry["path"], state.get("owner", "?"), state.get("group", "?"), state["mode"])

    before_state = None
    if found is not None:
        before_state = dict(found, owner=_name(pwd.getpwuid, found["uid"]), group=_name(grp.getgrgid, found["gid"]))
    after_state = {"owner": entry["owner"], "group": entry["group"], "mode": int(entry["mode"], 8)}
    diff = {"before_header": header(before_state), "after_header": header(after_state)}
    if entry["state"] == "file" and ("create" in steps or "write" in steps):
        diff["before"] = (found or {}).get("content", b"").decode("utf-8", "replace")
        diff["after"] = entry["content"]
    else:
        # Only the folder or the attributes change: show them as the text that differs.
        diff["before"] = "" if before_state is None else header(before_state) + "\n"
        diff["after"] = header(after_state) + "\n"
    return diff


def _name(lookup, number: int) -> str:
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def main() -> None:
    module = AnsibleModule(
        argument_spec={"files": {"type": "list", "elements": "dict", "required": True, "options": {
            "path": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["file", "directory"], "default": "file"},
            "content": {"type": "str"},
            "template": {"type": "str"},
            "vars": {"type": "dict"},
            "src": {"type": "str"},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
            "mode": {"type": "str", "required": True},
        }}},
        supports_check_mode=True,
    )
    entries = module.params["files"]
    errors = [error for entry in entries for error in entry_errors(entry)]
    if errors:
        module.fail_json(msg="Nothing was changed: " + "; ".join(errors))

    # Every entry is decided before the first change, so a refused one leaves the host as it was.
    plans = []
    for entry in entries:
        wanted, error = wanted_of(entry, module.check_mode)
        if error:
            errors.append(error)
            continue
        try:
            found = look(entry["path"], entry["state"])
            steps = actions(wanted, found)
        except ValueError as refused:
            errors.append("%s: %s" % (entry["path"], refused))
            continue
        except OSError as unreadable:
            errors.append("%s: cannot be read (%s)" % (entry["path"], unreadable.strerror or unreadable))
            continue
        if entry["state"] == "file" and leftovers(entry["path"]):
            steps = steps + ["clean"]
        plans.append((entry, wanted, found, steps))
    if errors:
        module.fail_json(msg="Nothing was changed: " + "; ".join(errors))

    report, diffs = [], []
    for entry, wanted, found, steps in plans:
        report.append({"path": entry["path"], "actions": steps})
        if not steps:
            continue
        diffs.append(diff_of(entry, found, steps))
        if not module.check_mode:
            apply(entry["path"], wanted, steps)
    result = {"changed": any(item["actions"] for item in report), "files": report}
    if module._diff:  # pylint: disable=protected-access (AnsibleModule's public diff flag)
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
