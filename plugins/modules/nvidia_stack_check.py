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
    variables, sizes the memory plans, and collects host-readiness warnings.
  - Fails, listing every refusal with the variable, its value, the reason, what to use instead and
    the rule's source, when any rule refuses. Nothing on the host is changed either way.
  - Warnings (missing kernel headers, Secure Boot, nouveau, low disk, narrow PCIe link, small BAR1,
    throttling, GPUs missing from the catalogue, a driver branch past its end of life, a toolkit that runs
    through CUDA minor version compatibility or whose nvcc refuses the distribution's GCC, a display card
    the chosen branch or flavour does not drive) never fail the task.
  - Display cards kept out of serving (C(serving=false) in the facts) count for the driver rules only. The
    toolkit, llama.cpp and vLLM rules, the memory plans, the PCIe/BAR1/throttle warnings and
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
  check_stack:
    description:
      - Check the driver, toolkit, llama.cpp and vLLM rules and the host's readiness. False sizes the memory plans
        only (llama_server, whose stack preflight checked).
    type: bool
    default: true
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
  memory_plans:
    description:
      - llama.cpp instances to size. Per GPU the plan adds weights, KV cache
        (2 x layers x kv_heads x head_dim x context_per_slot x slots x bytes per element),
        compute buffer, overhead and a safety margin, and a plan that does not fit is refused
        with the settings that would make it fit.
      - The model's shape comes from O(memory_plans[].gguf_path) or from explicit
        O(memory_plans[].layers), O(memory_plans[].kv_heads), O(memory_plans[].head_dim) and
        O(memory_plans[].weights_mib).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: A label for messages.
        type: str
        required: true
      gguf_path:
        description:
          - A GGUF file on the target. Its header gives the shape and its size the weights.
          - A file that does not exist yet (the models stage has not run) skips the plan with a warning.
        type: path
      layers:
        description: Transformer blocks.
        type: int
      kv_heads:
        description: Key/value heads (GQA), not attention heads.
        type: int
      head_dim:
        description: Dimension of one head.
        type: int
      weights_mib:
        description: Size of the weights in GPU memory, in MiB.
        type: int
      context_per_slot:
        description: Tokens of KV cache per parallel slot. Required unless O(memory_plans[].choose_slots) is set.
        type: int
      slots:
        description: Parallel slots (sequences).
        type: int
        default: 1
      choose_slots:
        description:
          - Choose the slots and the tokens per slot instead of taking O(memory_plans[].slots) and
            O(memory_plans[].context_per_slot) (llama_server's C(auto)). The most slots, from C(slots_min) to
            C(slots_max), that each keep C(context_min) tokens are chosen, then each slot gets as many tokens as
            the memory left holds, up to C(context_max) and never beyond the model's trained context.
          - Without a GPU memory size or a model file to size against, llama-server's own count (4, at most
            C(slots_max)) at C(context_min) tokens is returned, with C(skipped=true).
          - The chosen slots and tokens per slot come back in the plan's result as C(chosen_slots) and
            C(chosen_context_per_slot), with C(choice) (why).
        type: dict
        suboptions:
          slots_min:
            description: Fewest slots (C(slots_max) too for a fixed count).
            type: int
            default: 1
          slots_max:
            description: Most slots.
            type: int
            default: 16
          context_min:
            description: Tokens each slot keeps at least (one request's longest prompt and answer).
            type: int
            default: 20480
          context_max:
            description: Tokens per slot at most.
            type: int
            default: 32768
          floor_variable:
            description: The name the caller gives C(context_min), for the fixes of a plan where not one slot fits
              or whose model is trained for fewer tokens.
            type: str
            default: context_min
      kv_cache_type:
        description: KV cache element type (llama.cpp C(-ctk)/C(-ctv)).
        type: str
        default: f16
        choices: [f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl]
      gpu_count:
        description: GPUs the layers are split across.
        type: int
        default: 1
      gpus:
        description:
          - The O(gpus) indexes the plan runs on; empty means every serving GPU.
          - Plans that share a GPU are summed there and refused together when they overfill it. A plan with
            O(memory_plans[].choose_slots) gets, on each of its GPUs, what the fixed plans there leave, split
            evenly between the plans choosing their slots there.
        type: list
        elements: int
        default: []
      gpu_memory_mib:
        description:
          - Memory of one GPU in MiB. Defaults to the smallest C(memory_total_mib) among the plan's GPUs (see
            O(memory_plans[].gpus)). A plan given it is not summed with others.
        type: int
      compute_buffer_mib:
        description:
          - llama.cpp's compute buffer per GPU. Defaults to an estimate from the GGUF shape (logits and one
            layer's activations for one micro-batch), or 512 MiB for explicit shapes.
        type: int
      flash_attention:
        description: Whether llama.cpp runs with flash attention; without it the compute buffer grows with context.
        type: bool
        default: true
      ubatch:
        description: llama.cpp's micro-batch (C(-ub)), for the compute buffer and the sliding-window KV cache.
        type: int
        default: 512
      request:
        description:
          - What one request needs, for a plan with fixed sizes (C(choose_slots) has C(context_min)). A model
            trained for fewer tokens is refused, since llama-server caps every slot at its trained context.
        type: dict
        suboptions:
          tokens:
            description: Tokens one request fills (its longest prompt and answer).
            type: int
            required: true
          variable:
            description: The name the caller gives it, for the refusal's fix.
            type: str
            default: request tokens
      kv_unified:
        description:
          - Whether the slots share one KV pool (C(--kv-unified)). With O(memory_plans[].choose_slots) the chosen
            slots are sized as one stream of all their tokens; a fixed plan gives the pool as
            O(memory_plans[].context_per_slot) with O(memory_plans[].slots)=1 and
            O(memory_plans[].sequences_per_stream) instead.
        type: bool
        default: false
      tensor_split:
        description: llama.cpp's C(--tensor-split), one share per GPU; the busiest GPU holds the largest share.
        type: list
        elements: float
      split_mode:
        description:
          - C(layer) (whole layers per GPU, also for C(row) and C(none)) or C(tensor) (every layer's weights and KV
            cache split across the GPUs by O(memory_plans[].tensor_split)).
        type: str
        default: layer
        choices: [layer, tensor]
      sequences_per_stream:
        description:
          - Sequences sharing one KV stream; 1, or the slots of a unified cache (C(--kv-unified)), which then
            has one stream (O(memory_plans[].slots)=1). Sizes the sliding-window layers' cache.
        type: int
        default: 1
      swa_full:
        description: Whether llama.cpp runs with C(--swa-full) (sliding-window layers keep the whole context).
        type: bool
        default: false
      overhead_mib:
        description: Per-GPU CUDA context, cuBLAS workspace and memory pool.
        type: int
        default: 700
      safety_margin_mib:
        description: Per-GPU memory kept free (driver reservation, fragmentation).
        type: int
        default: 1024
attributes:
  check_mode:
    support: full
notes:
  - Read-only. The only file it reads is O(memory_plans[].gguf_path) (header and size only).
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
    memory_plans:
      - name: qwen2.5-coder-32b
        gguf_path: /srv/models/qwen2.5-coder-32b-instruct-q4_k_m.gguf
        context_per_slot: 16384
        slots: 2
        kv_cache_type: q8_0
      - name: explicit-shape
        layers: 64
        kv_heads: 8
        head_dim: 128
        weights_mib: 18932
        context_per_slot: 8192
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
      description: The variable to change (or C(memory_plans) for a plan that does not fit).
      type: str
    value:
      description: Its value (the plan's name for memory plans).
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
memory_plans:
  description:
    - One item per O(memory_plans) entry, in order. A sized plan has every term in MiB per GPU (C(weights_mib),
      C(kv_cache_mib), C(compute_buffer_mib), C(overhead_mib), C(safety_margin_mib), C(required_mib),
      C(headroom_mib)), C(fits), C(message) (the arithmetic), C(remedies) and its inputs.
    - A skipped plan has C(name), C(skipped=true) and C(skip_reason).
    - A plan with O(memory_plans[].choose_slots) also has C(chosen_slots), C(chosen_context_per_slot) and
      C(choice) (the reason), skipped or not.
  returned: always
  type: list
  elements: dict
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
import os
import platform

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.models.gguf import GGUFError, read_gguf_metadata, split_paths
from ansible_collections.v100.llm.plugins.module_utils.host.readiness import readiness_warnings
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    DEFAULT_OVERHEAD_MIB,
    DEFAULT_SAFETY_MARGIN_MIB,
    DEFAULT_SLOT_CONTEXT_MAX,
    DEFAULT_SLOT_CONTEXT_MIN,
    DEFAULT_SLOTS_MAX,
    shape_from_gguf,
)
from ansible_collections.v100.llm.plugins.module_utils.memory.sizing import size_plans
from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import (
    Refusal,
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
EXPLICIT_SHAPE = ("layers", "kv_heads", "head_dim", "weights_mib")

MEMORY_PLAN_SPEC = dict(
    name=dict(type="str", required=True),
    gguf_path=dict(type="path"),
    layers=dict(type="int"),
    kv_heads=dict(type="int"),
    head_dim=dict(type="int"),
    weights_mib=dict(type="int"),
    context_per_slot=dict(type="int"),
    slots=dict(type="int", default=1),
    choose_slots=dict(type="dict", options=dict(
        slots_min=dict(type="int", default=1),
        slots_max=dict(type="int", default=DEFAULT_SLOTS_MAX),
        context_min=dict(type="int", default=DEFAULT_SLOT_CONTEXT_MIN),
        context_max=dict(type="int", default=DEFAULT_SLOT_CONTEXT_MAX),
        floor_variable=dict(type="str", default="context_min"),
    )),
    kv_cache_type=dict(type="str", default="f16",
                       choices=["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"]),
    gpu_count=dict(type="int", default=1),
    gpus=dict(type="list", elements="int", default=[]),
    gpu_memory_mib=dict(type="int"),
    compute_buffer_mib=dict(type="int"),
    flash_attention=dict(type="bool", default=True),
    ubatch=dict(type="int", default=512),
    sequences_per_stream=dict(type="int", default=1),
    request=dict(type="dict", options=dict(
        tokens=dict(type="int", required=True),
        variable=dict(type="str", default="request tokens"),
    )),
    kv_unified=dict(type="bool", default=False),
    swa_full=dict(type="bool", default=False),
    tensor_split=dict(type="list", elements="float"),
    split_mode=dict(type="str", default="layer", choices=["layer", "tensor"]),
    overhead_mib=dict(type="int", default=DEFAULT_OVERHEAD_MIB),
    safety_margin_mib=dict(type="int", default=DEFAULT_SAFETY_MARGIN_MIB),
)

ARGUMENT_SPEC = dict(
    gpus=dict(type="list", elements="dict", default=[]),
    check_stack=dict(type="bool", default=True),
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
    memory_plans=dict(
        type="list", elements="dict", default=[], options=MEMORY_PLAN_SPEC,
        required_one_of=[("gguf_path", "layers")],
        mutually_exclusive=[("gguf_path", "layers"), ("gguf_path", "kv_heads"), ("gguf_path", "head_dim"),
                            ("gguf_path", "weights_mib")],
        required_together=[EXPLICIT_SHAPE],
    ),
)


def read_shapes(specs):
    """Each plan with its model's shape and weights read from gguf_path (or why not)."""
    plans = []
    for spec in specs:
        plan = dict(spec, shape=None, weights_bytes=None, missing=False, unreadable="")
        path = spec["gguf_path"]
        if path and not os.path.exists(path):
            plan["missing"] = True
        elif path:
            try:
                gguf = read_gguf_metadata(path, max_array_items=0)
                plan["shape"] = shape_from_gguf(gguf)
                # A split set's weights are in all its parts.
                plan["weights_bytes"] = sum(os.path.getsize(part) for part in split_paths(path, gguf))
            except (GGUFError, ValueError, OSError) as error:
                plan["unreadable"] = str(error)
        plans.append(plan)
    return plans


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = dict(module.params)
    params["python_version"] = params["python_version"] or platform.python_version()
    gpus = params["gpus"]
    # A display card's x4 slot, 256 MiB BAR1 or small memory says nothing about serving.
    serving = serving_gpus(gpus)
    request = StackRequest(**{option: params[option] for option in REQUEST_OPTIONS})

    refusals, warnings = [], []
    if params["check_stack"]:
        refusals = check_stack(request, gpus)
        warnings = stack_warnings(request, gpus, datetime.date.today().isoformat())
        warnings += readiness_warnings(serving, params["host"] or {}, params["disk_required_mib"])
    plans, plan_refusals, plan_warnings = size_plans(read_shapes(params["memory_plans"]), gpus, serving)
    refusals += plan_refusals
    warnings += plan_warnings
    for warning in warnings:
        module.warn(warning)

    lowest = min_compute_capability(serving)
    result = dict(
        changed=False,
        refusals=[refusal.as_dict() for refusal in refusals],
        readiness_warnings=warnings,
        memory_plans=plans,
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
