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
    hold and verify all of them (plugins/module_utils/driver/closure.py).
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
  exclude_label:
    description:
      - Leave out the package lists of repositories with this Release C(Label) (C(NVIDIA CUDA) for the distribution's
        driver), so that a repository carrying the same names and versions cannot lend its records to the set; apt
        keeps both records when their contents differ, and the role's pin by origin installs only the other one.
    type: str
    default: ""
  prefer_label:
    description:
      - Read the records of every name that the package lists of repositories with this Release C(Label) carry from
        those lists only (C(NVIDIA CUDA) for NVIDIA's driver), and the other names (C(dkms), C(libc6)) from every list,
        so that a distribution source carrying a driver name at the same version cannot lend its record to the set.
      - Not with I(exclude_label).
    type: str
    default: ""
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Choose the packages of the driver
  v100.llm.nvidia_driver_closure:
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
unknown:
  description:
    - The packages asked for, when apt has no record of any of them (its lists lack the repository, as in check
      mode before the repository was really added); else empty.
  returned: always
  type: list
error:
  description: Why no consistent set could be chosen, else null.
  returned: always
  type: str
"""

import glob
import os
import shutil
import tempfile
from typing import List, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.driver.closure import collect_closure, preferring
from ansible_collections.v100.llm.plugins.module_utils.driver.packages import DPKG_QUERY_FORMAT, parse_dpkg_query


LISTS = "/var/lib/apt/lists"


def lists_folder(module: AnsibleModule, keep_label) -> Optional[str]:
    """A folder of links to apt's lists, less the package lists whose Release label `keep_label(label)` rejects;
    None when it rejects none."""
    _, out, _ = module.run_command(["apt-get", "indextargets", "--format", "$(FILENAME)\t$(LABEL)",
                                    "Created-By: Packages"], environ_update={"LANG": "C"})
    targets = [line.split("\t", 1) for line in out.splitlines() if "\t" in line]
    left_out = {path for path, target_label in targets if not keep_label(target_label)}
    if not left_out:
        return None
    folder = tempfile.mkdtemp(prefix="nvidia-driver-closure-")
    os.mkdir(os.path.join(folder, "partial"))
    for path in glob.glob(os.path.join(LISTS, "*")):
        # A list may be stored compressed (Packages.lz4): match on the name apt reports.
        if os.path.isfile(path) and not any(path.startswith(excluded) for excluded in left_out):
            os.symlink(path, os.path.join(folder, os.path.basename(path)))
    return folder


def apt_cache(module: AnsibleModule, lists: Optional[str], with_dpkg_status: bool = True):
    """`run(argv) -> stdout`, with apt-cache reading only the lists in `lists` (and dpkg's status unless told not
    to) when given."""
    # An in-memory cache of those lists only, nothing written.
    restrict = (["-o", "Dir::State::Lists=" + lists, "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache="]
                if lists else [])
    restrict += [] if with_dpkg_status else ["-o", "Dir::State::status=/dev/null"]

    def run(argv: List[str]) -> str:
        # apt-cache skips names it does not know (and may exit non-zero for them); the output is what counts.
        if argv[0] == "apt-cache":
            argv = argv[:1] + restrict + argv[1:]
        return module.run_command(argv, environ_update={"LANG": "C"})[1]
    return run


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            branch=dict(type="int", required=True),
            packages=dict(type="list", elements="str", required=True),
            version=dict(type="str", default=""),
            exclude_label=dict(type="str", default=""),
            prefer_label=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    label, prefer = module.params["exclude_label"], module.params["prefer_label"]
    if label and prefer:
        module.fail_json(msg="exclude_label=%s and prefer_label=%s: give one of them" % (label, prefer))
    # exclude_label: the lists without that label's; prefer_label: that label's lists, read first.
    lists = (lists_folder(module, lambda target: target != label) if label else
             lists_folder(module, lambda target: target == prefer) if prefer else None)
    try:
        run = apt_cache(module, lists)
        if prefer and lists:
            # Names the repository's lists carry come from those lists alone (dpkg's status left out, so an
            # installed record of another origin cannot stand in); the other names from every list.
            run = preferring(apt_cache(module, lists, with_dpkg_status=False), apt_cache(module, None))
        installed = dict(parse_dpkg_query(run(["dpkg-query", "-W", "-f", DPKG_QUERY_FORMAT])))
        result = collect_closure(run, module.params["packages"], module.params["branch"], module.params["version"],
                                 installed)
    finally:
        if lists:
            shutil.rmtree(lists, ignore_errors=True)
    module.exit_json(changed=False, anchor=result.get("anchor"), packages=result.get("packages", []),
                     pins=result["pins"], unknown=result["unknown"], error=result.get("error"))


if __name__ == "__main__":
    main()
