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
their device id's chip family (the families table below); these entries win over both.

memory_mib is the marketed capacity in GiB times 1024. nvidia-smi's framebuffer total
can be somewhat lower (a V100S 32GB reports 32510 MiB), so facts prefer the
nvidia-smi value when the driver answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple


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


# Compute capability, architecture and last driver branch of NVIDIA GPUs the catalogue lacks.
#
# NVIDIA hands out PCI device ids in blocks per chip (envytools docs/hw/pciid.rst:
# "0x0fc0-0x0fff GK107", "0x1280-0x12bf GK208", "0x1380-0x13bf GM107"), so a card that
# the catalogue above does not list still names its chip family, and so its compute capability,
# by its device id. The catalogue's exact entries win over this table.
#
# Sources:
# - PCI_ID_RANGES: derived from pci.ids version 2026.08.22 (pciutils/pciids commit
#   c1c12547d626ebf05fd0223144ad87fab5e95d06). Its NVIDIA (10de) entries, GPU functions
#   only (audio, USB, UCSI, NVSwitch and bridge functions left out), each read by the chip
#   that starts its name (GK208B -> GK208, GP108M -> GP108); consecutive entries whose
#   chips share a compute capability make one range, and an entry of another chip or of
#   none (chipsets, Tegra) ends it. An id inside a range that pci.ids does not list yet
#   gets the range's value; an id between ranges is unknown (None). Only display-class
#   devices are looked up (gpu_inventory), so a GPU's audio function never is. The comment names
#   the chips of each range.
# - chip -> compute capability: NVIDIA's "CUDA GPU Compute Capability" pages
#   (developer.nvidia.com/cuda-gpus and /cuda-legacy-gpus): G80 1.0; G84-G98 1.1;
#   GT215-GT218 1.2; GT200 1.3; GF100/GF110 2.0, other GF1xx 2.1; GK104-GK107 3.0,
#   GK110/GK180/GK208 3.5, GK210 3.7; GM107/GM108 5.0, GM20x 5.2; GP100 6.0, GP10x 6.1;
#   GV100 7.0; TU1xx 7.5; GA100 8.0, GA10x 8.6; AD10x 8.9; GH100 9.0; GB100/GB102 10.0,
#   GB110 10.3, GB20x 12.0. Chips that page does not place (GB112, GB120, Tegra) are left out.
# - LAST_DRIVER_BRANCH: NVIDIA's "Current graphics driver releases" list
#   (forums.developer.nvidia.com/t/current-graphics-driver-releases/28500): legacy 470.xx
#   for "GKxxx Kepler GPUs", 390.xx for "GF1xx Fermi GPUs", 340.xx for "GeForce 8 and 9
#   series GPUs" (the Tesla architecture, GT2xx included); Debian's nvidia-tesla-470-driver:
#   "the last driver series supporting GPUs based on the Kepler architecture"; and for
#   Maxwell, Pascal and Volta the 590+ kernel message "supported through the NVIDIA 580.xx
#   Legacy drivers" (docs/VOLTA_FACTS.md, Driver branches; the same text for a Tesla P100
#   on 595.71.03 in anomixer/proxmox-vgpu-installer#29).
#
# Runs on the managed host's Python (3.8+): no third-party imports.
# (first device id, last device id, compute capability), sorted, not overlapping.
PCI_ID_RANGES: Tuple[Tuple[int, int, str], ...] = (
    (0x0190, 0x019e, "1.0"),  # G80
    (0x0400, 0x042f, "1.1"),  # G84, G86, G92
    (0x05e0, 0x05ff, "1.3"),  # GT200
    (0x0600, 0x065f, "1.1"),  # G92, G94, G96
    (0x06c0, 0x06df, "2.0"),  # GF100
    (0x06e0, 0x06ff, "1.1"),  # G98
    (0x0a20, 0x0a7c, "1.2"),  # GT216, GT218
    (0x0ca0, 0x0cbc, "1.2"),  # GT215
    (0x0dc0, 0x0f06, "2.1"),  # GF104, GF106, GF108
    (0x0fc0, 0x0fff, "3.0"),  # GK107
    (0x1001, 0x102a, "3.5"),  # GK110, GK180
    (0x102d, 0x102d, "3.7"),  # GK210
    (0x102e, 0x103f, "3.5"),  # GK110
    (0x1040, 0x107d, "2.1"),  # GF119
    (0x1080, 0x109b, "2.0"),  # GF100, GF110
    (0x10c0, 0x10d8, "1.2"),  # GT218
    (0x1140, 0x1140, "2.1"),  # GF117
    (0x1180, 0x11ff, "3.0"),  # GK104, GK106
    (0x1200, 0x1251, "2.1"),  # GF114, GF116
    (0x1280, 0x130b, "3.5"),  # GK110, GK208
    (0x1340, 0x139d, "5.0"),  # GM107, GM108
    (0x13ad, 0x13ae, "5.2"),  # GM204
    (0x13b0, 0x13bd, "5.0"),  # GM107
    (0x13be, 0x1436, "5.2"),  # GM204, GM206
    (0x15c2, 0x15ff, "6.0"),  # GP100
    (0x1613, 0x1676, "5.2"),  # GM204
    (0x1725, 0x172f, "6.0"),  # GP100
    (0x174d, 0x179c, "5.0"),  # GM107, GM108
    (0x17c2, 0x17fd, "5.2"),  # GM200
    (0x1b00, 0x1d56, "6.1"),  # GP102, GP104, GP106, GP107, GP108
    (0x1d81, 0x1df6, "7.0"),  # GV100
    (0x1e02, 0x1ff9, "7.5"),  # TU102, TU104, TU106, TU117
    (0x2080, 0x20ff, "8.0"),  # GA100
    (0x2182, 0x21d1, "7.5"),  # TU116
    (0x2200, 0x223f, "8.6"),  # GA102
    (0x2302, 0x23f0, "9.0"),  # GH100
    (0x2414, 0x25fb, "8.6"),  # GA103, GA104, GA106, GA107
    (0x2681, 0x28f8, "8.9"),  # AD102, AD103, AD104, AD106, AD107
    (0x2900, 0x29f1, "10.0"),  # GB100, GB102
    (0x2b85, 0x2c19, "12.0"),  # GB202, GB203
    (0x2c31, 0x2d19, "12.0"),  # GB203, GB206
    (0x2d30, 0x2df9, "12.0"),  # GB206, GB207
    (0x2f04, 0x2f58, "12.0"),  # GB205
    (0x3180, 0x31fe, "10.3"),  # GB110
)

# (first compute capability of the architecture, its name), oldest first.
ARCHITECTURES: Tuple[Tuple[Tuple[int, int], str], ...] = (
    ((1, 0), "Tesla"),
    ((2, 0), "Fermi"),
    ((3, 0), "Kepler"),
    ((5, 0), "Maxwell"),
    ((6, 0), "Pascal"),
    ((7, 0), "Volta"),
    ((7, 5), "Turing"),
    ((8, 0), "Ampere"),
    ((8, 9), "Ada Lovelace"),
    ((9, 0), "Hopper"),
    ((10, 0), "Blackwell"),
)

# Architecture -> the last driver branch that drives it; newer architectures: no end yet.
LAST_DRIVER_BRANCH: Dict[str, int] = {
    "Tesla": 340,
    "Fermi": 390,
    "Kepler": 470,
    "Maxwell": 580,
    "Pascal": 580,
    "Volta": 580,
}

_DEVICE_ID = re.compile(r"^10de:([0-9a-f]{4})$")
_CAPABILITY = re.compile(r"^(\d+)\.(\d+)$")


def family_compute_capability(pci_device_id: Optional[str]) -> Optional[str]:
    """"10de:128b" (GeForce GT 710, GK208B) -> "3.5"; None for an id outside every range."""
    match = _DEVICE_ID.match(str(pci_device_id or ""))
    if not match:
        return None
    device = int(match.group(1), 16)
    for first, last, capability in PCI_ID_RANGES:
        if first <= device <= last:
            return capability
    return None


def architecture(capability: Optional[str]) -> Optional[str]:
    """"3.5" -> "Kepler", "8.6" -> "Ampere", "12.0" -> "Blackwell"; None when unknown."""
    match = _CAPABILITY.match(str(capability or "").strip())
    if not match:
        return None
    number = (int(match.group(1)), int(match.group(2)))
    names = [name for first, name in ARCHITECTURES if first <= number]
    return names[-1] if names else None


def last_driver_branch(capability: Optional[str]) -> Optional[int]:
    """The newest driver branch that drives a GPU of this compute capability: 470 for
    Kepler ("3.5"), 580 for Volta ("7.0"); None for Turing and newer, or when unknown."""
    return LAST_DRIVER_BRANCH.get(architecture(capability) or "")
