#!/usr/bin/python
"""Documentation of the settings_check action (plugins/action/settings_check.py), which runs on the controller."""
from __future__ import annotations

DOCUMENTATION = r"""
module: settings_check
short_description: Check the variables a run sets against their roles' argument_specs, before any change
description:
  - Runs on the controller and reads nothing from the host. For each role in I(roles), every variable of its
    C(meta/argument_specs.yml) that the run sets (inventory, extra vars, facts) is rendered and checked against the
    spec without its defaults, as Ansible checks a role's arguments when the role starts.
  - Fails once with every refusal, each naming the variable. A value that cannot be rendered yet (vaulted without
    the vault's password, or a template naming what a later stage sets) is left to its role, with a warning.
options:
  roles:
    description: The roles whose variables to check.
    type: list
    elements: str
    required: true
  roles_dir:
    description: The folder that holds them.
    type: path
    required: true
author: v100.llm
"""

EXAMPLES = r"""
- name: Check the stages' variables against their roles' argument_specs
  v100.llm.settings_check:
    roles: [nvidia_driver, cuda_toolkit]
    roles_dir: "{{ role_path }}/.."
"""

RETURN = r"""
checked:
  description: The variables checked.
  returned: always
  type: list
  elements: str
unchecked:
  description: The variables that could not be rendered yet, and why.
  returned: always
  type: list
  elements: str
errors:
  description: One refusal per bad value.
  returned: always
  type: list
  elements: str
"""
