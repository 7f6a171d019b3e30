"""Parsers and merge, fed only the real recorded outputs in tests/fixtures/recorded."""

from __future__ import annotations

import re

import pytest
from ansible_collections.v100.llm.plugins.module_utils.gpu import inventory as gpu_inventory
from ansible_collections.v100.llm.plugins.module_utils.gpu.inventory import (
    build_gpu_facts,
    is_driver_unavailable,
    is_unknown_query_field,
    normalize_bus_id,
    parse_compute_capabilities,
    parse_lspci,
    parse_nvidia_smi_xml,
)
from conftest import RECORDED

LSPCI_X6 = "lspci-nn_iommu-groups_v100-pcie-16gb_x6.txt"
LSPCI_HYPERV = "lspci_hyperv_v100-pcie-16gb_full.txt"
LSPCI_V_P3 = "lspci-v_v100-sxm2-16gb_aws-p3.txt"
SMI_V100S = "nvidia-smi-q-x_v100s-pcie-32gb_x8_460.73.01.xml"
SMI_A100 = "nvidia-smi-q-x_a100-sxm4-80gb_535.54.03.xml"
SMI_T4 = "nvidia-smi-q-x_tesla-t4_x1_515.105.01.xml"
SMI_FAILED = "nvidia-smi_failed-to-communicate.txt"
SMI_H200 = "nvidia-smi-q-x_h200_x1_580.159.04.xml"
LSPCI_GT710_V100 = "lspci-nn_gt710-display_v100-pcie-16gb.txt"
CAP_H200 = "nvidia-smi_query-gpu-compute-cap_h200_580.159.04.csv"
CAP_UNSUPPORTED_470 = "nvidia-smi_query-gpu-compute-cap_unsupported_470.256.02.txt"
CAP_UNKNOWN_FIELD_580 = "nvidia-smi_query-gpu-unknown-field_580.159.04.txt"

DRIVER_ONLY_KEYS = {
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
}
GPU_KEYS = {
    "index",
    "name",
    "pci_bus_id",
    "pci_device_id",
    "pci_class",
    "display",
    "serving",
    "architecture",
    "compute_capability",
    "compute_capability_source",
    "memory_total_mib",
    "memory_bandwidth_gbps",
    "seen_by_lspci",
    "seen_by_driver",
} | DRIVER_ONLY_KEYS


def recorded(name: str) -> str:
    return (RECORDED / name).read_text()


# --- lspci ---------------------------------------------------------------


def test_lspci_iommu_group_listing_six_v100_pcie_16gb():
    gpus = parse_lspci(recorded(LSPCI_X6))
    assert [gpu["pci_bus_id"] for gpu in gpus] == [
        "0000:27:00.0",
        "0000:28:00.0",
        "0000:44:00.0",
        "0000:a3:00.0",
        "0000:c3:00.0",
        "0000:c4:00.0",
    ]
    assert {gpu["pci_device_id"] for gpu in gpus} == {"10de:1db4"}
    assert {gpu["name"] for gpu in gpus} == {"Tesla V100 PCIe 16GB"}


def test_lspci_plain_hyperv_listing_keeps_domain_and_finds_id_by_name():
    # No [vvvv:dddd] ids; the Intel bridges and the Hyper-V VGA are not NVIDIA.
    assert parse_lspci(recorded(LSPCI_HYPERV)) == [
        {"pci_bus_id": "0001:00:00.0", "pci_device_id": "10de:1db4", "name": "Tesla V100 PCIe 16GB",
         "pci_class": "0302"}  # from the class name "3D controller"
    ]


def test_lspci_verbose_block_reads_the_device_line_only():
    gpus = parse_lspci(recorded(LSPCI_V_P3))
    assert len(gpus) == 1  # "Subsystem: NVIDIA Corporation Device 1212" is not a device
    assert gpus[0]["pci_bus_id"] == "0000:00:1e.0"
    assert gpus[0]["name"] == "Tesla V100 SXM2 16GB"
    assert gpus[0]["pci_device_id"] in ("10de:1db1", "10de:1df5")  # both ids carry that name


def test_lspci_of_non_lspci_text_finds_nothing():
    assert parse_lspci(recorded(SMI_FAILED)) == []
    assert parse_lspci("") == []


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("27:00.0", "0000:27:00.0"),  # lspci without -D
        ("0001:00:00.0", "0001:00:00.0"),  # Hyper-V domain
        ("00000000:00:0D.0", "0000:00:0d.0"),  # nvidia-smi
        ("00000000:01:00.0", "0000:01:00.0"),
        ("10000:e1:00.0", "10000:e1:00.0"),  # VMD domains exceed four digits
    ],
)
def test_normalize_bus_id(raw, normal):
    assert normalize_bus_id(raw) == normal


# --- nvidia-smi -q -x ----------------------------------------------------


@pytest.mark.parametrize("path", sorted(RECORDED.glob("nvidia-smi-q-x_*.xml")), ids=lambda p: p.name)
def test_every_recorded_xml_parses(path):
    smi = parse_nvidia_smi_xml(path.read_text())
    assert smi["driver_version"] and smi["cuda_version"]
    assert smi["gpus"]
    for gpu in smi["gpus"]:
        # Domain 0000 on bare metal; Hyper-V guests have others (the K80 recording's 1580).
        assert re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", gpu["pci_bus_id"])
        assert gpu["pci_device_id"].startswith("10de:")
        assert isinstance(gpu["memory_total_mib"], int)
        assert isinstance(gpu["bar1_total_mib"], int)
        assert isinstance(gpu["throttle_reasons"], list)


def test_smi_v100s_eight_cards_460():
    smi = parse_nvidia_smi_xml(recorded(SMI_V100S))
    assert (smi["driver_version"], smi["cuda_version"], smi["attached_gpus"]) == ("460.73.01", "11.2", 8)
    gpus = smi["gpus"]
    assert len(gpus) == 8
    assert [gpu["pci_bus_id"] for gpu in gpus] == [f"0000:00:{slot:02x}.0" for slot in range(0x0D, 0x15)]
    assert [gpu["minor_number"] for gpu in gpus] == list(range(8))
    assert [gpu["temperature_c"] for gpu in gpus] == [66, 58, 57, 61, 59, 64, 61, 57]
    for gpu in gpus:
        assert gpu["name"] == "Tesla V100S-PCIE-32GB"
        assert gpu["pci_device_id"] == "10de:1df6"
        assert gpu["memory_total_mib"] == 32510
        assert gpu["bar1_total_mib"] == 32768
        assert (gpu["pcie_link_gen_current"], gpu["pcie_link_gen_max"]) == (3, 3)
        assert (gpu["pcie_link_width_current"], gpu["pcie_link_width_max"]) == (16, 16)
        assert gpu["persistence_mode"] is False
        assert gpu["power_limit_w"] == 250.0
    assert gpus[0]["uuid"] == "GPU-76098dc1-d3bc-9a1b-7ea6-f7b48837829e"
    # Old element names (clocks_throttle_reasons): GPUs 3 and 6 hit the software power cap.
    assert [gpu["throttle_reasons"] for gpu in gpus] == [[], [], [], ["sw_power_cap"], [], [], ["sw_power_cap"], []]


def test_smi_a100_535_newer_element_names_and_mig():
    smi = parse_nvidia_smi_xml(recorded(SMI_A100))
    assert (smi["driver_version"], smi["cuda_version"]) == ("535.54.03", "12.2")
    assert smi["attached_gpus"] == 4  # the file says 4 but holds one <gpu>
    (gpu,) = smi["gpus"]
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu["pci_bus_id"] == "0000:01:00.0"
    assert gpu["pci_device_id"] == "10de:20b2"
    assert gpu["minor_number"] == 1
    # The whole GPU, not one of its MIG devices (19968 MiB, BAR1 32767 MiB).
    assert gpu["memory_total_mib"] == 81920
    assert gpu["bar1_total_mib"] == 131072
    assert (gpu["pcie_link_gen_current"], gpu["pcie_link_gen_max"]) == (4, 4)
    assert (gpu["pcie_link_width_current"], gpu["pcie_link_width_max"]) == (16, 16)
    assert gpu["throttle_reasons"] == []  # clocks_event_reasons, all "Not Active"
    assert gpu["power_limit_w"] == 500.0  # gpu_power_readings/current_power_limit
    assert gpu["temperature_c"] == 27


def test_smi_t4_515_narrow_link_and_small_bar1():
    smi = parse_nvidia_smi_xml(recorded(SMI_T4))
    assert (smi["driver_version"], smi["cuda_version"], smi["attached_gpus"]) == ("515.105.01", "11.7", 1)
    (gpu,) = smi["gpus"]
    assert (gpu["name"], gpu["pci_device_id"], gpu["pci_bus_id"]) == ("Tesla T4", "10de:1eb8", "0000:00:1e.0")
    assert (gpu["memory_total_mib"], gpu["bar1_total_mib"]) == (15360, 256)
    assert (gpu["pcie_link_width_current"], gpu["pcie_link_width_max"]) == (8, 16)
    assert (gpu["temperature_c"], gpu["power_limit_w"]) == (40, 70.0)


def test_driver_unavailable_text():
    assert is_driver_unavailable(recorded(SMI_FAILED))
    assert not is_driver_unavailable(recorded(SMI_T4))
    assert not is_driver_unavailable("")


# --- build_gpu_facts -------------------------------------------------------


def test_facts_before_any_driver_come_from_lspci_and_the_catalogue():
    facts = build_gpu_facts(parse_lspci(recorded(LSPCI_X6)), None)
    assert facts["nvidia_gpu_count"] == 6
    assert facts["nvidia_driver_version"] is None
    assert facts["nvidia_driver_cuda_version"] is None
    gpus = facts["nvidia_gpus"]
    assert [gpu["index"] for gpu in gpus] == list(range(6))
    assert gpus[0]["pci_bus_id"] == "0000:27:00.0"
    for gpu in gpus:
        assert set(gpu) == GPU_KEYS
        assert (gpu["architecture"], gpu["compute_capability"]) == ("Volta", "7.0")
        assert gpu["compute_capability_source"] == "catalogue"
        assert (gpu["pci_class"], gpu["display"], gpu["serving"]) == ("0302", False, True)
        assert gpu["memory_total_mib"] == 16384  # catalogue value, no driver to ask
        assert gpu["memory_bandwidth_gbps"] == 900.0
        assert (gpu["seen_by_lspci"], gpu["seen_by_driver"]) == (True, False)
        assert all(gpu[key] is None for key in DRIVER_ONLY_KEYS)


def test_facts_without_lspci_come_from_nvidia_smi():
    facts = build_gpu_facts([], parse_nvidia_smi_xml(recorded(SMI_V100S)))
    assert facts["nvidia_gpu_count"] == 8
    assert (facts["nvidia_driver_version"], facts["nvidia_driver_cuda_version"]) == ("460.73.01", "11.2")
    first = facts["nvidia_gpus"][0]
    assert set(first) == GPU_KEYS
    assert first["index"] == 0
    assert first["pci_bus_id"] == "0000:00:0d.0"
    assert first["memory_total_mib"] == 32510  # nvidia-smi's value wins over the catalogue's 32768
    assert (first["compute_capability"], first["memory_bandwidth_gbps"]) == ("7.0", 1134.0)
    assert first["bar1_total_mib"] == 32768
    assert (first["seen_by_lspci"], first["seen_by_driver"]) == (False, True)
    # 460's XML has no PCI class: unknown, and so serving.
    assert (first["pci_class"], first["display"], first["serving"]) == (None, None, True)
    assert facts["nvidia_serving_gpu_indexes"] == list(range(8))
    assert facts["nvidia_gpus"][3]["throttle_reasons"] == ["sw_power_cap"]


def test_count_follows_gpus_present_not_attached_gpus():
    facts = build_gpu_facts([], parse_nvidia_smi_xml(recorded(SMI_A100)))
    assert facts["nvidia_gpu_count"] == 1
    gpu = facts["nvidia_gpus"][0]
    assert (gpu["architecture"], gpu["compute_capability"], gpu["memory_bandwidth_gbps"]) == ("Ampere", "8.0", 2039.0)


def test_merge_matches_by_bus_id_and_appends_gpus_the_driver_did_not_see():
    # Two real recordings from different hosts, combined to exercise the matching:
    # the AWS lspci -v GPU and the T4 share bus 0000:00:1e.0; the six IOMMU-listed
    # V100s have no nvidia-smi entry.
    lspci = parse_lspci(recorded(LSPCI_V_P3)) + parse_lspci(recorded(LSPCI_X6))
    facts = build_gpu_facts(lspci, parse_nvidia_smi_xml(recorded(SMI_T4)))
    gpus = facts["nvidia_gpus"]
    assert facts["nvidia_gpu_count"] == 7
    assert [gpu["index"] for gpu in gpus] == list(range(7))
    matched = gpus[0]
    assert matched["pci_bus_id"] == "0000:00:1e.0"
    assert (matched["seen_by_lspci"], matched["seen_by_driver"]) == (True, True)
    # nvidia-smi's identity wins when both answer.
    assert (matched["name"], matched["pci_device_id"]) == ("Tesla T4", "10de:1eb8")
    assert matched["compute_capability"] == "7.5"
    assert matched["memory_total_mib"] == 15360
    unbound = gpus[1:]
    assert [gpu["pci_bus_id"] for gpu in unbound] == [
        "0000:27:00.0",
        "0000:28:00.0",
        "0000:44:00.0",
        "0000:a3:00.0",
        "0000:c3:00.0",
        "0000:c4:00.0",
    ]
    assert all(not gpu["seen_by_driver"] and gpu["bar1_total_mib"] is None for gpu in unbound)
    assert sum(gpu["seen_by_lspci"] for gpu in gpus) == 7
    assert sum(gpu["seen_by_driver"] for gpu in gpus) == 1


def test_no_gpus_at_all():
    assert build_gpu_facts([], None) == {
        "nvidia_gpus": [],
        "nvidia_gpu_count": 0,
        "nvidia_serving_gpu_indexes": [],
        "nvidia_serving_gpu_count": 0,
        "nvidia_driver_version": None,
        "nvidia_driver_cuda_version": None,
    }


def test_h200_recorded_on_the_lent_gpu_machine():
    """nvsmi_device_v13 from a real H200 (580.159.04), a host without lspci."""
    smi = parse_nvidia_smi_xml((RECORDED / "nvidia-smi-q-x_h200_x1_580.159.04.xml").read_text())
    facts = build_gpu_facts([], smi)
    assert (facts["nvidia_driver_version"], facts["nvidia_driver_cuda_version"]) == ("580.159.04", "13.0")
    (gpu,) = facts["nvidia_gpus"]
    assert (gpu["name"], gpu["pci_device_id"], gpu["compute_capability"]) == ("NVIDIA H200", "10de:2335", "9.0")
    assert (gpu["memory_total_mib"], gpu["bar1_total_mib"]) == (143771, 262144)
    assert (gpu["pcie_link_gen_max"], gpu["pcie_link_width_max"], gpu["persistence_mode"]) == (5, 16, True)
    assert gpu["seen_by_driver"] and not gpu["seen_by_lspci"]
    # 580 prints the PCI class (base 3, sub 2), so a host without lspci still knows it.
    assert (gpu["pci_class"], gpu["display"], gpu["serving"]) == ("0302", False, True)


# --- nvidia-smi --query-gpu=pci.bus_id,compute_cap ----------------------------


def test_compute_capabilities_from_the_h200_query():
    assert parse_compute_capabilities(recorded(CAP_H200)) == {"0000:00:06.0": "9.0"}


@pytest.mark.parametrize("name", [CAP_UNSUPPORTED_470, CAP_UNKNOWN_FIELD_580, SMI_H200, SMI_FAILED])
def test_compute_capabilities_from_other_output_are_none(name):
    assert parse_compute_capabilities(recorded(name)) == {}


def test_an_old_nvidia_smi_refusing_the_field_is_recognised():
    assert is_unknown_query_field(recorded(CAP_UNSUPPORTED_470))  # 470.256.02, the field we ask for
    assert is_unknown_query_field(recorded(CAP_UNKNOWN_FIELD_580))  # 580 with a field it lacks: same text
    assert not is_unknown_query_field(recorded(CAP_H200))
    assert not is_unknown_query_field(recorded(SMI_FAILED))


def test_driver_capability_for_a_gpu_the_catalogue_lacks(monkeypatch):
    # The H200 is catalogued; without its entry the driver's answer is what the facts carry.
    smi = parse_nvidia_smi_xml(recorded(SMI_H200))
    capabilities = parse_compute_capabilities(recorded(CAP_H200))
    assert build_gpu_facts([], smi, capabilities)["nvidia_gpus"][0]["compute_capability_source"] == "catalogue"
    monkeypatch.setattr(gpu_inventory, "lookup", lambda device_id: None)
    (gpu,) = build_gpu_facts([], smi, capabilities)["nvidia_gpus"]
    assert (gpu["compute_capability"], gpu["compute_capability_source"], gpu["architecture"]) == (
        "9.0", "driver", "Hopper")
    assert gpu["memory_bandwidth_gbps"] is None  # only the catalogue knows it


# --- a display card beside the V100 --------------------------------------------


def test_lspci_keeps_the_class_and_skips_the_display_card_audio():
    gpus = parse_lspci(recorded(LSPCI_GT710_V100))
    assert gpus == [
        {"pci_bus_id": "0000:04:00.0", "pci_device_id": "10de:128b", "name": "GeForce GT 710", "pci_class": "0300"},
        {"pci_bus_id": "0000:09:00.0", "pci_device_id": "10de:1db4", "name": "Tesla V100 PCIe 16GB",
         "pci_class": "0302"},
    ]


def test_display_card_gets_its_family_capability_and_stays_out_of_serving():
    facts = build_gpu_facts(parse_lspci(recorded(LSPCI_GT710_V100)), None)
    gt710, v100 = facts["nvidia_gpus"]
    assert (gt710["index"], gt710["name"], gt710["display"], gt710["serving"]) == (0, "GeForce GT 710", True, False)
    # Not catalogued: GK208B's device id range gives Kepler 3.5; nothing else is known without a driver.
    assert (gt710["compute_capability"], gt710["compute_capability_source"], gt710["architecture"]) == (
        "3.5", "pci_id_family", "Kepler")
    assert (gt710["memory_total_mib"], gt710["memory_bandwidth_gbps"]) == (None, None)
    assert (v100["index"], v100["display"], v100["serving"], v100["compute_capability"]) == (1, False, True, "7.0")
    assert facts["nvidia_gpu_count"] == 2
    assert (facts["nvidia_serving_gpu_indexes"], facts["nvidia_serving_gpu_count"]) == ([1], 1)


def test_display_cards_alone_serve():
    # A box whose only GPUs have a display output (a workstation card) serves on them.
    (gt710,) = build_gpu_facts(parse_lspci(recorded(LSPCI_GT710_V100))[:1], None)["nvidia_gpus"]
    assert (gt710["display"], gt710["serving"]) == (True, True)


def test_an_id_outside_every_family_stays_unknown():
    # GB112 (10de:3200) is in pci.ids, but NVIDIA's capability page does not place it.
    lspci = [{"pci_bus_id": "0000:65:00.0", "pci_device_id": "10de:3200", "name": "GB112", "pci_class": "0302"}]
    (gpu,) = build_gpu_facts(lspci, None)["nvidia_gpus"]
    assert (gpu["compute_capability"], gpu["compute_capability_source"], gpu["architecture"]) == (None, None, None)
    assert gpu["serving"] is True
