"""Parsers for `lspci`, `nvidia-smi -q -x` and `nvidia-smi --query-gpu` output, and their merge into GPU facts.

Pure functions over text: the nvidia_gpu_facts module runs the tools, these read
what they printed. lspci works before any driver is installed; nvidia-smi adds
what only the driver knows (memory in use, BAR1, link state, temperatures, and
the compute capability of any GPU, catalogued or not).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.v100.llm.plugins.module_utils.gpu.catalog import GpuModel, lookup, lookup_by_name, normalize_pci_device_id
from ansible_collections.v100.llm.plugins.module_utils.gpu.catalog import architecture, family_compute_capability
from ansible_collections.v100.llm.plugins.module_utils.telemetry.smi_xml import enabled as _enabled, first_number
from ansible_collections.v100.llm.plugins.module_utils.telemetry.smi_xml import integer as _integer, text as _text
from ansible_collections.v100.llm.plugins.module_utils.telemetry.smi_xml import throttle_states

# PCI display classes: VGA (a card with a display output), 3D controller (headless
# data-center cards: every Tesla), other display controller.
VGA_CLASS = "0300"
_CLASS_IDS_BY_NAME = {"vga compatible controller": VGA_CLASS, "3d controller": "0302", "display controller": "0380"}
_DISPLAY_CLASS_IDS = frozenset(_CLASS_IDS_BY_NAME.values())

# One device line of lspci, optionally behind an "IOMMU Group N" prefix (loop scripts
# over /sys/kernel/iommu_groups print that), with or without the domain (-D) and
# the numeric class and ids (-nn).
_LSPCI_LINE = re.compile(
    r"^(?:IOMMU Group \d+\s+)?"
    r"(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<cls>[^:\[]+?)(?:\s+\[(?P<clsid>[0-9a-fA-F]{4})\])?:\s+"
    r"(?P<desc>.*)$"
)
_LSPCI_IDS = re.compile(r"\s*\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]")
_LSPCI_REV = re.compile(r"\s*\(rev [0-9a-fA-F]+\)\s*$")
_NVIDIA_VENDOR_NAME = "NVIDIA Corporation"

_POWER_LIMIT_PATHS = ("power_readings/power_limit", "gpu_power_readings/current_power_limit")

_DRIVER_UNAVAILABLE = "couldn't communicate with the nvidia driver"
_UNKNOWN_FIELD = "is not a valid field to query"
_CAPABILITY_LINE = re.compile(
    r"^\s*(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s*,\s*(?P<cc>\d+\.\d+)\s*$")


def normalize_bus_id(bus_id: str) -> str:
    """Return a PCI address as "0000:27:00.0", lowercase, with the domain.

    lspci without -D omits the domain ("27:00.0"); nvidia-smi prints an 8-digit one
    ("00000000:00:0D.0"). Domains above 0xffff (Intel VMD) are kept whole.
    """
    parts = bus_id.strip().lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0")
    domain, bus, device_function = parts
    return f"{int(domain, 16):04x}:{bus}:{device_function}"


def _lspci_device(match: re.Match) -> dict | None:
    desc = _LSPCI_REV.sub("", match.group("desc"))
    found = list(_LSPCI_IDS.finditer(desc))
    ids = found[-1] if found else None  # the vendor:device pair ends the line
    if ids:
        if ids.group("vendor").lower() != "10de":
            return None
        desc = desc[: ids.start()] + desc[ids.end() :]
    elif not desc.startswith(_NVIDIA_VENDOR_NAME):
        return None
    pci_class = (match.group("clsid") or "").lower() or _CLASS_IDS_BY_NAME.get(match.group("cls").strip().lower())
    if pci_class not in _DISPLAY_CLASS_IDS:
        return None
    desc = desc[len(_NVIDIA_VENDOR_NAME) :].strip() if desc.startswith(_NVIDIA_VENDOR_NAME) else desc.strip()
    brackets = re.findall(r"\[([^\]]+)\]", desc)
    name = brackets[-1] if brackets else desc
    if ids:
        device_id = normalize_pci_device_id(ids.group("vendor") + ":" + ids.group("device"))
    else:
        model = lookup_by_name(desc)
        device_id = model.pci_device_id if model else None
    return {
        "pci_bus_id": normalize_bus_id(match.group("bus")),
        "pci_device_id": device_id,
        "name": name,
        "pci_class": pci_class,
    }


def parse_lspci(text: str) -> list[dict]:
    """NVIDIA display devices from `lspci -Dnn` output, in the order listed.

    Also reads plain `lspci`, `lspci -v` blocks (indented lines are skipped) and
    IOMMU-group listings. Without numeric ids the device id comes from the model
    name through the catalogue, or is None when the name is not catalogued.
    Each item: pci_bus_id, pci_device_id, name, pci_class ("0300" VGA, "0302" 3D
    controller, "0380" other display controller; from the class name without -nn).
    """
    devices = []
    for line in text.splitlines():
        match = _LSPCI_LINE.match(line)
        if match:
            device = _lspci_device(match)
            if device:
                devices.append(device)
    return devices


def _throttle_reasons(gpu: ET.Element) -> list[str] | None:
    states = throttle_states(gpu)
    return None if states is None else [reason for reason, active in states.items() if active]


def _power_limit(gpu: ET.Element) -> float | None:
    return first_number(gpu, *_POWER_LIMIT_PATHS)


def _pci_class(gpu: ET.Element) -> str | None:
    # Newer drivers (the 580 recording; not 535's) print the class as two numbers:
    # 3 and 2 for a 3D controller, 3 and 0 for VGA.
    base, sub = _integer(gpu, "pci/pci_base_class"), _integer(gpu, "pci/pci_sub_class")
    return None if base is None or sub is None else "%02x%02x" % (base, sub)


def _smi_gpu(gpu: ET.Element) -> dict:
    bus_id = _text(gpu, "pci/pci_bus_id") or gpu.get("id")
    device_id = _text(gpu, "pci/pci_device_id")
    link = "pci/pci_gpu_link_info/"
    return {
        "name": _text(gpu, "product_name"),
        "pci_bus_id": normalize_bus_id(bus_id) if bus_id else None,
        "pci_device_id": normalize_pci_device_id(device_id) if device_id else None,
        "pci_class": _pci_class(gpu),
        "uuid": _text(gpu, "uuid"),
        "minor_number": _integer(gpu, "minor_number"),
        # Direct children only: MIG devices nest their own fb/bar1 usage deeper.
        "memory_total_mib": _integer(gpu, "fb_memory_usage/total"),
        "bar1_total_mib": _integer(gpu, "bar1_memory_usage/total"),
        "pcie_link_gen_current": _integer(gpu, link + "pcie_gen/current_link_gen"),
        "pcie_link_gen_max": _integer(gpu, link + "pcie_gen/max_link_gen"),
        "pcie_link_width_current": _integer(gpu, link + "link_widths/current_link_width"),
        "pcie_link_width_max": _integer(gpu, link + "link_widths/max_link_width"),
        "persistence_mode": _enabled(gpu, "persistence_mode"),
        "temperature_c": _integer(gpu, "temperature/gpu_temp"),
        "throttle_reasons": _throttle_reasons(gpu),
        "power_limit_w": _power_limit(gpu),
    }


def parse_nvidia_smi_xml(text: str) -> dict:
    """Driver versions and per-GPU readings from `nvidia-smi -q -x`.

    Returns driver_version, cuda_version, attached_gpus (as the file states it) and
    gpus, one dict per <gpu> element in nvidia-smi's order. "N/A" reads as None.
    Raises xml.etree.ElementTree.ParseError on text that is not XML.
    """
    root = ET.fromstring(text)
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": _integer(root, "attached_gpus"),
        "gpus": [_smi_gpu(gpu) for gpu in root.findall("gpu")],
    }


def is_driver_unavailable(output: str) -> bool:
    """True for nvidia-smi's "couldn't communicate with the NVIDIA driver" failure."""
    return _DRIVER_UNAVAILABLE in output.lower()


def parse_compute_capabilities(text: str) -> dict:
    """{bus id: "7.0"} from `nvidia-smi --query-gpu=pci.bus_id,compute_cap --format=csv,noheader`.

    One "00000000:00:06.0, 9.0" line per GPU. Lines that are not that shape (a
    "[N/A]", another tool's output) are skipped, so the catalogue or the family
    table decides for those GPUs.
    """
    capabilities = {}
    for line in text.splitlines():
        match = _CAPABILITY_LINE.match(line)
        if match:
            capabilities[normalize_bus_id(match.group("bus"))] = match.group("cc")
    return capabilities


def is_unknown_query_field(output: str) -> bool:
    """True for an nvidia-smi older than the field asked for (exit 2, on stdout):
    'Field "compute_cap" is not a valid field to query.' (470.256.02)."""
    return _UNKNOWN_FIELD in output


_DRIVER_FIELDS = (
    "bar1_total_mib",
    "pcie_link_gen_current",
    "pcie_link_gen_max",
    "pcie_link_width_current",
    "pcie_link_width_max",
    "persistence_mode",
    "temperature_c",
    "throttle_reasons",
    "power_limit_w",
    "uuid",
    "minor_number",
)


def _compute_capability(model: GpuModel | None, driver_capability: str | None, device_id: str | None) -> tuple:
    """(capability, where it came from): the catalogue's exact entry, else what the
    driver reports, else the device id's chip family; (None, None) when none knows."""
    if model:
        return model.compute_capability, "catalogue"
    if driver_capability:
        return driver_capability, "driver"
    family = family_compute_capability(device_id)
    return (family, "pci_id_family") if family else (None, None)


def _gpu_fact(index: int, seen: dict | None, driver: dict | None, driver_capability: str | None) -> dict:
    lspci = seen or {}
    smi = driver or {}
    device_id = smi.get("pci_device_id") or lspci.get("pci_device_id")
    model = lookup(device_id) if device_id else None
    capability, capability_source = _compute_capability(model, driver_capability, device_id)
    memory = smi.get("memory_total_mib")
    pci_class = lspci.get("pci_class") or smi.get("pci_class")
    fact = {
        "index": index,
        "name": smi.get("name") or lspci.get("name"),
        "pci_bus_id": smi.get("pci_bus_id") or lspci.get("pci_bus_id"),
        "pci_device_id": device_id,
        "pci_class": pci_class,
        "display": None if pci_class is None else pci_class == VGA_CLASS,
        "architecture": model.architecture if model else architecture(capability),
        "compute_capability": capability,
        "compute_capability_source": capability_source,
        "memory_total_mib": memory if memory is not None else (model.memory_mib if model else None),
        "memory_bandwidth_gbps": model.memory_bandwidth_gbps if model else None,
        "seen_by_lspci": seen is not None,
        "seen_by_driver": driver is not None,
    }
    fact.update((field, smi.get(field)) for field in _DRIVER_FIELDS)
    return fact


def _mark_serving(gpus: list[dict]) -> None:
    """A display card (VGA class) beside GPUs without a display output (3D controllers,
    as every Tesla is) is there for the screen: it does not serve. A box whose GPUs are
    all display cards (a workstation RTX) serves on them; an unknown class serves."""
    headless_present = any(gpu["display"] is False for gpu in gpus)
    for gpu in gpus:
        gpu["serving"] = not (gpu["display"] and headless_present)


def _bus_order(bus_id: str) -> tuple[int, ...]:
    # Numeric, so a VMD domain 10000 sorts after ffff.
    return tuple(int(part, 16) for part in re.split(r"[:.]", bus_id))


def build_gpu_facts(lspci_gpus: list[dict], smi: dict | None, driver_capabilities: dict | None = None) -> dict:
    """Merge lspci and nvidia-smi views into the nvidia_gpu_facts contract.

    GPUs are matched by PCI bus id. Those nvidia-smi reports come first, in its
    order; GPUs only lspci saw (driver not bound) follow in PCI bus order with
    driver fields None. Compute capability, architecture and bandwidth come from
    the catalogue, so they are known without a driver; for a card the catalogue
    lacks, the capability comes from driver_capabilities ({bus id: "6.1"}, from
    parse_compute_capabilities), else from the device id's chip family
    (the chip families in gpu/catalog.py). Display cards beside headless GPUs are marked serving: false
    and left out of nvidia_serving_gpu_indexes.
    """
    smi_gpus = smi["gpus"] if smi else []
    capabilities = driver_capabilities or {}
    by_bus = {gpu["pci_bus_id"]: gpu for gpu in lspci_gpus}
    pairs = [(by_bus.pop(gpu["pci_bus_id"], None), gpu) for gpu in smi_gpus]
    pairs += [(by_bus[bus], None) for bus in sorted(by_bus, key=_bus_order)]
    gpus = [
        _gpu_fact(index, seen, driver, capabilities.get((driver or seen)["pci_bus_id"]))
        for index, (seen, driver) in enumerate(pairs)
    ]
    _mark_serving(gpus)
    serving = [gpu["index"] for gpu in gpus if gpu["serving"]]
    return {
        "nvidia_gpus": gpus,
        "nvidia_gpu_count": len(gpus),
        "nvidia_serving_gpu_indexes": serving,
        "nvidia_serving_gpu_count": len(serving),
        "nvidia_driver_version": smi["driver_version"] if smi else None,
        "nvidia_driver_cuda_version": smi["cuda_version"] if smi else None,
    }
