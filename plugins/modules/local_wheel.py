#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Write a pure-Python wheel built from source text (see module_utils/vllm/local_wheel.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: local_wheel
short_description: Write a pure-Python wheel made from source text, the same bytes on every run
description:
  - Builds C(<name>-<version>-py3-none-any.whl) from O(files) (paths inside the wheel to their text) with
    METADATA, WHEEL and RECORD, fixed dates and order, and writes it into O(dest_dir). Reports a change only when
    the file on the host differs. No build backend is needed.
  - The vllm role uses it for its C(pyairports) package (see roles/vllm/README.md).
options:
  name:
    description: Distribution name.
    type: str
    required: true
  version:
    description: Version (a local label such as C(0.0.1+v100llm.1) marks it as ours).
    type: str
    required: true
  files:
    description: Paths inside the wheel (e.g. C(pyairports/airports.py)) to their text.
    type: dict
    required: true
  requires:
    description: C(Requires-Dist) lines.
    type: list
    elements: str
    default: []
  summary:
    description: One-line summary.
    type: str
    default: ""
  dest_dir:
    description: Existing folder the wheel is written into.
    type: path
    required: true
  mode:
    description: File mode of the wheel.
    type: str
    default: "0644"
attributes:
  check_mode:
    support: full
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Build the pyairports package
  v100.llm.local_wheel:
    name: pyairports
    version: 0.0.1+v100llm.1
    files:
      pyairports/__init__.py: ""
      pyairports/airports.py: "{{ lookup('ansible.builtin.file', 'pyairports/airports.py') }}"
    requires: [airportsdata]
    dest_dir: /opt/vllm/wheels
"""

RETURN = r"""
path:
  description: The wheel's path.
  returned: success
  type: str
sha256:
  description: The wheel's sha256.
  returned: success
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.vllm.local_wheel import files_from_dict, sha256_hex, wheel_bytes, wheel_filename


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            version=dict(type="str", required=True),
            files=dict(type="dict", required=True),
            requires=dict(type="list", elements="str", default=[]),
            summary=dict(type="str", default=""),
            dest_dir=dict(type="path", required=True),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        path = os.path.join(params["dest_dir"], wheel_filename(params["name"], params["version"]))
        data = wheel_bytes(params["name"], params["version"], files_from_dict(params["files"]),
                           params["requires"], params["summary"])
    except ValueError as error:
        module.fail_json(msg=str(error))
    digest = sha256_hex(data)
    current = None
    if os.path.exists(path):
        with open(path, "rb") as handle:
            current = sha256_hex(handle.read())
    changed = current != digest
    if changed and not module.check_mode:
        if not os.path.isdir(params["dest_dir"]):
            module.fail_json(msg="dest_dir %s does not exist" % params["dest_dir"])
        temporary = path + ".tmp"
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    # The mode of a file that is there (in check mode: only if it stays).
    if os.path.exists(path) and not (module.check_mode and changed):
        changed = module.set_fs_attributes_if_different(
            module.load_file_common_arguments(dict(path=path, mode=params["mode"])), changed)
    module.exit_json(changed=changed, path=path, sha256=digest)


if __name__ == "__main__":
    main()
