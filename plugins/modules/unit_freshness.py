#!/usr/bin/python
"""Ansible module: which systemd units must be started or restarted to run on the files they have now."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: unit_freshness
short_description: Decide from the host which units to start or restart, and whether systemd must reload
description:
  - For each unit, compares when systemd last started it (C(InactiveExitTimestamp), read over D-Bus with
    C(busctl) at microsecond precision; without a system bus, C(InactiveExitTimestampMonotonic) from
    C(systemctl show), converted) with the change time (ctime) of its unit file, its drop-ins and the
    I(inputs) it reads, and returns C(restart) for a running (or still starting) unit that started before one of
    them changed, C(start) for a stopped one that should run, else C(none)
    (plugins/module_utils/service/unit_freshness.py).
  - State-based, so a restart owed by a run that died after writing a file is still done by the next run.
  - Changes nothing.
options:
  units:
    description: The units, each a dict.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Unit name with its suffix (C(llama-server-chat.service)).
        type: str
        required: true
      inputs:
        description: Further files the unit reads when it starts (key, environment file, model, binary).
        type: list
        elements: str
        default: []
      start:
        description: The unit should run; a stopped one is started.
        type: bool
        default: true
      restart:
        description: A running unit whose files changed after it started is restarted.
        type: bool
        default: true
      enable:
        description: The unit should be enabled; echoed back, beside C(enabled), for the caller's enable task.
        type: bool
        default: true
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Compare what each unit started with to its files now
  v100.llm.unit_freshness:
    units:
      - name: llama-server-chat.service
        inputs: [/etc/llama-server/chat.key, /srv/models/chat.gguf]
  register: freshness
"""

RETURN = r"""
units:
  description: >-
    Each unit as given, with action (restart, start or none), reason, stale, future, running, load_state and
    enabled (C(systemctl is-enabled) says C(enabled): nothing to enable).
  returned: always
  type: list
daemon_reload:
  description: systemd has not read the unit files of at least one unit as they are on disk.
  returned: always
  type: bool
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.service.unit_freshness import needs_daemon_reload, unit_action, unit_object_path

SHOWN = ["LoadState", "ActiveState", "NeedDaemonReload", "FragmentPath", "DropInPaths",
         "InactiveExitTimestampMonotonic"]


def _properties(module, name):
    argv = ["systemctl", "show", name] + ["--property=" + key for key in SHOWN]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed: %s" % (name, err.strip()))
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    rc, out, err = module.run_command(
        ["busctl", "get-property", "org.freedesktop.systemd1", unit_object_path(name),
         "org.freedesktop.systemd1.Unit", "InactiveExitTimestamp"])
    if rc == 0 and out.startswith("t "):
        # "t 1764590000123456": systemd's own realtime clock at the start.
        props["started_us"] = int(out.split()[1])
    else:
        # No system bus (a minimal host without dbus): systemctl reaches systemd
        # over its private socket; convert the monotonic start to realtime.
        monotonic = int(props.get("InactiveExitTimestampMonotonic") or 0)
        props["started_us"] = (time.clock_gettime_ns(time.CLOCK_REALTIME) // 1000
                               - (time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000 - monotonic)) if monotonic else 0
    return props


def _changed_at(path):
    try:
        return os.stat(path).st_ctime_ns // 1000
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec={"units": {"type": "list", "elements": "dict", "required": True, "options": {
            "name": {"type": "str", "required": True},
            "inputs": {"type": "list", "elements": "str", "default": []},
            "start": {"type": "bool", "default": True},
            "restart": {"type": "bool", "default": True},
            "enable": {"type": "bool", "default": True},
        }}},
        supports_check_mode=True,
    )
    now_us = time.time_ns() // 1000
    units, reload = [], False
    for unit in module.params["units"]:
        props = _properties(module, unit["name"])
        files = [props.get("FragmentPath", "")] + props.get("DropInPaths", "").split() + unit["inputs"]
        decision = unit_action(props, {path: _changed_at(path) for path in files if path},
                               unit["start"], unit["restart"], now_us)
        reload = reload or needs_daemon_reload(props, os.path.exists("/etc/systemd/system/" + unit["name"]))
        # As systemd_service asks, from the links on disk (systemd's UnitFileState waits for a reload).
        enabled = module.run_command(["systemctl", "is-enabled", unit["name"]])[1].strip() == "enabled"
        units.append(dict(unit, load_state=props.get("LoadState", ""), enabled=enabled, **decision))
    warnings = ["%s: %s changed after now (a clock step?); not counted. Restart it by hand if it must re-read them."
                % (unit["name"], ", ".join(unit["future"])) for unit in units if unit["future"]]
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, units=units, daemon_reload=reload)


if __name__ == "__main__":
    main()
