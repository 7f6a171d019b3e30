"""Filters of the served units: systemd syntax, config files and the GPU services' units (module_utils/service,
unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_UNIT = Deferred("service.systemd_unit")
_CONFIG_FILES = Deferred("service.config_files")
_GPU_SERVICE = Deferred("service.units")


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
            # services | gpu_service_config_files(device_nodes) -> every folder and file, as config_files entries
            "gpu_service_config_files": _GPU_SERVICE.config_files,
            # services | gpu_service_unwanted_restart_timers -> restart timer units no longer asked for
            "gpu_service_unwanted_restart_timers": _GPU_SERVICE.unwanted_restart_timers,
            # services | gpu_service_systemd_units(device_nodes) -> the units for unit_freshness, in start order
            "gpu_service_systemd_units": _GPU_SERVICE.systemd_units,
            # unit names | gpu_service_retired_files -> every file gpu_service wrote for them
            "gpu_service_retired_files": _GPU_SERVICE.retired_files,
        }
