"""Filters of the served units: systemd syntax, config files and the GPU services' units (module_utils/service,
unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_UNIT = Deferred("service.systemd_unit")
_CONFIG_FILES = Deferred("service.config_files")
_UNITS = Deferred("service.units")


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # argv | systemd_exec -> the value of an ExecStart= line
            "systemd_exec": _UNIT.exec_line,
            # value | systemd_exec_word -> one ExecStart= argument, escaped and quoted as needed
            "systemd_exec_word": _UNIT.exec_word,
            # value | systemd_environment(name) -> a quoted Environment= assignment
            "systemd_environment": lambda value, name: _UNIT.environment_line(name, value),
            # items | config_files_per_item(path %-format, template, mode[, owner, group]) -> config_files entries
            "config_files_per_item": _CONFIG_FILES.per_item,
            # services | server_systemd_config_files(device_nodes) -> every folder and file, as config_files entries
            "server_systemd_config_files": _UNITS.config_files,
            # services | server_systemd_unwanted_restart_timers -> restart timer units no longer asked for
            "server_systemd_unwanted_restart_timers": _UNITS.unwanted_restart_timers,
            # services | server_systemd_units_in_order(device_nodes) -> the units for unit_freshness, in start order
            "server_systemd_units_in_order": _UNITS.systemd_units,
            # unit names | server_systemd_retired_files -> every file server_systemd wrote for them
            "server_systemd_retired_files": _UNITS.retired_files,
        }
