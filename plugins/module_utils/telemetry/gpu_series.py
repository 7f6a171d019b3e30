"""The per-GPU series of the telemetry collector, from `nvidia-smi -q -x`.

Standard library only (it runs on the host). Field paths are those of the
recordings under tests/fixtures/recorded/ (drivers 460 to 580); a field a
driver or GPU reports as "N/A" gives no series rather than a made-up 0.
Units are Prometheus's base units: bytes, hertz, watts, celsius, ratios.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Callable, List, Optional, Tuple

from .exposition import Family, Sample, family, sample
from .smi_xml import first_number, number, text, throttle_states

MIB = 1024 * 1024
MHZ = 1000 * 1000
PREFIX = "v100_gpu_"
_LINK = "pci/pci_gpu_link_info/"

# name, type, help, reading (gpu element -> value or None).
_Reading = Callable[[ET.Element], Optional[float]]


def _scaled(path: str, factor: float) -> _Reading:
    def reading(gpu: ET.Element) -> Optional[float]:
        value = number(gpu, path)
        return None if value is None else value * factor
    return reading


def _path(*paths: str) -> _Reading:
    return lambda gpu: first_number(gpu, *paths)


def _flag(yes: str, *paths: str) -> _Reading:
    """1 when any of paths says yes, 0 when those the driver fills say otherwise, None when it fills none."""
    def reading(gpu: ET.Element) -> Optional[float]:
        found = [value for value in (text(gpu, path) for path in paths) if value is not None]
        return float(yes in found) if found else None
    return reading


_GAUGES: Tuple[Tuple[str, str, str, _Reading], ...] = (
    ("temperature_celsius", "gauge", "GPU core temperature.", _path("temperature/gpu_temp")),
    ("memory_temperature_celsius", "gauge", "HBM temperature (V100 and later).", _path("temperature/memory_temp")),
    ("temperature_slowdown_celsius", "gauge", "Core temperature at which the GPU slows its clocks.",
     _path("temperature/gpu_temp_slow_threshold")),
    ("temperature_shutdown_celsius", "gauge", "Core temperature at which the GPU shuts down.",
     _path("temperature/gpu_temp_max_threshold")),
    ("power_draw_watts", "gauge", "Power drawn by the board.",
     _path("power_readings/power_draw", "gpu_power_readings/power_draw", "gpu_power_readings/instant_power_draw")),
    ("power_limit_watts", "gauge", "Power limit the driver enforces.",
     _path("power_readings/enforced_power_limit", "power_readings/power_limit",
           "gpu_power_readings/current_power_limit")),
    ("sm_clock_hertz", "gauge", "SM clock.", _scaled("clocks/sm_clock", MHZ)),
    ("sm_clock_max_hertz", "gauge", "Highest SM clock of the board.", _scaled("max_clocks/sm_clock", MHZ)),
    ("memory_clock_hertz", "gauge", "Memory clock.", _scaled("clocks/mem_clock", MHZ)),
    ("memory_clock_max_hertz", "gauge", "Highest memory clock of the board.", _scaled("max_clocks/mem_clock", MHZ)),
    ("utilization_ratio", "gauge", "Share of the last sample period in which a kernel ran.",
     _scaled("utilization/gpu_util", 0.01)),
    ("memory_utilization_ratio", "gauge", "Share of the last sample period in which memory was read or written.",
     _scaled("utilization/memory_util", 0.01)),
    ("memory_used_bytes", "gauge", "Framebuffer memory in use.", _scaled("fb_memory_usage/used", MIB)),
    ("memory_total_bytes", "gauge", "Framebuffer memory.", _scaled("fb_memory_usage/total", MIB)),
    ("pcie_link_generation", "gauge", "PCIe generation the link runs at now (it drops when idle).",
     _path(_LINK + "pcie_gen/current_link_gen")),
    ("pcie_link_generation_max", "gauge", "Highest PCIe generation of the GPU and its slot.",
     _path(_LINK + "pcie_gen/max_link_gen")),
    ("pcie_link_width", "gauge", "PCIe lanes the link runs with now.", _path(_LINK + "link_widths/current_link_width")),
    ("pcie_link_width_max", "gauge", "Most PCIe lanes of the GPU and its slot.",
     _path(_LINK + "link_widths/max_link_width")),
    ("pcie_replay_total", "counter", "PCIe replays since the driver loaded (a flaky riser or slot).",
     _path("pci/replay_counter")),
    ("persistence_mode", "gauge", "1 when persistence mode is on.", _flag("Enabled", "persistence_mode")),
    ("ecc_mode", "gauge", "1 when ECC is on.", _flag("Enabled", "ecc_mode/current_ecc")),
    # Drivers fill pending_retirement (410), pending_blacklist (430) or both (460 and later).
    ("retired_pages_pending", "gauge", "1 when a retired page waits for the next driver load.",
     _flag("Yes", "retired_pages/pending_retirement", "retired_pages/pending_blacklist")),
)


def _labels(gpu: ET.Element, index: int) -> dict:
    # gpu is nvidia-smi's index (the <gpu> elements' order: PCI bus order), as llama_server_instances' gpus;
    # the device minor number can differ (the K80 recording).
    bus_id = text(gpu, "pci/pci_bus_id") or gpu.get("id") or ""
    # "00000000:00:0D.0" -> "0000:00:0d.0", the form the Xid series carry.
    parts = bus_id.lower().split(":")
    pci = "%04x:%s" % (int(parts[0], 16), ":".join(parts[1:])) if len(parts) == 3 else bus_id.lower()
    return {"gpu": str(index), "pci_bus_id": pci}


# Drivers before 535 (the V100S and V100-SXM3 recordings) count single- and double-bit errors, each with a total;
# 535 and later (DTD v12: the A100 and H200 recordings) count correctable and uncorrectable errors of DRAM and SRAM
# (580 splits SRAM's uncorrectable ones into parity and SECDED). Both become correctable (single-bit) and
# uncorrectable (double-bit) counts, by where the driver counts them.
_ECC_V12 = re.compile(r"^(?P<memory>sram|dram)_(?P<type>correctable|uncorrectable)(?:_(?P<detail>[a-z]+))?$")
_ECC_OLD = (("single_bit", "correctable"), ("double_bit", "uncorrectable"))


def _ecc(gpu: ET.Element, labels: dict) -> List[Sample]:
    found = []
    for scope in ("volatile", "aggregate"):
        for old, kind in _ECC_OLD:
            value = number(gpu, "ecc_errors/%s/%s/total" % (scope, old))
            if value is not None:
                found.append(sample(PREFIX + "ecc_errors", value, **labels, scope=scope, type=kind, location="total"))
        for child in gpu.findall("ecc_errors/%s/*" % scope):
            match = _ECC_V12.match(child.tag)
            value = number(gpu, "ecc_errors/%s/%s" % (scope, child.tag))
            if match and value is not None:
                location = match.group("memory") + ("_" + match.group("detail") if match.group("detail") else "")
                found.append(sample(PREFIX + "ecc_errors", value, **labels, scope=scope, type=match.group("type"),
                                    location=location))
    return found


def _retired(gpu: ET.Element, labels: dict) -> List[Sample]:
    causes = (("single_bit", "multiple_single_bit_retirement"), ("double_bit", "double_bit_retirement"))
    return [sample(PREFIX + "retired_pages", value, **labels, cause=cause) for cause, path in causes
            for value in [number(gpu, "retired_pages/%s/retired_count" % path)] if value is not None]


def _throttles(gpu: ET.Element, labels: dict) -> List[Sample]:
    return [sample(PREFIX + "throttle_active", float(active), **labels, reason=reason)
            for reason, active in (throttle_states(gpu) or {}).items()]


def families(xml_text: str) -> List[Family]:
    """Every per-GPU family, one sample per GPU that reports it. Raises ElementTree.ParseError on non-XML."""
    root = ET.fromstring(xml_text)
    gpus = [(gpu, _labels(gpu, index)) for index, gpu in enumerate(root.findall("gpu"))]
    result = [family(PREFIX + "info", "gauge", "One series per GPU; the labels say which GPU and driver.",
                     [sample(PREFIX + "info", 1, **labels, name=text(gpu, "product_name"), uuid=text(gpu, "uuid"),
                             driver_version=text(root, "driver_version"))
                      for gpu, labels in gpus])]
    for suffix, kind, help_text, reading in _GAUGES:
        result.append(family(PREFIX + suffix, kind, help_text,
                             [sample(PREFIX + suffix, value, **labels) for gpu, labels in gpus
                              for value in [reading(gpu)] if value is not None]))
    result.append(family(PREFIX + "throttle_active", "gauge",
                         "1 while the clock throttle (event) reason holds the clocks down.",
                         [item for gpu, labels in gpus for item in _throttles(gpu, labels)]))
    result.append(family(PREFIX + "ecc_errors", "gauge",
                         "ECC errors (correctable: single-bit; uncorrectable: double-bit): volatile since the driver "
                         "loaded, aggregate over the board's life.",
                         [item for gpu, labels in gpus for item in _ecc(gpu, labels)]))
    result.append(family(PREFIX + "retired_pages", "gauge", "Memory pages retired, by cause.",
                         [item for gpu, labels in gpus for item in _retired(gpu, labels)]))
    return result
