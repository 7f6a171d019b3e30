#!/usr/bin/python
"""Ansible module: report NVIDIA GPUs from lspci and nvidia-smi as facts."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_gpu_facts
short_description: Report NVIDIA GPUs, their driver state and catalogue specifications as facts
description:
  - Runs C(lspci -Dnn), which lists GPUs before any driver is installed, and
    C(nvidia-smi -q -x) when it is present, and merges both views by PCI bus id.
  - Compute capability, architecture and memory bandwidth come from a catalogue keyed
    by PCI device id (docs/VOLTA_FACTS.md for the V100 family), so they are known
    before the driver exists. For a GPU the catalogue lacks, the compute capability
    comes from the driver (C(nvidia-smi --query-gpu=pci.bus_id,compute_cap
    --format=csv,noheader), one more call after a working C(nvidia-smi -q -x), whose XML
    carries no compute capability), else from the chip family its PCI device id
    belongs to (plugins/module_utils/gpu/catalog.py, derived from pci.ids), else it
    is null (preflight warns).
  - A display card (PCI class VGA) beside GPUs without a display output (3D
    controllers, as every Tesla is) is reported with C(display=true) and
    C(serving=false) and left out of C(nvidia_serving_gpu_indexes). A host whose GPUs
    are all display cards serves on them.
  - Never changes the host. A missing C(lspci) or C(nvidia-smi), or an
    C(nvidia-smi) that cannot reach the driver, is reported in
    C(nvidia_gpu_sources) instead of failing.
version_added: "1.0.0"
options:
  lspci_path:
    description:
      - Path to C(lspci). By default it is looked up on C(PATH), C(/sbin), C(/usr/sbin)
        and C(/usr/local/sbin).
    type: path
  nvidia_smi_path:
    description:
      - Path to C(nvidia-smi). By default it is looked up on C(PATH) and the sbin directories.
    type: path
attributes:
  check_mode:
    support: full
  facts:
    support: full
notes:
  - Fields that need the driver (BAR1, link state, temperature, persistence mode,
    throttle reasons) are null for GPUs that C(nvidia-smi) did not report.
  - C(index) is nvidia-smi's index for the GPUs it reports, which is the CUDA device
    index under C(CUDA_DEVICE_ORDER=PCI_BUS_ID) (the services set it). GPUs only lspci
    saw (a card the installed branch does not drive) follow and have no CUDA index.
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Read the GPUs
  v100.llm.nvidia_gpu_facts:

- name: Stop when the driver misses a GPU that should serve
  ansible.builtin.assert:
    that:
      - ansible_facts.nvidia_gpus | selectattr('serving') | rejectattr('seen_by_driver') | list | length == 0
    fail_msg: >-
      {{ ansible_facts.nvidia_serving_gpu_count }} GPUs should serve,
      the driver sees only
      {{ ansible_facts.nvidia_gpus | selectattr('serving') | selectattr('seen_by_driver') | list | length }}.

- name: Show the display card kept out of serving
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpus | rejectattr('serving') | map(attribute='name') | list }}"

- name: Use a tool outside PATH
  v100.llm.nvidia_gpu_facts:
    nvidia_smi_path: /opt/nvidia/bin/nvidia-smi
"""

RETURN = r"""
ansible_facts:
  description: GPU facts.
  returned: always
  type: dict
  contains:
    nvidia_gpus:
      description:
        - One item per GPU. GPUs nvidia-smi reports come first, in its order, then GPUs
          only lspci saw, in PCI bus order.
        - Keys C(index), C(name), C(pci_bus_id) (C(0000:27:00.0)), C(pci_device_id)
          (C(10de:1db6), null when unknown), C(pci_class) (C(0302) 3D controller, C(0300) VGA,
          C(0380) other display controller; from lspci, else from nvidia-smi where it prints
          the class (580 does, 535 does not); null when neither says), C(display) (true for the
          VGA class, null when the class is unknown), C(serving) (false for a display card beside
          headless GPUs), C(architecture) (C(Volta)), C(compute_capability) (C("7.0"), null when
          unknown),
          C(compute_capability_source) (C(catalogue), C(driver), C(pci_id_family) or null),
          C(memory_total_mib) (nvidia-smi's value, else the catalogue's),
          C(memory_bandwidth_gbps), C(seen_by_lspci), C(seen_by_driver); and from
          nvidia-smi only C(bar1_total_mib), C(pcie_link_gen_current), C(pcie_link_gen_max),
          C(pcie_link_width_current), C(pcie_link_width_max), C(persistence_mode),
          C(temperature_c), C(throttle_reasons) (active reason names, e.g. C(sw_power_cap)),
          C(power_limit_w), C(uuid), C(minor_number).
      returned: always
      type: list
      elements: dict
    nvidia_nouveau_loaded:
      description: The nouveau module is loaded (C(/sys/module/nouveau)), so the NVIDIA driver cannot bind the GPUs.
      returned: always
      type: bool
    nvidia_gpu_count:
      description:
        - Number of items in C(nvidia_gpus), display cards and GPUs the driver does not
          drive included. The GPUs the services use are C(nvidia_serving_gpu_indexes).
      returned: always
      type: int
      sample: 2
    nvidia_serving_gpu_indexes:
      description:
        - C(index) of every GPU with C(serving=true), in order; what the llama.cpp build
          targets and the services use by default.
      returned: always
      type: list
      elements: int
      sample: [1, 2]
    nvidia_serving_gpu_count:
      description: Number of items in C(nvidia_serving_gpu_indexes).
      returned: always
      type: int
      sample: 2
    nvidia_driver_version:
      description: Driver version from nvidia-smi, null without a working driver.
      returned: always
      type: str
      sample: "550.127.08"
    nvidia_driver_cuda_version:
      description: Highest CUDA version the driver supports, null without a working driver.
      returned: always
      type: str
      sample: "12.4"
    nvidia_gpu_sources:
      description:
        - For C(lspci) and C(nvidia_smi) each, C(path) (null when not found on the search path), C(status)
          (C(ok), C(missing), C(failed), or for nvidia-smi C(driver_unavailable)),
          C(rc) and C(error) (the tool's output when it failed).
        - C(nvidia_smi_compute_cap), the same for the compute-capability query; its status is
          C(ok), C(unsupported) (a driver older than the C(compute_cap) field, such as 470, whose
          nvidia-smi answers C(Field "compute_cap" is not a valid field to query.)), C(failed), or
          C(skipped) when C(nvidia-smi -q -x) did not work.
      returned: always
      type: dict
"""

import os
import xml.etree.ElementTree as ET

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.gpu.inventory import (
    build_gpu_facts,
    is_driver_unavailable,
    is_unknown_query_field,
    parse_compute_capabilities,
    parse_lspci,
    parse_nvidia_smi_xml,
)

COMPUTE_CAP_QUERY = ("--query-gpu=pci.bus_id,compute_cap", "--format=csv,noheader")


def _source(path: str | None, status: str, rc: int | None = None, error: str | None = None) -> dict:
    return {"path": path, "status": status, "rc": rc, "error": error}


def _installed(path: str | None) -> bool:
    return path is not None and os.path.isfile(path) and os.access(path, os.X_OK)


def collect(run, lspci_path: str | None, nvidia_smi_path: str | None) -> dict:
    """Run the tools through run(argv) -> (rc, stdout, stderr) and return the facts.

    A path that is None or not an executable file counts as a missing tool.
    """
    lspci_gpus = []
    if not _installed(lspci_path):
        lspci_source = _source(lspci_path, "missing")
    else:
        rc, out, err = run([lspci_path, "-Dnn"])
        if rc == 0:
            lspci_gpus = parse_lspci(out)
            lspci_source = _source(lspci_path, "ok", rc)
        else:
            lspci_source = _source(lspci_path, "failed", rc, (err or out).strip())

    smi = None
    if not _installed(nvidia_smi_path):
        smi_source = _source(nvidia_smi_path, "missing")
    else:
        rc, out, err = run([nvidia_smi_path, "-q", "-x"])
        # nvidia-smi prints its failures on stdout.
        message = (out + "\n" + err).strip()
        if rc != 0:
            status = "driver_unavailable" if is_driver_unavailable(message) else "failed"
            smi_source = _source(nvidia_smi_path, status, rc, message)
        else:
            try:
                smi = parse_nvidia_smi_xml(out)
                smi_source = _source(nvidia_smi_path, "ok", rc)
            except ET.ParseError as exc:
                smi_source = _source(nvidia_smi_path, "failed", rc, f"unreadable XML: {exc}")

    capabilities, capability_source = {}, _source(nvidia_smi_path, "skipped")
    if smi is not None:
        capabilities, capability_source = query_compute_capabilities(run, nvidia_smi_path)

    facts = build_gpu_facts(lspci_gpus, smi, capabilities)
    facts["nvidia_gpu_sources"] = {
        "lspci": lspci_source,
        "nvidia_smi": smi_source,
        "nvidia_smi_compute_cap": capability_source,
    }
    return facts


def query_compute_capabilities(run, nvidia_smi_path: str) -> tuple:
    """({bus id: "7.0"}, source) from the driver; an old driver's refusal of the field is not an error."""
    rc, out, err = run([nvidia_smi_path, *COMPUTE_CAP_QUERY])
    if rc == 0:
        return parse_compute_capabilities(out), _source(nvidia_smi_path, "ok", rc)
    message = (out + "\n" + err).strip()
    status = "unsupported" if is_unknown_query_field(message) else "failed"
    return {}, _source(nvidia_smi_path, status, rc, message)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            lspci_path=dict(type="path"),
            nvidia_smi_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    # get_bin_path also searches /sbin, /usr/sbin and /usr/local/sbin, where lspci lives.
    facts = collect(
        module.run_command,
        module.params["lspci_path"] or module.get_bin_path("lspci"),
        module.params["nvidia_smi_path"] or module.get_bin_path("nvidia-smi"),
    )
    # The driver cannot bind GPUs nouveau holds (blacklisted modules stay loaded until a reboot).
    facts["nvidia_nouveau_loaded"] = os.path.isdir("/sys/module/nouveau")
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
