"""host_readiness: each warning fires on its signal, stays quiet on a healthy or unchecked host."""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.module_utils.host.readiness import (
    bar1_warnings,
    disk_warnings,
    kernel_headers_warnings,
    nouveau_warnings,
    pcie_link_warnings,
    readiness_warnings,
    throttle_warnings,
    unknown_gpu_warnings,
)

HEALTHY_HOST = {"kernel_headers_available": True, "nouveau_loaded": False,
                "disk_free_mib": 200000}
UNCHECKED_HOST = {"kernel_headers_available": None, "nouveau_loaded": None,
                  "disk_free_mib": None}


def v100_pcie_32gb(index=0, **driver_fields):
    """Healthy values as nvidia-smi reports a V100 PCIe 32GB in a x16 Gen3 slot."""
    gpu = {
        "index": index, "name": "Tesla V100-PCIE-32GB", "pci_bus_id": "0000:%02x:00.0" % (index + 3),
        "pci_device_id": "10de:1db6", "compute_capability": "7.0", "architecture": "Volta",
        "memory_total_mib": 32768, "memory_bandwidth_gbps": 900, "bar1_total_mib": 32768,
        "pcie_link_gen_current": 3, "pcie_link_gen_max": 3, "pcie_link_width_current": 16,
        "pcie_link_width_max": 16, "persistence_mode": True, "temperature_c": 35, "throttle_reasons": [],
    }
    gpu.update(driver_fields)
    return gpu


def v100_before_driver(index=0):
    """Before the driver: only lspci and the catalogue know the card."""
    return v100_pcie_32gb(index, bar1_total_mib=None, pcie_link_gen_current=None, pcie_link_gen_max=None,
                          pcie_link_width_current=None, pcie_link_width_max=None, persistence_mode=None,
                          temperature_c=None, throttle_reasons=None)


def test_healthy_and_unchecked_hosts_have_no_warnings():
    assert readiness_warnings([v100_pcie_32gb(0), v100_pcie_32gb(1)], HEALTHY_HOST, 50000) == []
    assert readiness_warnings([v100_before_driver()], UNCHECKED_HOST, 50000) == []
    assert readiness_warnings([], {}, 0) == []


def test_running_kernel_without_headers_in_apt():
    assert kernel_headers_warnings({"kernel_headers_available": True}) == []
    [warning] = kernel_headers_warnings({"kernel_headers_available": False})
    assert "apt has no headers for the running kernel" in warning and "reboots into it" in warning


def test_nouveau_loaded():
    assert nouveau_warnings({"nouveau_loaded": False}) == []
    [warning] = nouveau_warnings({"nouveau_loaded": True})
    assert "blacklist nouveau" in warning and "update-initramfs -u" in warning and "reboots" in warning


def test_low_disk_at_the_boundary():
    assert disk_warnings({"disk_free_mib": 20000}, 20000) == []
    [warning] = disk_warnings({"disk_free_mib": 19999}, 20000)
    assert warning.startswith("Only 19999 MiB of disk is free where 20000 MiB is needed")
    assert disk_warnings({"disk_free_mib": 10}, 0) == []


def test_narrow_pcie_link_warns_with_its_width_and_generation():
    [warning] = pcie_link_warnings([v100_pcie_32gb(0), v100_pcie_32gb(1, pcie_link_width_current=4,
                                                                      pcie_link_gen_current=2)])
    assert warning.startswith("GPU 1 (Tesla V100-PCIE-32GB, 0000:04:00.0) runs at PCIe x4 Gen2 (max Gen3) of x16")
    assert "riser" in warning and "X99" in warning


def test_an_idle_link_at_a_lower_generation_but_full_width_is_not_a_problem():
    assert pcie_link_warnings([v100_pcie_32gb(pcie_link_gen_current=1)]) == []


def test_small_bar1_means_above_4g_decoding_is_off():
    assert bar1_warnings([v100_pcie_32gb(bar1_total_mib=16384)]) == []  # exactly half: not flagged
    [warning] = bar1_warnings([v100_pcie_32gb(bar1_total_mib=256)])
    assert "256 MiB BAR1 for 32768 MiB of memory" in warning and "Above 4G Decoding is off" in warning


def test_heat_and_power_throttling_warn_idle_does_not():
    assert throttle_warnings([v100_pcie_32gb(throttle_reasons=["gpu_idle", "sync_boost"])]) == []
    warnings = throttle_warnings([v100_pcie_32gb(throttle_reasons=["gpu_idle", "hw_thermal_slowdown",
                                                                   "sw_power_cap"])])
    assert len(warnings) == 2
    assert "throttled (hw_thermal_slowdown)" in warnings[0] and "airflow" in warnings[0]
    assert "throttled (sw_power_cap)" in warnings[1] and "power limit" in warnings[1]


def test_cards_missing_from_the_catalogue():
    unknown = {"index": 2, "name": None, "pci_device_id": "10de:ffff", "pci_bus_id": "0000:81:00.0",
               "compute_capability": None}
    [warning] = unknown_gpu_warnings([v100_pcie_32gb(), unknown])
    assert warning.startswith("GPU 2 (10de:ffff, 0000:81:00.0) has no known compute capability")


def test_readiness_lists_host_problems_before_gpu_problems():
    host = {"kernel_headers_available": False, "nouveau_loaded": True, "disk_free_mib": 1}
    warnings = readiness_warnings([v100_pcie_32gb(pcie_link_width_current=8, bar1_total_mib=256,
                                                  throttle_reasons=["hw_slowdown"])], host, 100)
    assert [w.split(" ")[0] for w in warnings] == ["apt", "nouveau", "Only", "GPU", "GPU", "GPU"]
