# -*- coding: utf-8 -*-
"""Host problems worth a warning before provisioning, each with advice.

Warnings, not refusals: the run can go on, but the user should know. Pure
functions over the GPU facts (nvidia_gpu_facts) and a `host` dict:

    kernel_headers_available: bool | None headers for the running kernel, installed or in apt
    nouveau_loaded: bool | None           nouveau in /proc/modules
    disk_free_mib: int | None             free space where the toolkit installs

None means "not checked" and never warns. Every function returns a list of
short strings (empty when all is well).
"""
from __future__ import annotations

from typing import Any, List, Mapping, Sequence

from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import gpu_label

Gpu = Mapping[str, Any]
Host = Mapping[str, Any]

# Active clock-event reasons (nvidia-smi -q) that mean the card is held back
# by heat or power, with what to check. gpu_idle, sync_boost and the
# *_clocks_setting reasons are normal and not listed.
THROTTLE_ADVICE = {
    "hw_thermal_slowdown": "the GPU is too hot: a passively cooled V100 needs forced server airflow through its fins",
    "sw_thermal_slowdown": "the GPU is running hot: improve the airflow through the card",
    "hw_power_brake_slowdown": "an external power-brake signal is asserted: check the PSU and the PCIe power cables",
    "hw_slowdown": "hardware slowdown (heat or power): check cooling, the PSU and both PCIe power connectors",
    "sw_power_cap": "clocks are held at the power limit; at idle that points to a low power limit "
                    "(nvidia-smi -q -d POWER)",
}


def kernel_headers_warnings(host: Host) -> List[str]:
    if host.get("kernel_headers_available") is not False:
        return []
    return ["apt has no headers for the running kernel (Debian's archive keeps the current kernels' only), so no "
            "module can be built for it: the driver stage builds it for the kernel GRUB boots next (bringing "
            "linux-image-<flavour> to the current kernel when no installed kernel has headers) and reboots into it."]


def nouveau_warnings(host: Host) -> List[str]:
    if host.get("nouveau_loaded") is not True:
        return []
    return ["nouveau is loaded and holds the GPU: the nouveau role blacklists it (blacklist nouveau, "
            "options nouveau modeset=0), runs update-initramfs -u and reboots before the NVIDIA driver goes in."]


def disk_warnings(host: Host, disk_required_mib: int) -> List[str]:
    free = host.get("disk_free_mib")
    if free is None or not disk_required_mib or free >= disk_required_mib:
        return []
    return ["Only %d MiB of disk is free where %d MiB is needed (CUDA toolkit, llama.cpp build, vLLM venv, "
            "models): free space or point the install and model directories at a larger disk."
            % (free, disk_required_mib)]


def pcie_link_warnings(gpus: Sequence[Gpu]) -> List[str]:
    """A link narrower than the card's maximum. Generation alone is not a signal:
    an idle GPU drops its link generation to save power, but never its width."""
    warnings = []
    for gpu in gpus:
        width, width_max = gpu.get("pcie_link_width_current"), gpu.get("pcie_link_width_max")
        if width is None or width_max is None or width >= width_max:
            continue
        gen, gen_max = gpu.get("pcie_link_gen_current"), gpu.get("pcie_link_gen_max")
        speed = " Gen%s (max Gen%s)" % (gen, gen_max) if gen is not None and gen_max is not None else ""
        warnings.append(
            "%s runs at PCIe x%d%s of x%d: a x4/x8 slot, a riser or chipset lanes (on X99 boards the lower "
            "slots often hang off the chipset). Loading models and multi-GPU splits get slower; move it to a "
            "full x16 CPU slot." % (gpu_label(gpu), width, speed, width_max))
    return warnings


def bar1_warnings(gpus: Sequence[Gpu]) -> List[str]:
    """BAR1 below half the card's memory: the BIOS did not map the full BAR.

    A V100's BAR1 is as large as its memory (VOLTA_FACTS.md, GPUs), which needs
    Above-4G decoding.
    """
    warnings = []
    for gpu in gpus:
        bar1, memory = gpu.get("bar1_total_mib"), gpu.get("memory_total_mib")
        if bar1 is None or not memory or bar1 * 2 >= memory:
            continue
        warnings.append(
            "%s has a %d MiB BAR1 for %d MiB of memory: Above 4G Decoding is off in the BIOS (or the slot "
            "cannot map a large BAR); enable it." % (gpu_label(gpu), bar1, memory))
    return warnings


def throttle_warnings(gpus: Sequence[Gpu]) -> List[str]:
    warnings = []
    for gpu in gpus:
        for reason in gpu.get("throttle_reasons") or []:
            if reason in THROTTLE_ADVICE:
                warnings.append("%s is throttled (%s): %s." % (gpu_label(gpu), reason, THROTTLE_ADVICE[reason]))
    return warnings


def unknown_gpu_warnings(gpus: Sequence[Gpu]) -> List[str]:
    """The compatibility rules skip a serving card whose compute capability is unknown (display cards are
    warned about by stack_rules.display_gpu_warnings)."""
    return ["%s has no known compute capability (not in the GPU catalogue, not reported by the driver, PCI id "
            "outside the chip families of gpu/catalog.py): the compatibility checks cannot vouch for it; set "
            "llama_cpp_cuda_architectures explicitly." % gpu_label(gpu)
            for gpu in gpus if not gpu.get("compute_capability")]


def readiness_warnings(gpus: Sequence[Gpu], host: Host, disk_required_mib: int = 0) -> List[str]:
    """All of the above, host first, then per GPU."""
    return (kernel_headers_warnings(host) + nouveau_warnings(host)
            + disk_warnings(host, disk_required_mib) + pcie_link_warnings(gpus) + bar1_warnings(gpus)
            + throttle_warnings(gpus) + unknown_gpu_warnings(gpus))
