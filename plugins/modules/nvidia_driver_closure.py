#!/usr/bin/python
"""Ansible module: the exact set of driver packages (name and version) one driver version brings."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_closure
short_description: Choose every binary package, with its exact version, that one NVIDIA driver version brings
description:
  - Walks the Depends and Pre-Depends of I(packages) through C(apt-cache show) (every version apt knows)
    and C(apt-cache showpkg) (providers of virtual names), and returns the driver-versioned packages of
    I(branch) that one driver version needs, each at one exact version, so that the role can pin, install,
    hold and verify all of them (plugins/module_utils/driver_closure.py).
  - Independent of apt's pins, so the answer depends only on the host's package lists and dpkg's records.
    Changes nothing.
options:
  branch:
    description: The driver branch.
    type: int
    required: true
  packages:
    description: The packages the role installs; the first one anchors the driver version.
    type: list
    elements: str
    required: true
  version:
    description:
      - An upstream driver version of the branch (C(535.261.03)). Empty chooses the installed version when it
        is in the branch, else the newest one apt knows.
    type: str
    default: ""
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Choose the packages of the driver
  nvidia_driver_closure:
    branch: 580
    packages: [cuda-drivers-580]
  register: nvidia_driver_closure
"""

RETURN = r"""
anchor:
  description: The chosen version of the first package (null when none could be chosen).
  returned: always
  type: str
packages:
  description: The closure, each with C(name) and C(version), sorted by name.
  returned: always
  type: list
pins:
  description: The same, grouped by version for apt preferences, each with C(version) and C(names).
  returned: always
  type: list
error:
  description: Why no consistent set could be chosen, else null.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.driver_closure import collect_closure
from ansible.module_utils.driver_packages import DPKG_QUERY_FORMAT, parse_dpkg_query


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            branch=dict(type="int", required=True),
            packages=dict(type="list", elements="str", required=True),
            version=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )

    def run(argv):
        # apt-cache skips names it does not know (and may exit non-zero for them); the output is what counts.
        return module.run_command(argv, environ_update={"LANG": "C"})[1]

    installed = dict(parse_dpkg_query(run(["dpkg-query", "-W", "-f", DPKG_QUERY_FORMAT])))
    result = collect_closure(run, module.params["packages"], module.params["branch"], module.params["version"],
                             installed)
    module.exit_json(changed=False, anchor=result.get("anchor"), packages=result.get("packages", []),
                     pins=result["pins"], error=result.get("error"))


if __name__ == "__main__":
    main()
