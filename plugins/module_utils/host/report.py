"""The host report (playbooks/report.yml, role host_report): what a host serves and how it is, in one JSON
object and its Markdown, from facts the run already has and a few reads of the host.

Pure functions: the role gathers, these decide what goes in. No secret goes in: key files are named by path,
never read, and the settings that hold keys are not passed here.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

# What a llama.cpp build stamp (roles/llama_cpp, build-stamp.json) holds that says how it was built.
# (plugins/module_utils/llama/build.py's stamp).
STAMP_FIELDS = ("version", "commit", "backend", "cuda_architectures", "nvcc", "compiler", "cmake_args", "nccl")


def _gpu(gpu: Mapping[str, Any]) -> Dict[str, Any]:
    keys = ("index", "name", "pci_bus_id", "memory_total_mib", "compute_capability", "pcie_link_gen_current",
            "pcie_link_gen_max", "pcie_link_width_current", "pcie_link_width_max", "temperature_c", "serving")
    return {key: gpu.get(key) for key in keys}


def service_unit(endpoint: Mapping[str, Any]) -> Optional[str]:
    """The systemd unit serving an endpoint: llama-server's names its own (engine.unit), vLLM's is
    vllm-server.service (roles/vllm_server)."""
    unit = (endpoint.get("engine") or {}).get("unit") or ("vllm-server" if endpoint.get("kind") == "vllm" else "")
    return unit + ".service" if unit else None


def service_units(endpoints: List[Mapping[str, Any]]) -> List[str]:
    """The units the role asks systemd about."""
    return [unit for unit in map(service_unit, endpoints) if unit]


def _service(endpoint: Mapping[str, Any], states: Mapping[str, str], checks: Mapping[str, List[Mapping[str, Any]]],
             benchmarks: Mapping[str, str]) -> Dict[str, Any]:
    unit = service_unit(endpoint)
    rows = checks.get(endpoint["name"], [])
    return {
        "name": endpoint["name"], "kind": endpoint.get("kind"), "unit": unit,
        "state": states.get(unit) if unit else None, "url": endpoint.get("url"),
        "model": endpoint.get("model"), "prompt_tokens_max": endpoint.get("prompt_tokens_max"),
        "key_file": endpoint.get("key_file") or None,
        "health": None if not rows else "failed" if any(row.get("state") == "failed" for row in rows) else "ok",
        "checks": {row.get("check"): row.get("state") for row in rows},
        "last_benchmark": benchmarks.get(endpoint["name"]),
    }


def build(host: str, system: Mapping[str, Any], gpus: List[Mapping[str, Any]], driver: Mapping[str, Any],
          llama_cpp_stamp: Optional[Mapping[str, Any]], vllm_version: Optional[str],
          endpoints: List[Mapping[str, Any]], unit_states: Mapping[str, str],
          verify_endpoints: List[Mapping[str, Any]], warnings: List[str], benchmarks: Mapping[str, str],
          telemetry: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The report. verify_endpoints is endpoint_check's `endpoints` (name, checks); benchmarks maps an endpoint
    name to its newest report on the controller."""
    checks = {item["name"]: item.get("checks", []) for item in verify_endpoints}
    stamp = llama_cpp_stamp or {}
    return {
        "host": host,
        "system": dict(system),
        "gpus": [_gpu(gpu) for gpu in gpus],
        "driver": dict(driver),
        "llama_cpp": {key: stamp[key] for key in STAMP_FIELDS if key in stamp} if stamp else None,
        "vllm": vllm_version,
        "services": [_service(endpoint, unit_states, checks, benchmarks) for endpoint in endpoints],
        "warnings": list(warnings),
        "telemetry": None if telemetry is None else {
            key: telemetry.get(key) for key in ("gpus", "gpu_query", "throttled", "xid_events", "servers_up")},
    }


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value) or "-"
    return str(value).replace("|", "\\|")


def markdown(report: Mapping[str, Any]) -> str:
    """The report for people: the same facts as the JSON, as headings, tables and lists."""
    driver, system = report["driver"], report["system"]
    lines = ["# %s" % report["host"], "",
             "%s %s, kernel %s" % (system.get("distribution"), system.get("version"), system.get("kernel")), "",
             "## GPUs and driver", "",
             "driver %s (nvidia_driver_branch %s), CUDA %s from the driver, toolkit %s" % (
                 driver.get("version") or "not loaded", _cell(driver.get("branch")), _cell(driver.get("cuda_version")),
                 _cell(driver.get("cuda_toolkit"))), ""]
    if report["gpus"]:
        lines += ["| GPU | name | bus | memory MiB | PCIe now/max | temperature C |", "| --- | --- | --- | --- | --- | --- |"]
        lines += ["| %s | %s | %s | %s | Gen%s x%s / Gen%s x%s | %s |" % tuple(_cell(gpu.get(key)) for key in (
            "index", "name", "pci_bus_id", "memory_total_mib", "pcie_link_gen_current", "pcie_link_width_current",
            "pcie_link_gen_max", "pcie_link_width_max", "temperature_c")) for gpu in report["gpus"]]
    else:
        lines.append("no NVIDIA GPU")
    lines += ["", "## Software", "",
              "- llama.cpp: %s" % (", ".join("%s %s" % (key, _cell(value)) for key, value in report["llama_cpp"].items())
                                   if report["llama_cpp"] else "not installed"),
              "- vLLM: %s" % _cell(report["vllm"]), "", "## Services", ""]
    if report["services"]:
        lines += ["| name | unit | state | health | address | model | longest prompt | key file | last benchmark |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += ["| %s |" % " | ".join(_cell(service.get(key)) for key in (
            "name", "unit", "state", "health", "url", "model", "prompt_tokens_max", "key_file", "last_benchmark"))
            for service in report["services"]]
    else:
        lines.append("none")
    telemetry = report["telemetry"]
    lines += ["", "## Telemetry", ""]
    lines += (["- throttled now: %s" % _cell(telemetry["throttled"]),
               "- Xid events: %s" % (", ".join("%s: %s" % item for item in sorted(telemetry["xid_events"].items()))
                                     or "none"),
               "- servers' /metrics up: %s" % (", ".join("%s %s" % item for item in sorted(
                   telemetry["servers_up"].items())) or "none")] if telemetry
                  else ["not read by this run (the telemetry stage reads it)"])
    lines += ["", "## Preflight warnings", ""] + (["- " + warning for warning in report["warnings"]] or ["none"])
    return "\n".join(lines) + "\n"


def summary(report: Mapping[str, Any]) -> List[str]:
    """A few lines for the play's output."""
    services = ["%s %s (%s)" % (service["name"], service["state"] or "?", service["health"] or "not checked")
                for service in report["services"]]
    telemetry = report["telemetry"] or {}
    return [
        "%d GPU(s), driver %s; llama.cpp %s; vLLM %s" % (
            len(report["gpus"]), report["driver"].get("version") or "none",
            (report["llama_cpp"] or {}).get("commit", "not installed"), report["vllm"] or "not installed"),
        "services: " + (", ".join(services) or "none"),
        "throttled: %s; Xid events: %d; preflight warnings: %d" % (
            _cell(telemetry.get("throttled")), sum((telemetry.get("xid_events") or {}).values()),
            len(report["warnings"])),
    ]


def unit_states(systemctl_show: str) -> Dict[str, str]:
    """`systemctl show -p Id -p ActiveState UNIT...` as {unit: state} (one block a unit, blank lines between)."""
    states = {}
    for block in systemctl_show.strip().split("\n\n"):
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if fields.get("Id"):
            states[fields["Id"]] = fields.get("ActiveState", "")
    return states


def newest_benchmarks(paths: List[str], host: str) -> Dict[str, str]:
    """{server name: its newest report} among the benchmark's files (<host>-<server>-YYYYmmdd-HHMMSS.json)."""
    pattern = re.compile(r"^%s-(?P<server>.+)-(?P<time>\d{8}-\d{6})\.json$" % re.escape(host))
    newest: Dict[str, tuple] = {}
    for path in paths:
        match = pattern.match(path.rsplit("/", 1)[-1])
        if match and (match.group("server") not in newest or match.group("time") > newest[match.group("server")][0]):
            newest[match.group("server")] = (match.group("time"), path)
    return {server: path for server, (_, path) in newest.items()}
