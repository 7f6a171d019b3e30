#!/usr/bin/python
"""Ansible module: a checked llama.cpp install folder as a reproducible archive."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_cpp_artifact
short_description: Write a llama.cpp install folder as a reproducible .tar.gz
author:
  - V100 LLM host toolkit
description:
  - Writes I(install_dir) (a folder the llama_cpp role built and stamped) to I(path) as a .tar.gz whose only
    top-level folder is the install folder's name. Members are in name order and owned by root, then
    C(built-on.json) (the distribution release, from C(/etc/os-release)), and gzip stores no name or time, so the
    same install gives the same bytes.
  - Fails, writing nothing, when the folder holds anything but plain files and folders, or a file writable by
    group or others (the installing host would refuse it).
  - Nothing is written when I(path) is newer than the install's C(build-stamp.json) (the role writes the stamp
    last, with every new install). The archive is written to C(<path>.partial), flushed to disk and renamed.
  - Other C(.tar.gz) and C(.partial) files in I(path)'s folder are removed; the folder holds the current export.
options:
  install_dir:
    description: The install folder, C(<prefix>/<version>-<stamp hash>), with its C(build-stamp.json).
    type: path
    required: true
  path:
    description: The archive to write, in a folder of its own.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Export the current build
  v100.llm.llama_cpp_artifact:
    install_dir: /opt/llama.cpp/b0c1e570-3f2a9c1d0e
    path: /var/cache/llama.cpp/artifacts/b0c1e570-3f2a9c1d0e.tar.gz
"""

RETURN = r"""
sha256:
  description: The archive's sha256 (also in check mode, of the archive there; "" when none is).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.llama.artifact import STAMP_FILE, is_current, leftovers, os_release, write_archive
from ansible_collections.v100.llm.plugins.module_utils.models.sources import file_digest


def main():
    module = AnsibleModule(argument_spec={"install_dir": {"type": "path", "required": True},
                                          "path": {"type": "path", "required": True}},
                           supports_check_mode=True)
    install_dir, path = module.params["install_dir"], module.params["path"]
    if not os.path.isfile(os.path.join(install_dir, STAMP_FILE)):
        module.fail_json(msg="%s has no %s: only a complete install is exported" % (install_dir, STAMP_FILE))
    stale, current = leftovers(path), is_current(install_dir, path)
    if not module.check_mode:
        for leftover in stale:
            os.remove(leftover)
        if not current:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            with open("/etc/os-release", encoding="utf-8") as release:
                errors = write_archive(install_dir, path, os_release(release.read()))
            if errors:
                module.fail_json(msg="%s cannot be exported: %s" % (install_dir, "; ".join(errors)))
    module.exit_json(changed=bool(stale) or not current, sha256=file_digest(path) if os.path.isfile(path) else "")


if __name__ == "__main__":
    main()
