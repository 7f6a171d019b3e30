#!/usr/bin/python
"""Ansible module: what the driver stage installs on this host, for which kernels, and whether Secure Boot lets it."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_plan
short_description: Plan the NVIDIA driver packages, the kernel packages and the Secure Boot check for this host
description:
  - Reads the running kernel's flavour, the installed kernel meta packages (C(dpkg-query)), whether apt has the
    running kernel's headers (or Ubuntu's prebuilt module for it), the kernel GRUB boots next (C(/boot)), the
    kernels with headers (C(/lib/modules/*/build)), Secure Boot (C(mokutil --sb-state), else the SecureBoot EFI
    variable) and whether the DKMS signing key is enrolled (C(mokutil --test-key)); warns when GRUB_DEFAULT is not 0.
  - Decides with plugins/module_utils/driver/plan.py and driver/secure_boot.py. Changes nothing.
options:
  source:
    description: C(nvidia_driver_source).
    type: str
    choices: [cuda_repo, distro]
    required: true
  branch:
    description: The driver branch.
    type: int
    required: true
  prebuilt:
    description: Ubuntu's prebuilt signed modules instead of DKMS (distro source on Ubuntu only).
    type: bool
    default: false
  version:
    description:
      - C(nvidia_driver_package_version). Refused with Ubuntu's prebuilt modules, where the driver follows the branch
        with each kernel.
    type: str
    default: ""
  modprobe:
    description: Install C(nvidia-modprobe) too.
    type: bool
    default: true
  flavour:
    description: The kernel flavour whose meta packages to install; empty reads it from the running kernel.
    type: str
    default: ""
  kernel_packages:
    description: The kernel-side packages to install instead of the planned ones (a kernel the distribution does not package).
    type: list
    elements: str
    default: []
  kernel:
    description: The running kernel release (C(ansible_facts.kernel)).
    type: str
    required: true
  distribution:
    description: C(ansible_facts.distribution).
    type: str
    required: true
  distribution_version:
    description: C(ansible_facts.distribution_version).
    type: str
    required: true
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Plan the driver for this host
  v100.llm.nvidia_driver_plan:
    source: cuda_repo
    branch: 580
    kernel: "{{ ansible_facts['kernel'] }}"
    distribution: "{{ ansible_facts['distribution'] }}"
    distribution_version: "{{ ansible_facts['distribution_version'] }}"
  register: nvidia_driver_plan
"""

RETURN = r"""
packages:
  description: Driver packages the role asks apt for (their closure brings the rest).
  returned: always
  type: list
dkms:
  description: Whether the module is built by DKMS (else Ubuntu's prebuilt packages carry it).
  returned: always
  type: bool
flavour:
  description: Kernel flavour of the meta packages (C(amd64), C(generic-hwe-22.04)); null when unknown.
  returned: always
  type: str
kernel_packages:
  description:
    - Kernel-side packages to install, never held - the flavour's headers meta (DKMS) or prebuilt module meta, and the
      running and boot kernels' own packages where apt has them; where it has neither, the flavour's image meta with
      its headers meta, to be brought to the current kernel (C(kernel_upgrade)), which the reboot lands on.
  returned: always
  type: list
kernel_upgrade:
  description: Whether the kernel packages must be brought to their newest version (state latest), not just present.
  returned: always
  type: bool
running_kernel_supported:
  description: Whether apt has the headers (or prebuilt module) of the running kernel.
  returned: always
  type: bool
boot_kernel:
  description: The kernel GRUB boots next (newest /boot/vmlinuz-*), null without one.
  returned: always
  type: str
module_kernels:
  description:
    - Kernels the module must exist for before a reboot - the boot kernel, and the running one when it can have one
      (DKMS - its headers installed; prebuilt - its module package in apt).
  returned: always
  type: list
secure_boot:
  description:
    - C(enabled) (null when unknown), C(read_from) (C(mokutil) or C(efivars)), C(certificate) (the DKMS signing key),
      C(certificate_exists), C(key_state) (C(enrolled), C(pending), C(blocked), C(not_enrolled), null when not asked) and
      C(refusal) (why the DKMS module would not load, with the enrolment steps; else null). The certificate is
      C(mok_certificate) of /etc/dkms/framework.conf(.d), else the distribution's default.
  returned: always
  type: dict
error:
  description:
    - Why the driver must not be installed on this host (a branch the source does not package, a version kept on
      Ubuntu's prebuilt path, a kernel whose packages apt does not have, Secure Boot without an enrolled key), else
      null.
  returned: always
  type: str
"""

import glob
import os
import re
from typing import List

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.driver.plan import (
    boot_default_kernel,
    driver_packages,
    flavour_error,
    grub_default,
    image_flavours,
    kept_version_error,
    kernel_flavour,
    kernel_packages,
    kernels_needing_module,
    parse_apt_policy,
    per_kernel_package,
    source_error,
    uses_dkms,
)
from ansible_collections.v100.llm.plugins.module_utils.driver.secure_boot import (
    SECURE_BOOT_EFIVAR,
    dkms_certificate,
    efivar_secure_boot,
    mokutil_key_state,
    mokutil_secure_boot,
    secure_boot_refusal,
)

EFIVARS = "/sys/firmware/efi/efivars"


def read_secure_boot(module: AnsibleModule, mokutil: str | None):
    if mokutil:
        _, out, err = module.run_command([mokutil, "--sb-state"], environ_update={"LANG": "C"})
        state = mokutil_secure_boot(out + err)
        if state is not None:
            return state, "mokutil"
    try:
        with open(os.path.join(EFIVARS, SECURE_BOOT_EFIVAR), "rb") as efivar:
            return efivar_secure_boot(efivar.read()), "efivars"
    except OSError:
        # No efivars: legacy BIOS boot, or a container; Secure Boot cannot be on.
        return (False if not os.path.isdir(EFIVARS) else None), "efivars"


def read_files(*patterns: str) -> List[str]:
    """The texts of the files matching each pattern, in order (sorted within a pattern); unreadable ones skipped."""
    texts = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    texts.append(handle.read())
            except OSError:
                pass
    return texts


def apt_has(module: AnsibleModule, names: List[str]) -> List[str]:
    """The names apt has a version of (apt-cache exits 100 when any is missing, and still prints the others)."""
    _, out, _ = module.run_command(["apt-cache", "show", "--no-all-versions"] + names, environ_update={"LANG": "C"})
    return re.findall(r"^Package: (\S+)$", out, re.M)


def apt_policy(module: AnsibleModule, name: str):
    """`apt-cache policy name`, parsed (driver_plan.parse_apt_policy)."""
    _, out, _ = module.run_command(["apt-cache", "policy", name], environ_update={"LANG": "C"})
    return parse_apt_policy(out)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            source=dict(type="str", required=True, choices=["cuda_repo", "distro"]),
            branch=dict(type="int", required=True),
            prebuilt=dict(type="bool", default=False),
            version=dict(type="str", default=""),
            modprobe=dict(type="bool", default=True),
            flavour=dict(type="str", default=""),
            kernel_packages=dict(type="list", elements="str", default=[]),
            kernel=dict(type="str", required=True),
            distribution=dict(type="str", required=True),
            distribution_version=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    branch, kernel, distribution = params["branch"], params["kernel"], params["distribution"]
    dkms = uses_dkms(params["source"], distribution, params["prebuilt"])

    # dpkg-query exits 1 when a pattern matches nothing; its output is still right.
    _, out, _ = module.run_command(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev} ${Version}\n",
                                    "linux-image-*"])
    installed = {fields[0]: fields[2] for fields in map(str.split, out.splitlines())
                 if len(fields) == 3 and fields[1][1] == "i"}
    installed_flavours = image_flavours(list(installed))
    flavour = params["flavour"] or kernel_flavour(distribution, params["distribution_version"], kernel,
                                                  installed_flavours)
    boot_kernel = boot_default_kernel(glob.glob("/boot/vmlinuz-*"))
    running_package = per_kernel_package(kernel, dkms, branch)
    candidates = [running_package] + ([per_kernel_package(flavour, dkms, branch), "linux-image-%s" % flavour]
                                      if flavour else [])
    if boot_kernel:
        candidates.append(per_kernel_package(boot_kernel, dkms, branch))
    available = apt_has(module, candidates)
    running_supported = running_package in available
    if params["kernel_packages"]:
        kernel_plan = {"packages": params["kernel_packages"], "upgrade": False, "error": None}
    elif flavour:
        image_meta_version = installed.get("linux-image-%s" % flavour)
        meta_policy = (apt_policy(module, per_kernel_package(flavour, dkms, branch))
                       if image_meta_version and dkms else None)
        kernel_plan = kernel_packages(flavour, kernel, boot_kernel, dkms, branch, available, installed_flavours,
                                      image_meta_version, meta_policy)
    else:
        kernel_plan = {"packages": [], "upgrade": False, "error": flavour_error(distribution, kernel)}

    if dkms:
        ready = [os.path.basename(os.path.dirname(path)) for path in glob.glob("/lib/modules/*/build")
                 if os.path.isdir(path)]
    else:
        ready = [kernel] if running_supported else []
    grub = grub_default(read_files("/etc/default/grub", "/etc/default/grub.d/*.cfg"))
    if grub not in ("0", ""):
        module.warn("GRUB_DEFAULT=%s in /etc/default/grub: the driver stage checks the module for the newest kernel "
                    "in /boot, which GRUB boots with GRUB_DEFAULT=0; make sure the kernel you boot is that one or "
                    "has the module (dkms status)." % grub)

    mokutil = module.get_bin_path("mokutil")
    secure_boot, read_from = read_secure_boot(module, mokutil)
    certificate = dkms_certificate(distribution, read_files("/etc/dkms/framework.conf",
                                                            "/etc/dkms/framework.conf.d/*.conf"))
    certificate_exists = os.path.isfile(certificate)
    key_state = None
    if secure_boot and dkms and certificate_exists and mokutil:
        _, out, err = module.run_command([mokutil, "--test-key", certificate], environ_update={"LANG": "C"})
        key_state = mokutil_key_state(out + err)

    refusal = secure_boot_refusal(secure_boot, dkms, distribution, certificate, certificate_exists, key_state,
                                  bool(mokutil), branch)
    module.exit_json(
        changed=False,
        packages=driver_packages(params["source"], distribution, branch, params["prebuilt"], params["modprobe"]),
        dkms=dkms,
        flavour=flavour,
        kernel_packages=kernel_plan["packages"],
        kernel_upgrade=kernel_plan["upgrade"],
        running_kernel_supported=running_supported,
        boot_kernel=boot_kernel,
        module_kernels=kernels_needing_module(boot_kernel, kernel, ready),
        secure_boot=dict(enabled=secure_boot, read_from=read_from, certificate=certificate,
                         certificate_exists=certificate_exists, key_state=key_state, refusal=refusal),
        error=(source_error(params["source"], distribution, params["distribution_version"], branch)
               or kept_version_error(dkms, params["version"], branch) or kernel_plan["error"] or refusal),
    )


if __name__ == "__main__":
    main()
