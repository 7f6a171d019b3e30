#!/usr/bin/python
"""Ansible module: what an exported llama.cpp archive holds (its sha256, folder and build stamp)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_cpp_artifact_info
short_description: Read an exported llama.cpp install archive, its sha256 and its build stamp
author:
  - V100 LLM host toolkit
description:
  - Reads I(path), an archive the module M(llama_cpp_artifact) wrote, as the llama_cpp role does on the controller
    before it installs one (C(llama_cpp_artifact_file)).
  - Returns its sha256, its single top-level folder and the build stamp inside it, or why it cannot be installed
    (not one folder, a link or device member, a path leaving the folder or not in normal form, a member named
    twice, a file writable by group or others, no stamp or no C(bin/llama-server)).
  - Changes nothing.
options:
  path:
    description: The archive (C(<version>-<stamp hash>.tar.gz)).
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Read the exported build
  v100.llm.llama_cpp_artifact_info:
    path: /srv/artifacts/b0c1e570-3f2a9c1d0e.tar.gz
  delegate_to: localhost
  register: artifact
"""

RETURN = r"""
exists:
  description: Whether I(path) is a file.
  returned: always
  type: bool
sha256:
  description: The archive's sha256 ("" when it does not exist).
  returned: always
  type: str
folder:
  description: Its top-level folder, the install folder's name C(<version>-<stamp hash>).
  returned: always
  type: str
stamp:
  description: The build stamp the install was made with (build-stamp.json).
  returned: always
  type: dict
built_on:
  description: The distribution release that built it, C({"id", "version_id"}) from its C(/etc/os-release).
  returned: always
  type: dict
error:
  description: Why it cannot be installed; empty when it can.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.llama.artifact import read_archive


def main():
    module = AnsibleModule(argument_spec={"path": {"type": "path", "required": True}}, supports_check_mode=True)
    path = module.params["path"]
    if not os.path.isfile(path):
        module.exit_json(changed=False, exists=False, sha256="", folder="", stamp={}, built_on={}, error="")
    module.exit_json(changed=False, exists=True, **read_archive(path))


if __name__ == "__main__":
    main()
