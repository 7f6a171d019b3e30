"""Filters of roles/front_door (module_utils/front_door/plan.py, unit-tested in tests/unit)."""
from __future__ import annotations

import base64
from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred
from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import key_from_file

_PLAN = Deferred("front_door.plan")


def backend_keys(endpoints: Sequence[Mapping[str, Any]], slurped: List[Mapping[str, Any]]) -> Dict[str, str]:
    """Each endpoint's API key by its name, read as its server reads it from the slurped key files ("" for none)."""
    texts = {item["source"]: base64.b64decode(item["content"]).decode() for item in slurped if item.get("content")}
    return {item["name"]: key_from_file(texts[item["key_file"]], item.get("key_variable", ""))
            if item.get("key_file") in texts else "" for item in endpoints}


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # endpoints | front_door_backend_keys(slurp results of their key files) -> {endpoint name: key}
            "front_door_backend_keys": backend_keys,
            # `apt-cache policy haproxy` | front_door_haproxy_version -> [major, minor] or []
            "front_door_haproxy_version": _PLAN.haproxy_version,
            # users | front_door_refusals(endpoints, keys, listen address, allowed networks, version) -> [why]
            "front_door_refusals": _PLAN.refusals,
            # endpoints | front_door_config(keys, users) -> backends, maps, the /v1/models answer
            "front_door_config": _PLAN.config,
            # endpoints | front_door_checked_endpoints(url, address, port, CA file, user) -> verify's endpoints
            "front_door_checked_endpoints": _PLAN.checked_endpoints,
        }
