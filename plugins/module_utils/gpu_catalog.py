"""NVIDIA GPU catalogue keyed by PCI device id.

Lets facts carry compute capability, architecture and memory bandwidth before any
driver is installed: `lspci -nn` already gives the PCI id.

Sources (one comment per entry says which applies):
- ids and names: the pci.ids database (pciutils/pciids, pci.ids at commit
  006181e2c5d5b9a3b57d252aa5b3d827971d41a9).
- V100 family: docs/VOLTA_FACTS.md (GPU table).
- compute capability: NVIDIA's "CUDA GPU Compute Capability" pages
  (developer.nvidia.com/cuda-gpus and /cuda-legacy-gpus).
- bandwidth: the vendor figure named in the entry's comment; None where no
  source confirmed it.

Cards not listed here still get a compute capability: from the driver, else from
their device id's chip family (gpu_families); these entries win over both.

memory_mib is the marketed capacity in GiB times 1024. nvidia-smi's framebuffer total
can be somewhat lower (a V100S 32GB reports 32510 MiB), so facts prefer the
nvidia-smi value when the driver answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    pci_device_id: str  # "10de:1db6"
    name: str  # the pci.ids model name, e.g. "Tesla V100 PCIe 32GB"
    architecture: str
    compute_capability: str  # "7.0"
    memory_mib: int
    memory_bandwidth_gbps: float | None


def _gpu(device: str, name: str, arch: str, cc: str, memory_gib: int, bandwidth: float | None) -> GpuModel:
    return GpuModel("10de:" + device, name, arch, cc, memory_gib * 1024, bandwidth)


_ENTRIES = (
    # V100 family: docs/VOLTA_FACTS.md; names from pci.ids.
    _gpu("1db1", "Tesla V100 SXM2 16GB", "Volta", "7.0", 16, 900.0),
    _gpu("1df5", "Tesla V100 SXM2 16GB", "Volta", "7.0", 16, 900.0),
    _gpu("1db3", "Tesla V100 FHHL 16GB", "Volta", "7.0", 16, None),  # bandwidth unconfirmed there
    _gpu("1db4", "Tesla V100 PCIe 16GB", "Volta", "7.0", 16, 900.0),
    _gpu("1db5", "Tesla V100 SXM2 32GB", "Volta", "7.0", 32, 900.0),
    _gpu("1db6", "Tesla V100 PCIe 32GB", "Volta", "7.0", 32, 900.0),
    _gpu("1df6", "Tesla V100S PCIe 32GB", "Volta", "7.0", 32, 1134.0),
    # DGXS and SXM3: memory from the pci.ids names; VOLTA_FACTS leaves bandwidth blank.
    _gpu("1db2", "Tesla V100 DGXS 16GB", "Volta", "7.0", 16, None),
    _gpu("1db7", "Tesla V100 DGXS 32GB", "Volta", "7.0", 32, None),
    _gpu("1db8", "Tesla V100 SXM3 32GB", "Volta", "7.0", 32, None),
    # T4: NVIDIA T4 product brief, "16 GB" and "Peak memory bandwidth up to 320 GBytes/s".
    _gpu("1eb8", "Tesla T4", "Turing", "7.5", 16, 320.0),
    # RTX 3090: NVIDIA System Information of a 10de:2204 card, 19.5 Gbps x 384-bit = 936 GB/s.
    _gpu("2204", "GeForce RTX 3090", "Ampere", "8.6", 24, 936.0),
    # RTX 4090: 24 GB GDDR6X, 21 Gbps x 384-bit = 1008 GB/s.
    _gpu("2684", "GeForce RTX 4090", "Ada Lovelace", "8.9", 24, 1008.0),
    # RTX 4060 Ti 16GB (2803 is the 8 GB card): 18 Gbps x 128-bit = 288 GB/s.
    _gpu("2805", "GeForce RTX 4060 Ti 16GB", "Ada Lovelace", "8.9", 16, 288.0),
    # A100: NVIDIA A100 datasheet, 40GB 1,555 GB/s; 80GB PCIe 1,935 GB/s; 80GB SXM 2,039 GB/s.
    # pci.ids lists two device ids for the 40 GB PCIe card.
    _gpu("20b1", "A100 PCIe 40GB", "Ampere", "8.0", 40, 1555.0),
    _gpu("20f1", "A100 PCIe 40GB", "Ampere", "8.0", 40, 1555.0),
    _gpu("20b0", "A100 SXM4 40GB", "Ampere", "8.0", 40, 1555.0),
    _gpu("20b5", "A100 PCIe 80GB", "Ampere", "8.0", 80, 1935.0),
    _gpu("20b2", "A100 SXM4 80GB", "Ampere", "8.0", 80, 2039.0),
    # H100 PCIe: NVIDIA H100 PCIe product brief, 80 GB, "greater than 2,000" GB/s; docs.nvidia.com "2 TB/s".
    _gpu("2331", "H100 PCIe", "Hopper", "9.0", 80, 2000.0),
    # H100 SXM5: NVIDIA H100 datasheet, 80 GB HBM3, 3.35 TB/s.
    _gpu("2330", "H100 SXM5 80GB", "Hopper", "9.0", 80, 3350.0),
    # H200 SXM and NVL: NVIDIA H200 datasheet, 141 GB HBM3e, 4.8 TB/s on both boards.
    # 2335 also read from a real H200 (nvidia-smi 580.159.04: 233510DE, 143771 MiB).
    _gpu("2335", "H200 SXM 141GB", "Hopper", "9.0", 141, 4800.0),
    _gpu("233b", "H200 NVL", "Hopper", "9.0", 141, 4800.0),
)

GPU_CATALOG: dict[str, GpuModel] = {model.pci_device_id: model for model in _ENTRIES}

_NVIDIA_VENDOR = "10de"
_HEX4 = re.compile(r"^[0-9a-f]{4}$")
# Words that differ between lspci and nvidia-smi spellings of the same card.
_NAME_NOISE = frozenset({"nvidia", "corporation", "tesla", "geforce"})


def normalize_pci_device_id(value: str) -> str | None:
    """Return "10de:dddd" for an NVIDIA id in any of the forms tools print.

    Accepts "10de:1db6", "1db6", "1DF610DE" and "0x1DB610DE" (nvidia-smi prints
    device then vendor). Returns None for other vendors or unreadable input.
    """
    text = value.strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if ":" in text:
        vendor, _, device = text.partition(":")
    elif len(text) == 8:
        device, vendor = text[:4], text[4:]
    else:
        vendor, device = _NVIDIA_VENDOR, text
    if vendor != _NVIDIA_VENDOR or not _HEX4.match(device):
        return None
    return vendor + ":" + device


def lookup(pci_device_id: str) -> GpuModel | None:
    """Catalogue entry for a PCI device id in any form normalize_pci_device_id accepts."""
    key = normalize_pci_device_id(pci_device_id)
    return GPU_CATALOG.get(key) if key else None


def _name_key(name: str) -> frozenset[str]:
    # lspci puts the model in brackets after the chip ("GV100GL [Tesla V100 PCIe 16GB]").
    bracketed = re.search(r"\[([^\]]+)\]", name)
    text = bracketed.group(1) if bracketed else name
    return frozenset(re.findall(r"[a-z0-9]+", text.lower())) - _NAME_NOISE


def lookup_by_name(name: str) -> GpuModel | None:
    """Catalogue entry for a model name as lspci or nvidia-smi prints it.

    Compares the words of the name, ignoring case, dashes, order and vendor words, so
    "GV100GL [Tesla V100 PCIe 16GB]" and "Tesla V100-PCIE-16GB" both find 10de:1db4.
    Where two ids share a name (1db1 and 1df5), the first listed is returned; they
    have the same specifications.
    """
    key = _name_key(name)
    if not key:
        return None
    for model in _ENTRIES:
        if _name_key(model.name) == key:
            return model
    return None
