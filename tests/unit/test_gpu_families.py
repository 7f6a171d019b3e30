"""gpu/catalog.py, its chip families: compute capability from the PCI device id's chip family, architecture, last driver branch.

Device ids are real (pci.ids and the recordings in tests/fixtures/recorded); each
expected value is NVIDIA's (developer.nvidia.com/cuda-gpus, /cuda-legacy-gpus).
"""
from __future__ import annotations

import pytest

from ansible_collections.v100.llm.plugins.module_utils.gpu.catalog import GPU_CATALOG
from ansible_collections.v100.llm.plugins.module_utils.gpu.catalog import (
    PCI_ID_RANGES,
    architecture,
    family_compute_capability,
    last_driver_branch,
)


def test_ranges_are_sorted_and_do_not_overlap():
    assert all(first <= last for first, last, _ in PCI_ID_RANGES)
    assert all(a[1] < b[0] for a, b in zip(PCI_ID_RANGES, PCI_ID_RANGES[1:]))


@pytest.mark.parametrize("device_id", sorted(GPU_CATALOG))
def test_every_catalogue_card_falls_in_its_own_family(device_id):
    assert family_compute_capability(device_id) == GPU_CATALOG[device_id].compute_capability


@pytest.mark.parametrize("device_id, card, capability", [
    ("10de:128b", "GeForce GT 710 (GK208B; lspci-nn_gt710-display_v100-pcie-16gb.txt)", "3.5"),
    ("10de:1d01", "GeForce GT 1030 (GP108; kmsg_open-module-no-gsp_gt1030_10de-1d01_journal.txt)", "6.1"),
    ("10de:0fc1", "GeForce GT 640 (GK107)", "3.0"),
    ("10de:1288", "GeForce GT 720 (GK208B)", "3.5"),
    ("10de:0f02", "GeForce GT 730 (GF108: the Fermi one)", "2.1"),
    ("10de:1287", "GeForce GT 730 (GK208B: the Kepler one)", "3.5"),
    ("10de:0a65", "GeForce 210 (GT218)", "1.2"),
    ("10de:06fd", "Quadro NVS 295 (G98)", "1.1"),
    ("10de:102d", "Tesla K80 (GK210)", "3.7"),
    ("10de:1380", "GeForce GTX 750 Ti (GM107)", "5.0"),
    ("10de:13f2", "Tesla M60 (GM204)", "5.2"),
    ("10de:1b38", "Tesla P40 (GP102)", "6.1"),
    ("10de:15f8", "Tesla P100 PCIe 16GB (GP100)", "6.0"),
    ("10de:1d81", "TITAN V (GV100)", "7.0"),
    ("10de:1e04", "GeForce RTX 2080 Ti (TU102)", "7.5"),
    ("10de:2187", "GeForce GTX 1650 SUPER (TU116)", "7.5"),
    ("10de:2236", "A10 (GA102)", "8.6"),
    ("10de:27b8", "L4 (AD104)", "8.9"),
    ("10de:2901", "B200 (GB100)", "10.0"),
    ("10de:3182", "B300 SXM6 AC (GB110)", "10.3"),
    ("10de:2b85", "GeForce RTX 5090 (GB202)", "12.0"),
])
def test_family_lookups(device_id, card, capability):
    assert family_compute_capability(device_id) == capability, card


@pytest.mark.parametrize("device_id", [
    "10de:3200",  # GB112: in pci.ids, not on NVIDIA's capability page
    "10de:2b00",  # Jetson AGX Thor (GB10B): not a PCIe card
    "10de:0866",  # C79 [GeForce 9400M G], a chipset IGP, between two ranges
    "10de:ffff",
    "8086:1db4",  # not NVIDIA
    "1db4",  # not the facts' form
    "",
    None,
])
def test_ids_outside_every_range_are_unknown(device_id):
    assert family_compute_capability(device_id) is None


@pytest.mark.parametrize("capability, name", [
    ("1.2", "Tesla"), ("2.1", "Fermi"), ("3.5", "Kepler"), ("3.7", "Kepler"), ("5.2", "Maxwell"),
    ("6.1", "Pascal"), ("7.0", "Volta"), ("7.2", "Volta"), ("7.5", "Turing"), ("8.0", "Ampere"),
    ("8.7", "Ampere"), ("8.9", "Ada Lovelace"), ("9.0", "Hopper"), ("10.0", "Blackwell"), ("12.0", "Blackwell"),
])
def test_architecture_from_the_capability(capability, name):
    assert architecture(capability) == name


@pytest.mark.parametrize("capability", [None, "", "0.9", "seven", "7"])
def test_architecture_of_nothing_known_is_none(capability):
    assert architecture(capability) is None


@pytest.mark.parametrize("capability, branch", [
    ("1.2", 340), ("2.1", 390), ("3.0", 470), ("3.5", 470), ("3.7", 470),
    ("5.0", 580), ("6.1", 580), ("7.0", 580),
    ("7.5", None), ("8.6", None), ("12.0", None), (None, None),
])
def test_last_driver_branch(capability, branch):
    assert last_driver_branch(capability) == branch
