#!/usr/bin/python
"""Ansible module: wait for a killed run's remote steps, then finish what an interrupted dpkg left."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_guard
short_description: Wait for the previous run's remote steps, then repair an interrupted dpkg
description:
  - Waits until nothing holds the host's run lock (C(/run/lock/v100-llm.lock), taken by each long remote step
    through flock(1), namely cmake and pip) nor dpkg's locks (an apt that a killed controller left
    running), naming the holders, for at most I(wait_seconds); then fails, naming them.
  - Then reads C(dpkg-query) states, C(dpkg --audit) and C(/var/lib/dpkg/updates) and, when dpkg was interrupted,
    runs C(dpkg --configure -a) and reinstalls the packages marked "reinstallation required" from apt's archives
    (plugins/module_utils/host/dpkg_state.py). A package apt has no archive for is refused before anything runs.
  - Afterwards C(dpkg --audit) must be empty.
options:
  wait_seconds:
    description: How long to wait for the locks.
    type: int
    default: 1800
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Wait for a killed run's steps and finish an interrupted dpkg
  v100.llm.host_guard:
"""

RETURN = r"""
waited:
  description: Seconds spent waiting for locks.
  returned: always
  type: int
reasons:
  description: What dpkg had left unfinished.
  returned: always
  type: list
"""

import fcntl
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.host.dpkg_state import parse_status, reinstall_specs, repair_plan
from ansible_collections.v100.llm.plugins.module_utils.host.run_lock import RUN_LOCK, lock_holders

DPKG_LOCKS = ["/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"]
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "LANG": "C"}
CONFFILES = ["--force-confdef", "--force-confold"]


def _try_lock(path, flock):
    """True when the lock is free now (taken and released at once)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return True
    try:
        if flock:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _describe(path):
    try:
        inode = os.stat(path).st_ino
        with open("/proc/locks") as locks:
            pids = lock_holders(locks.read(), [inode])
    except OSError:
        return "an unknown process"
    described = []
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as cmdline:
                described.append("PID %d (%s)" % (pid, cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()))
        except OSError:
            described.append("PID %d" % pid)
    return ", ".join(described) or "an unknown process"


def _wait_for_locks(module, wait_seconds):
    started = time.monotonic()
    locks = [(RUN_LOCK, True)] + [(path, False) for path in DPKG_LOCKS if os.path.exists(path)]
    for path, flock in locks:
        while not _try_lock(path, flock):
            if time.monotonic() - started > wait_seconds:
                module.fail_json(msg=(
                    "%s is held by %s for more than %d s: a step of an earlier run (apt, cmake, pip, a download) is "
                    "still running on this host. Wait for it to end, or stop it, then re-run. Nothing was changed."
                    % (path, _describe(path), wait_seconds)))
            time.sleep(2)
    return int(time.monotonic() - started)


def _dpkg_state(module):
    # binary:Package names Multi-Arch: same packages with their architecture.
    _, status, _ = module.run_command(["dpkg-query", "-W", "-f", "${binary:Package} ${Version} ${db:Status-Abbrev}\n"],
                                      environ_update=APT_ENV)
    _, audit, _ = module.run_command(["dpkg", "--audit"], environ_update=APT_ENV)
    try:
        updates = os.listdir("/var/lib/dpkg/updates")
    except OSError:
        updates = []
    return parse_status(status), audit, updates


def _fetchable(module, spec):
    """apt has an archive of name=version (madison lists package lists only, never dpkg's status)."""
    name, version = spec.split("=", 1)
    _, out, _ = module.run_command(["apt-cache", "madison", name], environ_update=APT_ENV)
    return any(line.split("|")[1].strip() == version for line in out.splitlines() if line.count("|") >= 2)


def main():
    module = AnsibleModule(argument_spec={"wait_seconds": {"type": "int", "default": 1800}},
                           supports_check_mode=True)
    waited = _wait_for_locks(module, module.params["wait_seconds"])
    entries, audit, updates = _dpkg_state(module)
    plan = repair_plan(entries, audit, updates,
                       {spec: _fetchable(module, spec) for spec in reinstall_specs(entries)})
    if plan["error"]:
        module.fail_json(msg=plan["error"], reasons=plan["reasons"], waited=waited)
    if not plan["needed"] or module.check_mode:
        module.exit_json(changed=plan["needed"], reasons=plan["reasons"], waited=waited)
    # As dpkg and apt advise: configure what can be (a package depending on a
    # broken one fails here, exit status 1, and is configured again below),
    # finish removals, reinstall, let apt fix dependencies, configure again.
    dpkg = ["dpkg"] + CONFFILES
    apt = ["apt-get", "-y", "-q"] + [word for option in CONFFILES for word in ("-o", "Dpkg::Options::=" + option)]
    module.run_command(dpkg + ["--configure", "-a"], environ_update=APT_ENV)
    if plan["remove"]:
        module.run_command(dpkg + ["--remove", "--force-remove-reinstreq"] + plan["remove"], environ_update=APT_ENV)
    if plan["reinstall"]:
        module.run_command(apt + ["install", "--reinstall", "--allow-change-held-packages"] + plan["reinstall"],
                           environ_update=APT_ENV)
    module.run_command(apt + ["-f", "install"], environ_update=APT_ENV)
    module.run_command(dpkg + ["--configure", "-a"], environ_update=APT_ENV)
    _, audit, _ = module.run_command(["dpkg", "--audit"], environ_update=APT_ENV)
    if audit.strip():
        module.fail_json(msg="dpkg --configure -a, the reinstallation and apt-get -f install left dpkg --audit "
                             "reporting:\n" + audit, reasons=plan["reasons"], waited=waited)
    module.exit_json(changed=True, reasons=plan["reasons"], waited=waited)


if __name__ == "__main__":
    main()
