"""The GPU catalogue: V100 rows of docs/VOLTA_FACTS.md, id forms, name lookup."""

from __future__ import annotations

import dataclasses
import re

import pytest
from ansible_collections.v100.llm.plugins.module_utils.gpu.catalog import GPU_CATALOG, lookup, lookup_by_name, normalize_pci_device_id

# docs/VOLTA_FACTS.md, "GPUs" table: device -> (GiB, GB/s or None where blank/unconfirmed).
VOLTA_TABLE = {
    "1db1": (16, 900.0),
    "1df5": (16, 900.0),
    "1db3": (16, None),
    "1db4": (16, 900.0),
    "1db5": (32, 900.0),
    "1db6": (32, 900.0),
    "1df6": (32, 1134.0),
    "1db2": (16, None),
    "1db7": (32, None),
    "1db8": (32, None),
}

COMPARISON = {
    "1eb8": ("Tesla T4", "Turing", "7.5", 16, 320.0),
    "2204": ("GeForce RTX 3090", "Ampere", "8.6", 24, 936.0),
    "2684": ("GeForce RTX 4090", "Ada Lovelace", "8.9", 24, 1008.0),
    "2805": ("GeForce RTX 4060 Ti 16GB", "Ada Lovelace", "8.9", 16, 288.0),
    "20b1": ("A100 PCIe 40GB", "Ampere", "8.0", 40, 1555.0),
    "20f1": ("A100 PCIe 40GB", "Ampere", "8.0", 40, 1555.0),
    "20b0": ("A100 SXM4 40GB", "Ampere", "8.0", 40, 1555.0),
    "20b5": ("A100 PCIe 80GB", "Ampere", "8.0", 80, 1935.0),
    "20b2": ("A100 SXM4 80GB", "Ampere", "8.0", 80, 2039.0),
    "2331": ("H100 PCIe", "Hopper", "9.0", 80, 2000.0),
    "2330": ("H100 SXM5 80GB", "Hopper", "9.0", 80, 3350.0),
    "2335": ("H200 SXM 141GB", "Hopper", "9.0", 141, 4800.0),
    "233b": ("H200 NVL", "Hopper", "9.0", 141, 4800.0),
}


@pytest.mark.parametrize("device", sorted(VOLTA_TABLE))
def test_every_v100_row_is_catalogued_as_volta(device):
    model = GPU_CATALOG["10de:" + device]
    gib, bandwidth = VOLTA_TABLE[device]
    assert model.pci_device_id == "10de:" + device
    assert model.architecture == "Volta"
    assert model.compute_capability == "7.0"
    assert model.memory_mib == gib * 1024
    assert model.memory_bandwidth_gbps == bandwidth


@pytest.mark.parametrize("device", sorted(COMPARISON))
def test_comparison_gpus(device):
    name, arch, cc, gib, bandwidth = COMPARISON[device]
    model = GPU_CATALOG["10de:" + device]
    assert (model.name, model.architecture, model.compute_capability) == (name, arch, cc)
    assert model.memory_mib == gib * 1024
    assert model.memory_bandwidth_gbps == bandwidth


def test_catalogue_holds_exactly_the_listed_gpus():
    expected = {"10de:" + device for device in list(VOLTA_TABLE) + list(COMPARISON)}
    assert set(GPU_CATALOG) == expected


def test_keys_match_entries_and_fields_are_well_formed():
    for key, model in GPU_CATALOG.items():
        assert key == model.pci_device_id
        assert re.fullmatch(r"10de:[0-9a-f]{4}", key)
        assert re.fullmatch(r"\d+\.\d", model.compute_capability)
        assert model.memory_bandwidth_gbps is None or model.memory_bandwidth_gbps > 0


def test_entries_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPU_CATALOG["10de:1db6"].memory_mib = 1


@pytest.mark.parametrize(
    "value",
    [
        "10de:1db6",  # lspci -nn
        "10DE:1DB6",
        "1DB6",
        "1db6",
        "1DB610DE",  # nvidia-smi -q -x <pci_device_id>: device then vendor
        "0x1DB610DE",  # nvidia-smi --query-gpu=pci.device_id
        " 10de:1db6\n",
    ],
)
def test_lookup_accepts_the_forms_tools_print(value):
    assert lookup(value).name == "Tesla V100 PCIe 32GB"


@pytest.mark.parametrize("value", ["8086:1db6", "1DB68086", "10de:ffff", "", "GV100", "10de:1db6:00"])
def test_lookup_rejects_other_vendors_unknown_and_garbage(value):
    assert lookup(value) is None


def test_normalize_pci_device_id():
    assert normalize_pci_device_id("1DF610DE") == "10de:1df6"
    assert normalize_pci_device_id("0x20B210DE") == "10de:20b2"
    assert normalize_pci_device_id("10de:2bb1") == "10de:2bb1"  # uncatalogued ids still normalise
    assert normalize_pci_device_id("8086:6f04") is None


def test_recorded_nvidia_smi_device_ids_resolve():
    # <pci_device_id> values of the three recorded nvidia-smi -q -x files.
    assert lookup("1DF610DE").name == "Tesla V100S PCIe 32GB"
    assert lookup("20B210DE").compute_capability == "8.0"
    assert lookup("1EB810DE").architecture == "Turing"


@pytest.mark.parametrize(
    ("name", "device"),
    [
        ("GV100GL [Tesla V100 PCIe 16GB]", "10de:1db4"),  # plain lspci (Hyper-V recording)
        ("NVIDIA Corporation GV100GL [Tesla V100 PCIe 16GB] (rev a1)", "10de:1db4"),
        ("Tesla V100S-PCIE-32GB", "10de:1df6"),  # nvidia-smi product_name
        ("NVIDIA A100-SXM4-80GB", "10de:20b2"),
        ("Tesla T4", "10de:1eb8"),
        ("tesla v100 pcie 32gb", "10de:1db6"),
    ],
)
def test_lookup_by_name(name, device):
    assert lookup_by_name(name).pci_device_id == device


def test_lookup_by_name_shared_name_gives_same_specs():
    # "Tesla V100-SXM2-16GB" as in the recorded nvidia-smi table; 1db1 and 1df5 share it.
    model = lookup_by_name("Tesla V100-SXM2-16GB")
    assert model.pci_device_id in ("10de:1db1", "10de:1df5")
    assert (model.compute_capability, model.memory_mib, model.memory_bandwidth_gbps) == ("7.0", 16384, 900.0)


@pytest.mark.parametrize(
    "name",
    [
        "AD106 [GeForce RTX 4060 Ti]",  # pci.ids name of 2803, the 8 GB card: no guess
        "GV100 [TITAN V]",
        "",
        "[]",
    ],
)
def test_lookup_by_name_does_not_guess(name):
    assert lookup_by_name(name) is None
