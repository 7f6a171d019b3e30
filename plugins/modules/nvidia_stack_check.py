#!/usr/bin/python
"""Ansible module: refuse a driver/CUDA/llama.cpp/vLLM combination the GPUs cannot run."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_stack_check
short_description: Check the requested NVIDIA driver, CUDA, llama.cpp and vLLM settings against the GPUs
description:
  - Runs the toolkit's compatibility rules (plugins/module_utils/driver/stack_rules.py, each citing
    docs/VOLTA_FACTS.md) over the GPU facts from M(nvidia_gpu_facts) and the requested public
    variables, and collects host-readiness warnings. The memory plans are M(gpu_memory_plan)'s.
  - Fails, listing every refusal with the variable, its value, the reason, what to use instead and
    the rule's source, when any rule refuses. Nothing on the host is changed either way.
  - Warnings (missing kernel headers, Secure Boot, nouveau, low disk, narrow PCIe link, small BAR1,
    throttling, GPUs missing from the catalogue, a driver branch past its end of life, a toolkit that runs
    through CUDA minor version compatibility or whose nvcc refuses the distribution's GCC, a display card
    the chosen branch or flavour does not drive) never fail the task.
  - Display cards kept out of serving (C(serving=false) in the facts) count for the driver rules only. The
    toolkit, llama.cpp and vLLM rules, the PCIe/BAR1/throttle warnings and
    C(min_compute_capability) look at the serving GPUs.
version_added: "1.0.0"
options:
  gpus:
    description:
      - The GPU facts, C(ansible_facts.nvidia_gpus) from M(nvidia_gpu_facts). A GPU without the
        C(serving) key counts as serving.
    type: list
    elements: dict
    default: []
  require_gpu:
    description: The public variable C(preflight_require_gpu). When true, a host without an NVIDIA GPU is refused.
    type: bool
    default: true
  distribution:
    description: C(ansible_facts.distribution), e.g. C(Ubuntu) or C(Debian).
    type: str
    required: true
  distribution_version:
    description: C(ansible_facts.distribution_version), e.g. C(24.04) or C(12.7) (Debian compares its major).
    type: str
    required: true
  python_version:
    description:
      - The Python that will run vLLM, e.g. C(3.12.3); checked against the vLLM release's wheels.
      - Defaults to the interpreter running this module on the target.
    type: str
  nvidia_driver_branch:
    description: The public variable C(nvidia_driver_branch).
    type: str
    default: "580"
  nvidia_driver_flavor:
    description: The public variable C(nvidia_driver_flavor), C(proprietary) or C(open).
    type: str
    default: proprietary
  cuda_toolkit_version:
    description:
      - The public variable C(cuda_toolkit_version), C(12.x) or C(13.x).
      - Empty picks the default for the distribution's NVIDIA repository and the driver branch (a 12.x the
        repository carries and the distribution's GCC accepts), or the distribution's own toolkit when
        C(cuda_toolkit_source=distro); the result's C(cuda_toolkit_version) says which.
    type: str
    default: ""
  cuda_toolkit_source:
    description:
      - The public variable C(cuda_toolkit_source), C(cuda_repo) (NVIDIA's repository) or C(distro) (the
        distribution's C(nvidia-cuda-toolkit); Debian 13's is 12.4).
    type: str
    default: cuda_repo
  llama_cpp_cuda_architectures:
    description:
      - The public variable C(llama_cpp_cuda_architectures), a CMake list (C(70), C(70;80), C(70-real); commas
        are accepted) or C(native), C(all), C(all-major).
      - Empty derives the list from the GPUs' compute capabilities.
    type: str
    default: ""
  vllm_enabled:
    description: The public variable C(vllm_enabled). When false the vLLM rules are skipped.
    type: bool
    default: true
  vllm_version:
    description: The public variable C(vllm_version).
    type: str
    default: "0.5.4"
  vllm_quantization:
    description: The public variable C(vllm_quantization); empty or null for an unquantized model.
    type: str
    default: gptq
  vllm_dtype:
    description: The public variable C(vllm_dtype).
    type: str
    default: half
  vllm_model_architecture:
    description: The public variable C(vllm_model_architecture), C(architectures[0]) of the model's config.json.
    type: str
    default: ""
  vllm_model_dtype:
    description:
      - C(torch_dtype) of the model's config.json, when known. With O(vllm_dtype=auto) on a GPU below compute
        capability 8.0 only a C(float16) or C(float32) checkpoint is accepted.
    type: str
    default: ""
  host:
    description:
      - Host state for the readiness warnings; a missing or null key is not checked.
    type: dict
    default: {}
    suboptions:
      kernel_headers_available:
        description: Whether headers for the running kernel are installed or apt has them.
        type: bool
      nouveau_loaded:
        description: Whether the nouveau module is loaded.
        type: bool
      disk_free_mib:
        description: Free disk space where the toolkit installs, in MiB.
        type: int
  disk_required_mib:
    description: Disk space the run needs, in MiB; 0 skips the disk warning.
    type: int
    default: 0
attributes:
  check_mode:
    support: full
notes:
  - Read-only. It reads no file: the GPU facts and the host state come in as options.
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Read the GPUs
  v100.llm.nvidia_gpu_facts:

- name: Refuse a stack the GPUs cannot run, before anything is installed
  v100.llm.nvidia_stack_check:
    gpus: "{{ ansible_facts.nvidia_gpus }}"
    require_gpu: "{{ preflight_require_gpu }}"
    distribution: "{{ ansible_facts.distribution }}"
    distribution_version: "{{ ansible_facts.distribution_version }}"
    python_version: "{{ ansible_facts.python_version }}"
    nvidia_driver_branch: "{{ nvidia_driver_branch }}"
    nvidia_driver_flavor: "{{ nvidia_driver_flavor }}"
    cuda_toolkit_version: "{{ cuda_toolkit_version }}"
    cuda_toolkit_source: "{{ cuda_toolkit_source }}"
    llama_cpp_cuda_architectures: "{{ llama_cpp_cuda_architectures | default('') }}"
    vllm_enabled: "{{ vllm_enabled }}"
    vllm_version: "{{ vllm_version }}"
    vllm_quantization: "{{ vllm_quantization }}"
    vllm_dtype: "{{ vllm_dtype }}"
    vllm_model_architecture: "{{ vllm_model_architecture | default('') }}"
    host:
      kernel_headers_available: "{{ nvidia_driver_plan.running_kernel_supported }}"
      disk_free_mib: "{{ preflight_disk_free_mib }}"
    disk_required_mib: 20000
  register: preflight_stack

- name: Build llama.cpp for what the check derived
  ansible.builtin.debug:
    msg: "CMAKE_CUDA_ARCHITECTURES={{ preflight_stack.cuda_architectures }}"
"""

RETURN = r"""
refusals:
  description: Every rule that refused, in the order to fix them. Non-empty only in a failed result.
  returned: always
  type: list
  elements: dict
  contains:
    variable:
      description: The variable to change.
      type: str
    value:
      description: Its value.
      type: str
    reason:
      description: Why the value cannot work here.
      type: str
    fix:
      description: What to use instead.
      type: str
    source:
      description: Where the rule comes from (a docs/VOLTA_FACTS.md section).
      type: str
    message:
      description: "The one-line form: C(variable=value reason. fix. [source: ...])."
      type: str
  sample:
    - variable: cuda_toolkit_version
      value: "13.0"
      reason: "cannot build for Tesla V100-PCIE-32GB (compute capability 7.0): CUDA 13 removed sm_70 (...)"
      fix: Use 12.4 (the default for ubuntu2204 with the 550 branch)
      source: VOLTA_FACTS.md, CUDA toolkit
      message: "cuda_toolkit_version=13.0 cannot build for ... Use 12.4 (...). [source: VOLTA_FACTS.md, CUDA toolkit]"
readiness_warnings:
  description:
    - Host and GPU problems worth fixing, each with advice; also emitted as task warnings.
    - Named so because Ansible reserves a result's C(warnings) key for its own use.
  returned: always
  type: list
  elements: str
cuda_toolkit_version:
  description: The CUDA toolkit the roles install, C(cuda_toolkit_version) or the default it resolved to.
  returned: always
  type: str
  sample: "12.4"
cuda_architectures:
  description:
    - The CMake CUDA architecture list llama.cpp should be built with, derived from the serving GPUs or
      normalised (C(70)).
  returned: always
  type: str
  sample: "70"
min_compute_capability:
  description: The lowest known compute capability among the serving GPUs, or null.
  returned: always
  type: str
  sample: "7.0"
msg:
  description:
    - "On failure: C(Preflight refused this configuration; nothing on the host was changed:), then one line per
      refusal."
  returned: failed
  type: str
"""

import datetime
import platform

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.host.readiness import readiness_warnings
from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import (
    StackRequest,
    check_stack,
    format_major_minor,
    min_compute_capability,
    resolve_cuda_architectures,
    resolve_cuda_toolkit,
    serving_gpus,
    stack_warnings,
)

REQUEST_OPTIONS = (
    "nvidia_driver_branch", "nvidia_driver_flavor", "cuda_toolkit_version", "cuda_toolkit_source",
    "llama_cpp_cuda_architectures",
    "vllm_enabled", "vllm_version", "vllm_quantization", "vllm_dtype", "vllm_model_architecture",
    "vllm_model_dtype", "python_version", "distribution", "distribution_version", "require_gpu",
)
ARGUMENT_SPEC = dict(
    gpus=dict(type="list", elements="dict", default=[]),
    require_gpu=dict(type="bool", default=True),
    distribution=dict(type="str", required=True),
    distribution_version=dict(type="str", required=True),
    python_version=dict(type="str"),
    nvidia_driver_branch=dict(type="str", default="580"),
    nvidia_driver_flavor=dict(type="str", default="proprietary"),
    cuda_toolkit_version=dict(type="str", default=""),
    cuda_toolkit_source=dict(type="str", default="cuda_repo"),
    llama_cpp_cuda_architectures=dict(type="str", default=""),
    vllm_enabled=dict(type="bool", default=True),
    vllm_version=dict(type="str", default="0.5.4"),
    vllm_quantization=dict(type="str", default="gptq"),
    vllm_dtype=dict(type="str", default="half"),
    vllm_model_architecture=dict(type="str", default=""),
    vllm_model_dtype=dict(type="str", default=""),
    host=dict(type="dict", default={}, options=dict(
        kernel_headers_available=dict(type="bool"),
        nouveau_loaded=dict(type="bool"),
        disk_free_mib=dict(type="int"),
    )),
    disk_required_mib=dict(type="int", default=0),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = dict(module.params)
    params["python_version"] = params["python_version"] or platform.python_version()
    gpus = params["gpus"]
    # A display card's x4 slot, 256 MiB BAR1 or small memory says nothing about serving.
    serving = serving_gpus(gpus)
    request = StackRequest(**{option: params[option] for option in REQUEST_OPTIONS})

    refusals = check_stack(request, gpus)
    warnings = stack_warnings(request, gpus, datetime.date.today().isoformat())
    warnings += readiness_warnings(serving, params["host"] or {}, params["disk_required_mib"])
    for warning in warnings:
        module.warn(warning)

    lowest = min_compute_capability(serving)
    result = dict(
        changed=False,
        refusals=[refusal.as_dict() for refusal in refusals],
        readiness_warnings=warnings,
        cuda_toolkit_version=resolve_cuda_toolkit(request),
        cuda_architectures=resolve_cuda_architectures(request, gpus),
        min_compute_capability=format_major_minor(lowest) if lowest else None,
    )
    if refusals:
        module.fail_json(
            msg="Preflight refused this configuration; nothing on the host was changed:\n"
                + "\n".join("- " + refusal.message() for refusal in refusals),
            **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
