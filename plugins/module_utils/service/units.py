"""The systemd units of a GPU service (role server_systemd): its server, its timers, the device-node oneshot.

One place knows which unit files a service has and which of them must run, so
that writing, starting, restarting and retiring them cannot drift apart.
"""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.module_utils.service.config_files import per_item

DEVICE_NODES_UNIT = "nvidia-device-nodes.service"
SCRIPT_FOLDER = "/usr/local/libexec/v100-llm"
HEALTH_FILES = ("health.service", "health.timer")
RESTART_FILES = ("restart.service", "restart.timer")


def timer_files(service: dict) -> list:
    """The timer unit files (suffixes after '<unit>-') a service has."""
    return list(HEALTH_FILES) + (list(RESTART_FILES) if service.get("restart_calendar") else [])


def config_files(services: list, device_nodes: bool) -> list:
    """Every folder and file server_systemd writes, as config_files entries, in the order they are made.

    Templates see the service as ``item``, as they did under a loop.
    """
    unit = "/etc/systemd/system/"
    files = [{"path": SCRIPT_FOLDER, "state": "directory", "mode": "0755"},
             # Run by the timers and by the servers' ExecStartPost (as their own users).
             {"path": SCRIPT_FOLDER + "/service-health", "src": "service-health", "mode": "0755"}]
    if device_nodes:
        files.append({"path": unit + DEVICE_NODES_UNIT, "template": "nvidia-device-nodes.service.j2", "mode": "0644"})
    # Shared by every GPU service; the unit name is the instance (%i).
    files.append({"path": unit + "v100-llm-failed@.service", "template": "failed.service.j2", "mode": "0644"})
    for service in services:
        files.append({"path": "%s%s.service.d" % (unit, service["unit"]), "state": "directory", "mode": "0755"})
        files += per_item([service], unit + "%(unit)s.service.d/gpu-sandbox.conf", "gpu-sandbox.conf.j2", "0644")
        for name in timer_files(service):
            files += per_item([service], unit + "%(unit)s-" + name, name + ".j2", "0644")
    return files


def unwanted_restart_timers(services: list) -> list:
    """Scheduled-restart units of services that no longer ask for one (to retire)."""
    return ["%s-%s" % (service["unit"], name) for service in services if not service.get("restart_calendar")
            for name in RESTART_FILES]


def systemd_units(services: list, device_nodes: bool) -> list:
    """The units for unit_freshness, in start order.

    The device-node oneshot is pulled in by the servers (Wants=), so it is
    never started on its own: where nvidia-modprobe is missing its condition
    fails and a start would be reported on every run. The oneshots behind
    the timers are only re-read, never restarted: a probe or a scheduled
    restart in flight is not cut short.
    """
    units = [{"name": DEVICE_NODES_UNIT, "inputs": [], "start": False, "restart": True, "enable": False}] \
        if device_nodes else []
    for service in services:
        units.append({"name": service["unit"] + ".service", "inputs": list(service.get("inputs", [])),
                      "start": bool(service.get("start", True)), "restart": True, "enable": True})
        for name in timer_files(service):
            timer = name.endswith(".timer")
            units.append({"name": "%s-%s" % (service["unit"], name), "inputs": [],
                          "start": timer, "restart": timer, "enable": timer})
    return units


def retired_files(units: list) -> list:
    """Every name in /etc/systemd/system a retired server (given without .service) had, its own and server_systemd's."""
    return ["%s%s" % (unit, suffix) for unit in units
            for suffix in [".service", ".service.d"] + ["-" + name for name in HEALTH_FILES + RESTART_FILES]]
