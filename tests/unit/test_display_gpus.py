"""Acceptance: a display card beside the V100 is reported and kept out of serving, end to end.

The host is a real one (tests/fixtures/recorded/lspci-nn_gt710-display_v100-pcie-16gb.txt):
a GeForce GT 710 (Kepler, VGA) at 04:00.0 for the screen and a Tesla V100 PCIe 16GB at
09:00.0. From its facts: the llama.cpp build targets the V100 only, preflight passes on
535 and warns that 535 does not drive the GT 710, the services' defaults pick the V100,
and the role defaults that count GPUs count the V100 only.
"""
from __future__ import annotations

import yaml
from jinja2.nativetypes import NativeEnvironment

from ansible_collections.v100.llm.plugins.module_utils.gpu.inventory import build_gpu_facts, parse_lspci
from ansible_collections.v100.llm.plugins.module_utils.llama.build import resolve_architectures
from sample_llama_server import llama_server_settings, planned
from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import StackRequest, check_stack, resolve_cuda_architectures, stack_warnings
from conftest import PROJECT_ROOT, RECORDED

FACTS = build_gpu_facts(parse_lspci((RECORDED / "lspci-nn_gt710-display_v100-pcie-16gb.txt").read_text()), None)
REQUEST = StackRequest(nvidia_driver_branch="535", cuda_toolkit_version="12.2", python_version="3.10.12",
                       distribution="Ubuntu", distribution_version="22.04")


def templated_default(role, variable, facts=FACTS):
    """A role default that is a Jinja expression, evaluated over the facts (plain Jinja's
    `default` filter is Ansible's)."""
    defaults = yaml.safe_load((PROJECT_ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    return NativeEnvironment().from_string(defaults[variable]).render(**facts)


def test_the_display_card_is_reported_and_kept_out_of_serving():
    gt710, v100 = FACTS["nvidia_gpus"]
    assert (gt710["name"], gt710["pci_class"], gt710["display"], gt710["serving"]) == (
        "GeForce GT 710", "0300", True, False)
    assert (v100["name"], v100["pci_class"], v100["display"], v100["serving"]) == (
        "Tesla V100 PCIe 16GB", "0302", False, True)
    assert (FACTS["nvidia_gpu_count"], FACTS["nvidia_serving_gpu_indexes"], FACTS["nvidia_serving_gpu_count"]) == (
        2, [1], 1)


def test_llama_cpp_is_built_for_the_v100_only():
    assert resolve_architectures("", None, FACTS["nvidia_gpus"]) == "70"
    assert resolve_cuda_architectures(REQUEST, FACTS["nvidia_gpus"]) == "70"
    assert templated_default("llama_cpp", "llama_cpp_expected_cuda_devices") == 1


def test_preflight_passes_and_warns_that_535_leaves_the_gt_710_undriven():
    assert check_stack(REQUEST, FACTS["nvidia_gpus"]) == []
    display = [w for w in stack_warnings(REQUEST, FACTS["nvidia_gpus"], "2026-06-01") if "display card" in w]
    assert len(display) == 1
    assert display[0].startswith("GPU 0 (GeForce GT 710, 0000:04:00.0) is a display card, left out of the serving "
                                 "GPUs and the CUDA build; nvidia_driver_branch=535 does not drive it")


def test_the_services_default_to_the_v100():
    assert templated_default("vllm_server", "vllm_server_gpus") == [1]
    settings = llama_server_settings(gpu_count=FACTS["nvidia_gpu_count"], serving_gpus=FACTS["nvidia_serving_gpu_indexes"],
                                     restart_schedule="")
    (instance,) = planned([{"name": "chat", "model": "/srv/models/chat.gguf", "port": 8081}],
                          settings)["instances"]
    assert instance["environment"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1"}


def test_without_facts_the_defaults_are_what_they_were():
    assert templated_default("vllm_server", "vllm_server_gpus", {}) == [0]
    assert templated_default("llama_cpp", "llama_cpp_expected_cuda_devices", {}) == 0
