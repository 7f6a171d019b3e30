"""The controller's side of roles/gpu_telemetry: the collector's settings, where the node exporter listens, and
what a scrape says. Not copied to the host (the collector needs only the modules beside this one)."""
from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import is_loopback, local_address
from ansible_collections.v100.llm.plugins.module_utils.telemetry import exposition

NVIDIA_SMI = ["nvidia-smi", "-q", "-x"]
# llama-server serves /metrics behind its key; vLLM 0.5's key guards only /v1 (vllm/entrypoints/openai/
# api_server.py), so only llama-server's key is handed to the collector.
KEYED_KINDS = ("llama-server",)


def keyed_servers(servers: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The servers whose key the collector needs, as systemd credentials named after them."""
    return [server for server in servers if server.get("key_file") and server.get("kind") in KEYED_KINDS]


def collector_settings(servers: List[Dict[str, Any]], prefixes: Dict[str, List[str]], paths: Dict[str, str],
                       gpus: bool, nvidia_smi_timeout: int, kernel_log_match: List[str]) -> Dict[str, Any]:
    """The collector's JSON settings (plugins/module_utils/telemetry/collect.py reads them)."""
    keyed = [server["name"] for server in keyed_servers(servers)]
    return {
        "output": paths["textfile_dir"] + "/v100_llm.prom",
        "state": paths["state_dir"] + "/xid-state.json",
        "nvidia_smi": NVIDIA_SMI if gpus else None,
        "nvidia_smi_timeout": nvidia_smi_timeout,
        "journal_match": list(kernel_log_match),
        "journal_timeout": 20,
        "server_timeout": 5,
        "servers": [{"name": server["name"], "metrics_url": server["url"] + "/metrics",
                     "prefixes": prefixes[server["kind"]],
                     "credential": server["name"] if server["name"] in keyed else None} for server in servers],
    }


def listen(address: str, port: int) -> Dict[str, Any]:
    """The node exporter's --web.listen-address, whether it stays on this host, and where this host reaches it
    (local_host: the address its own requests come from, which the IP filter must let through)."""
    def joined(host: str) -> str:
        return "%s:%d" % ("[%s]" % host if ":" in host else host, port)
    return {"address": joined(address), "loopback": is_loopback(address), "local": joined(local_address(address)),
            "local_host": local_address(address)}


def summary(scrape: str) -> Dict[str, Any]:
    """What a scrape of the node exporter says about the GPUs, Xid events and servers (the play prints it)."""
    families = {fam.name: fam for fam in exposition.parse(scrape)}

    def samples(name: str) -> List[exposition.Sample]:
        return list(families[name].samples) if name in families else []

    def label(item: exposition.Sample, key: str) -> str:
        return dict(item.labels).get(key, "")
    success = samples("v100_telemetry_gpu_query_success")
    return {
        "gpus": len(samples("v100_gpu_info")),
        "gpu_query": None if not success else bool(success[0].value),
        "throttled": sorted("%s:%s" % (label(item, "gpu"), label(item, "reason"))
                            for item in samples("v100_gpu_throttle_active") if item.value and
                            label(item, "reason") != "gpu_idle"),
        "xid_events": {"%s xid %s" % (label(item, "pci_bus_id"), label(item, "xid")): int(item.value)
                       for item in samples("v100_xid_events_total")},
        "servers_up": {label(item, "server"): bool(item.value) for item in samples("v100_server_metrics_up")},
        "series": sum(len(fam.samples) for fam in families.values() if fam.name.startswith(("v100_", "llamacpp:",
                                                                                              "vllm:"))),
    }
