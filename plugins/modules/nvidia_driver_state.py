#!/usr/bin/python
"""Ansible module: read which NVIDIA driver branch is installed, would be installed, and was built."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_state
short_description: Read the NVIDIA driver branch that dpkg, apt and DKMS really deal with
description:
  - Package names do not tell the branch (Ubuntu's C(-535-server) packages became transitional
    packages that pull 580; NVIDIA's Debian repo names carry no branch), so this reads versions.
  - Runs C(dpkg-query) for the installed driver packages, C(apt-get -s install) for what installing
    I(packages) would bring, and C(dkms status). Changes nothing.
options:
  branch:
    description: The requested driver branch.
    type: int
    required: true
  packages:
    description:
      - Packages the role is about to install (C(name) or C(name=version)); their installation is simulated,
        together with the removal of installed packages of another branch (held or not), as the role does it.
        Like M(ansible.builtin.apt), it leaves out a name installed (at that version, where one is given).
    type: list
    elements: str
    default: []
  keep:
    description:
      - Packages of the new driver set (from M(nvidia_driver_closure)). Installed under another branch's
        version they are upgraded in place, not removed (NVIDIA's Debian names carry no branch).
    type: list
    elements: str
    default: []
  anchor:
    description:
      - The version the new set is built around. Installed driver packages of the same branch outside the set
        at another upstream version (Debian's nvidia-tesla-535-* beside nvidia-graphics-drivers) are removed too.
    type: str
    default: ""
  preferences:
    description:
      - The apt preferences the role is about to write to I(preferences_file); the simulation reads them in its
        place (with the other files of C(/etc/apt/preferences.d)), so that it runs before the file is written.
    type: str
    default: ""
  preferences_file:
    description: The file of C(/etc/apt/preferences.d) that I(preferences) replaces in the simulation.
    type: str
    default: ""
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Read the driver state
  v100.llm.nvidia_driver_state:
    branch: 550
    packages: [cuda-drivers-550]
  register: nvidia_driver_state
"""

RETURN = r"""
installed:
  description:
    - Installed driver packages as C(name version), the ones the role may hold and releases when it holds
      nothing (not C(nvidia-modprobe), not Ubuntu's C(linux-modules-nvidia-*), which follow the kernel).
  returned: always
  type: list
to_hold:
  description:
    - Of C(installed), the driver-versioned packages the role holds beside its set (not Debian's C(nvidia-cuda-*)
      toolkit packages, versioned 12.x).
  returned: always
  type: list
other_branch:
  description:
    - Installed packages to remove before the install, held or not. Those of another branch, but for I(keep), and
      those of the branch outside I(keep) at another upstream version than I(anchor).
  returned: always
  type: list
simulated_installs:
  description: Packages an install of I(packages) would install, upgrade or downgrade, as C(name version).
  returned: always
  type: list
simulated_foreign_branch:
  description: Packages an install of I(packages) would bring from another branch, as C(name version).
  returned: always
  type: list
simulated_open_flavor:
  description: Open-kernel-module packages an install of I(packages) would bring.
  returned: always
  type: list
simulation_error:
  description: apt's complaint when the simulation failed (e.g. a package it cannot find), else null.
  returned: always
  type: str
dkms:
  description: C(dkms status) entries (module, version, kernel, arch, state; kernel and arch null for an added module).
  returned: always
  type: list
dkms_kernels:
  description: Kernels for which DKMS built and installed an NVIDIA module of the branch.
  returned: always
  type: list
dkms_registered:
  description: Whether DKMS's tree has an NVIDIA module of the branch at all (added, built or installed).
  returned: always
  type: bool
"""

import glob
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.driver.packages import (
    DPKG_QUERY_FORMAT,
    dkms_kernels,
    dkms_registered,
    foreign_branch_installs,
    open_flavor_installs,
    other_branch_packages,
    packages_to_hold,
    parse_apt_simulation,
    role_packages,
    parse_dkms_status,
    still_to_install,
    parse_dpkg_query,
    stale_packages,
)

DRIVER_PACKAGE_PATTERNS = ["nvidia-*", "libnvidia-*", "cuda-drivers*", "xserver-xorg-video-nvidia*",
                           "linux-modules-nvidia-*"]


PREFERENCES_PARTS = "/etc/apt/preferences.d"


def preferences_parts(text: str, replaced: str) -> str:
    """A folder with the host's preferences files, `replaced` holding `text` (written there or not yet)."""
    folder = tempfile.mkdtemp(prefix="nvidia-driver-state-")
    for path in glob.glob(os.path.join(PREFERENCES_PARTS, "*")):
        if os.path.isfile(path) and os.path.basename(path) != os.path.basename(replaced):
            os.symlink(path, os.path.join(folder, os.path.basename(path)))
    with open(os.path.join(folder, os.path.basename(replaced)), "w", encoding="utf-8") as handle:
        handle.write(text)
    return folder


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            branch=dict(type="int", required=True),
            packages=dict(type="list", elements="str", default=[]),
            keep=dict(type="list", elements="str", default=[]),
            anchor=dict(type="str", default=""),
            preferences=dict(type="str", default=""),
            preferences_file=dict(type="str", default=""),
        ),
        required_together=[("preferences", "preferences_file")],
        supports_check_mode=True,
    )
    branch = module.params["branch"]
    # dpkg-query exits 1 when a pattern matches nothing; its output is still right.
    _, out, _ = module.run_command(
        ["dpkg-query", "-W", "-f", DPKG_QUERY_FORMAT] + DRIVER_PACKAGE_PATTERNS)
    installed = parse_dpkg_query(out)

    keep = module.params["keep"]
    other_branch = sorted(set(name for name in other_branch_packages(installed, branch) if name not in keep)
                          | set(stale_packages(installed, branch, keep, module.params["anchor"])))
    simulated, simulation_error = [], None
    # What the install task will really ask apt for: ansible.builtin.apt leaves out what is installed as asked.
    names = [entry.partition("=")[0] for entry in module.params["packages"]]
    _, out, _ = module.run_command(["dpkg-query", "-W", "-f", DPKG_QUERY_FORMAT] + names) if names else (0, "", "")
    to_install = still_to_install(module.params["packages"], parse_dpkg_query(out))
    if to_install or other_branch:
        # As the role will do it: the other branch's (held) packages go, ours come, under the pins it writes.
        removals = [name + "-" for name in other_branch]
        parts = (preferences_parts(module.params["preferences"], module.params["preferences_file"])
                 if module.params["preferences_file"] else None)
        try:
            rc, out, err = module.run_command(
                # Without recommends, as the role installs them.
                ["apt-get", "-s", "-q", "-o", "APT::Install-Recommends=false", "--allow-change-held-packages"]
                + (["-o", "Dir::Etc::PreferencesParts=" + parts] if parts else [])
                + ["install"] + to_install + removals,
                environ_update={"LANG": "C"})
        finally:
            if parts:
                shutil.rmtree(parts, ignore_errors=True)
        if rc == 0:
            simulated = parse_apt_simulation(out)
        else:
            simulation_error = (err or out).strip()

    dkms = []
    dkms_path = module.get_bin_path("dkms")
    if dkms_path:
        _, out, _ = module.run_command([dkms_path, "status"])
        dkms = parse_dkms_status(out)

    module.exit_json(
        changed=False,
        installed=role_packages(installed),
        to_hold=packages_to_hold(installed),
        other_branch=other_branch,
        simulated_installs=["%s %s" % item for item in simulated],
        simulated_foreign_branch=foreign_branch_installs(simulated, branch),
        simulated_open_flavor=open_flavor_installs(simulated),
        simulation_error=simulation_error,
        dkms=dkms,
        dkms_kernels=dkms_kernels(dkms, branch),
        dkms_registered=dkms_registered(dkms, branch),
    )


if __name__ == "__main__":
    main()
