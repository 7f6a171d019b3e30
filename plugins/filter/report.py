"""Filters of roles/host_report (module_utils/host/report.py, unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_REPORT = Deferred("host.report")


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # host | host_report(system, gpus, driver, stamp, vllm, endpoints, states, verify, warnings, benchmarks,
            # telemetry) -> the report
            "host_report": _REPORT.build,
            # report | host_report_markdown -> the report for people
            "host_report_markdown": _REPORT.markdown,
            # report | host_report_summary -> a few lines for the play
            "host_report_summary": _REPORT.summary,
            # endpoints | host_report_units -> the systemd units serving them
            "host_report_units": _REPORT.service_units,
            # `systemctl show -p Id -p ActiveState ...` | systemd_show_states -> {unit: ActiveState}
            "systemd_show_states": _REPORT.unit_states,
            # controller paths | newest_benchmarks(host) -> {server: newest report}
            "newest_benchmarks": _REPORT.newest_benchmarks,
        }
