"""Filters of roles/gpu_telemetry (module_utils/telemetry/plan.py, unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_PLAN = Deferred("telemetry.plan")


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # servers | telemetry_collector_settings(prefixes, paths, gpus, timeout, match) -> the collector's JSON
            "telemetry_collector_settings": _PLAN.collector_settings,
            # servers | telemetry_keyed_servers -> those whose key the collector gets as a systemd credential
            "telemetry_keyed_servers": _PLAN.keyed_servers,
            # address | telemetry_listen(port) -> {address, loopback, local}
            "telemetry_listen": _PLAN.listen,
            # node exporter's /metrics text | telemetry_summary -> GPUs, throttles, Xid events, servers
            "telemetry_summary": _PLAN.summary,
        }
