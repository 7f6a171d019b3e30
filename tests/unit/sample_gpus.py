"""GPU facts as nvidia_gpu_facts returns them, with real values per card
(name as nvidia-smi prints it, PCI id, compute capability, memory), for the
rule and module tests."""
from __future__ import annotations


def gpu(index, name, device, capability, memory_mib, driver=False):
    """driver=False: as lspci reports a card before any driver (driver fields null)."""
    return {
        "index": index, "name": name, "pci_bus_id": "0000:%02x:00.0" % (index + 1),
        "pci_device_id": "10de:" + device, "compute_capability": capability, "architecture": None,
        "memory_total_mib": memory_mib, "memory_bandwidth_gbps": None,
        "bar1_total_mib": memory_mib if driver else None,
        "pcie_link_gen_current": 3 if driver else None, "pcie_link_gen_max": 3 if driver else None,
        "pcie_link_width_current": 16 if driver else None, "pcie_link_width_max": 16 if driver else None,
        "persistence_mode": True if driver else None, "temperature_c": 35 if driver else None,
        "throttle_reasons": [],
    }


def v100_pcie_32gb(index=0, driver=False):
    return gpu(index, "Tesla V100-PCIE-32GB", "1db6", "7.0", 32768, driver)


def v100s_pcie_32gb(index=0, driver=False):
    return gpu(index, "Tesla V100S-PCIE-32GB", "1df6", "7.0", 32510, driver)


def tesla_t4(index=0, driver=False):
    return gpu(index, "Tesla T4", "1eb8", "7.5", 15360, driver)


def a100(index=0, driver=False):
    return gpu(index, "NVIDIA A100-SXM4-80GB", "20b2", "8.0", 81920, driver)


def rtx_4090(index=0, driver=False):
    return gpu(index, "NVIDIA GeForce RTX 4090", "2684", "8.9", 24564, driver)


def h200(index=0, driver=False):
    return gpu(index, "NVIDIA H200", "2335", "9.0", 143771, driver)


def unknown_card(index=0):
    return gpu(index, None, "ffff", None, None)


def display_card(card):
    """A card as the facts report it beside headless GPUs: VGA class, kept out of serving."""
    return dict(card, pci_class="0300", display=True, serving=False)


def geforce_gt_710(index=0):
    """GK208B [10de:128b], a display card (lspci-nn_gt710-display_v100-pcie-16gb.txt);
    no branch from 535 on drives it, so only lspci and the family table know it."""
    return display_card(gpu(index, "GeForce GT 710", "128b", "3.5", None))


def geforce_gt_1030(index=0):
    """GP108 [10de:1d01] (kmsg_open-module-no-gsp_gt1030_10de-1d01_journal.txt), a display card."""
    return display_card(gpu(index, "GeForce GT 1030", "1d01", "6.1", None))


def tesla_k80(index=0):
    """GK210 [10de:102d]: a headless Kepler card, last driven by 470."""
    return gpu(index, "Tesla K80", "102d", "3.7", 11441)
