#!/usr/bin/python
"""Ansible module: size llama.cpp instances' memory against the GPUs, reading each model's GGUF header on the host."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_memory_plan
short_description: Size llama.cpp instances' GPU memory, and choose their slots
description:
  - Adds, per GPU, each plan's weights, KV cache, compute buffer, overhead and safety margin
    (plugins/module_utils/memory/plan.py, sizing.py), from the model's GGUF header on the host or from an
    explicit shape. Plans that share a GPU are summed there.
  - Fails, listing every plan that does not fit with the settings that would make it fit. Nothing on the host
    is changed either way.
  - Display cards kept out of serving (C(serving=false) in the facts) are not sized against.
  - Used by C(preflight) (C(preflight_memory_plans)) and by the action M(llama_server_plan).
version_added: "1.0.0"
options:
  gpus:
    description:
      - The GPU facts, C(ansible_facts.nvidia_gpus) from M(nvidia_gpu_facts). A GPU without the
        C(serving) key counts as serving. Empty, there is nothing to size against (each plan is skipped, or with
        C(choose_slots) given llama-server's own count).
    type: list
    elements: dict
    default: []
  memory_plans:
    description:
      - The llama.cpp instances to size. Per GPU the plan adds weights, KV cache
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
      draft:
        description:
          - Speculative decoding's second context (llama_server's C(speculative)), sized for the same cells as
            the model's. Needs O(memory_plans[].gguf_path).
          - A draft model (C(gguf_path)) adds its weights, its f16 KV cache and its compute buffer. Before that,
            its tokenizer is compared with the model's from both headers, as llama.cpp compares them; a draft
            llama.cpp would not draft with is refused here (llama-server only logs it and serves without drafting).
          - An MTP head (C(mtp)) adds an f16 KV cache for the model's nextn layers and a compute buffer; a model
            without nextn layers is refused.
        type: dict
        suboptions:
          gguf_path:
            description: The draft model's GGUF file (part 1 of a split set).
            type: path
          mtp:
            description: Draft with the model's own multi-token prediction layers.
            type: bool
            default: false
          kv_cache_type:
            description: The draft context's K and V cache type (llama-server's C(-ctkd)/C(-ctvd)).
            type: str
            default: f16
            choices: [f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl]
          draft_max:
            description:
              - Tokens drafted at most (C(--spec-draft-n-max), 3 by default at the pinned commit). With C(mtp),
                a Qwen3.5 model keeps that many more recurrent states per sequence to roll back rejected drafts.
            type: int
            default: 3
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
  - Read-only. The only files it reads are O(memory_plans[].gguf_path) and O(memory_plans[].draft.gguf_path)
    (header and size only).
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Size two instances on the V100s
  v100.llm.gpu_memory_plan:
    gpus: "{{ nvidia_gpus }}"
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
  register: sized
"""

RETURN = r"""
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
refusals:
  description: One per plan that does not fit or cannot be read (C(variable) is C(memory_plans), C(value) the
    plan's name, then C(reason), C(fix), C(source), C(message)). Non-empty only in a failed result.
  returned: always
  type: list
  elements: dict
msg:
  description: "On failure: C(The memory plans do not fit; nothing on the host was changed:), then one line per
    refusal."
  returned: failed
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.models.gguf import GGUFError, read_gguf_metadata, split_paths
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    DEFAULT_OVERHEAD_MIB,
    DEFAULT_SAFETY_MARGIN_MIB,
    DEFAULT_SLOT_CONTEXT_MAX,
    DEFAULT_SLOT_CONTEXT_MIN,
    DEFAULT_SLOTS_MAX,
    KV_CACHE_TYPES,
    draft_model_read,
    mtp_read,
    shape_from_gguf,
)
from ansible_collections.v100.llm.plugins.module_utils.memory.sizing import size_plans
from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import serving_gpus

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
    draft=dict(type="dict", options=dict(
        gguf_path=dict(type="path"), mtp=dict(type="bool", default=False), draft_max=dict(type="int", default=3),
        kv_cache_type=dict(type="str", default="f16", choices=list(KV_CACHE_TYPES))),
               required_one_of=[("gguf_path", "mtp")], mutually_exclusive=[("gguf_path", "mtp")]),
    overhead_mib=dict(type="int", default=DEFAULT_OVERHEAD_MIB),
    safety_margin_mib=dict(type="int", default=DEFAULT_SAFETY_MARGIN_MIB),
)

ARGUMENT_SPEC = dict(
    gpus=dict(type="list", elements="dict", default=[]),
    memory_plans=dict(
        type="list", elements="dict", default=[], options=MEMORY_PLAN_SPEC,
        required_one_of=[("gguf_path", "layers")],
        mutually_exclusive=[("gguf_path", "layers"), ("gguf_path", "kv_heads"), ("gguf_path", "head_dim"),
                            ("gguf_path", "weights_mib")],
        required_together=[EXPLICIT_SHAPE],
    ),
)


def read_shapes(specs):
    """Each plan with its model's shape and weights read from gguf_path (or why not), and its draft's."""
    plans = []
    for spec in specs:
        plan = dict(spec, shape=None, weights_bytes=None, missing=False, unreadable="", draft_read=None)
        path, draft = spec["gguf_path"], spec["draft"] or {}
        if path and not os.path.exists(path):
            plan["missing"] = True
        elif path:
            try:
                gguf = read_gguf_metadata(path, max_array_items=0, token_digests=bool(draft.get("gguf_path")))
                plan["shape"] = shape_from_gguf(gguf)
                plan["weights_bytes"] = weights_bytes(path, gguf)
                plan["draft_read"] = read_draft(gguf, path, draft) if draft else None
            except (GGUFError, ValueError, OSError) as error:
                plan["unreadable"] = str(error)
        plans.append(plan)
    return plans


def weights_bytes(path, gguf):
    """A split set's weights are in all its parts."""
    return sum(os.path.getsize(part) for part in split_paths(path, gguf))


def read_draft(target_gguf, target_path, draft):
    if draft["mtp"]:
        return mtp_read(target_gguf, target_path, draft["draft_max"])
    path = draft["gguf_path"]
    if not os.path.exists(path):
        return {"missing": True, "path": path}
    gguf = read_gguf_metadata(path, max_array_items=0, token_digests=True)
    return draft_model_read(target_gguf, gguf, path, weights_bytes(path, gguf))


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    gpus = module.params["gpus"]
    plans, refusals, warnings = size_plans(read_shapes(module.params["memory_plans"]), gpus, serving_gpus(gpus))
    for warning in warnings:
        module.warn(warning)
    result = dict(changed=False, memory_plans=plans, refusals=[refusal.as_dict() for refusal in refusals])
    if refusals:
        module.fail_json(msg="The memory plans do not fit; nothing on the host was changed:\n"
                             + "\n".join("- " + refusal.message() for refusal in refusals), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
