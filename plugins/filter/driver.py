"""Filters of the driver stage: nvcc's release, the CUDA toolkit rules, Debian's archive components and stale
initramfs images (module_utils/driver, unit-tested in tests/unit)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.v100.llm.plugins.plugin_utils.deferred import Deferred

_CUDA = Deferred("driver.cuda_version")
_RULES = Deferred("driver.stack_rules")
_DEBIAN = Deferred("driver.debian_sources")
_INITRAMFS = Deferred("driver.initramfs")


def _toolkit_request(facts: Mapping[str, Any], branch: Any, source: str, version: str = "") -> Any:
    """The stack request of the toolkit rules, for the host the facts describe."""
    return _RULES.StackRequest(distribution=facts.get("distribution", ""),
                               distribution_version=facts.get("distribution_version", ""),
                               nvidia_driver_branch=str(branch), cuda_toolkit_version=str(version or ""),
                               cuda_toolkit_source=str(source))


def cuda_toolkit_default(facts: Mapping[str, Any], branch: Any, source: str = "cuda_repo") -> str:
    """ansible_facts | cuda_toolkit_default(nvidia_driver_branch, cuda_toolkit_source) -> "12.9": the release
    preflight checks."""
    return _RULES.resolve_cuda_toolkit(_toolkit_request(facts, branch, source))


def cuda_toolkit_source_error(facts: Mapping[str, Any], source: str, version: str, branch: Any) -> str:
    """ansible_facts | cuda_toolkit_source_error(cuda_toolkit_source, cuda_toolkit_version, nvidia_driver_branch):
    why that source cannot give that toolkit here, "" when it can (stack_rules.check_cuda_toolkit_source)."""
    refusals = _RULES.check_cuda_toolkit_source(_toolkit_request(facts, branch, source, version))
    return refusals[0].message() if refusals else ""


def initramfs_stale(results: List[Mapping[str, Any]], conf: str, conf_changed_at: float, wanted: bool) -> List[str]:
    """The results of a loop of `lsinitramfs` over find's files -> kernels whose image to rebuild."""
    images = {r["item"]["path"]: {"listing": r.get("stdout", ""), "mtime": r["item"]["mtime"]} for r in results}
    return _INITRAMFS.stale_images(images, conf, float(conf_changed_at or 0), bool(wanted))


class FilterModule:
    def filters(self) -> Dict[str, Any]:
        return {
            # "...release 12.4, V12.4.131..." | nvcc_release -> "12.4" (None when absent)
            "nvcc_release": _CUDA.nvcc_release,
            "cuda_toolkit_default": cuda_toolkit_default,
            "cuda_toolkit_source_error": cuda_toolkit_source_error,
            # apt-get indextargets output | debian_missing_components(release, own_files) -> [{suite, components}]
            "debian_missing_components": _DEBIAN.missing_components,
            # lsinitramfs loop results | initramfs_stale(conf, conf ctime, wanted) -> kernels whose image to rebuild
            "initramfs_stale": initramfs_stale,
        }
