# -*- coding: utf-8 -*-
"""Size a host's memory plans together: each against its own GPUs, the GPUs
that several share summed, and slot choices given their share.

Pure: the module nvidia_stack_check reads the GGUF files and the GPU facts and
passes them in (each plan's ``shape`` and ``weights_bytes``, or why there are
none). The arithmetic of one plan is memory_plan.plan_memory's.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    DEFAULT_COMPUTE_BUFFER_MIB,
    MIB,
    DraftModel,
    SMALLER_KV_CACHE_TYPE,
    GpuUse,
    MemoryPlan,
    SlotChoice,
    choose_slots,
    estimate_compute_buffer_mib,
    overcommitted,
    plan_memory,
    shared_budget_mib,
    smaller_kv_cache_saves,
    trained_context_refusal,
    unsized_slots,
)
from ansible_collections.v100.llm.plugins.module_utils.driver.stack_rules import Refusal

SOURCE = "nvidia_stack_check module (memory_plans)"
Result = Tuple[Dict[str, Any], Optional[Refusal], Optional[str]]


def size_plans(plans: Sequence[Mapping[str, Any]], gpus: Sequence[Mapping[str, Any]],
               serving: Sequence[Mapping[str, Any]]) -> Tuple[List[Dict[str, Any]], List[Refusal], List[str]]:
    """Every memory plan -> (results in order, refusals, warnings).

    plans: the module's memory_plans, each with ``shape`` (a ModelShape or
    None), ``weights_bytes`` and ``unreadable`` / ``missing`` (why there is no
    shape). gpus: every GPU's facts (a plan may name a display card on
    purpose); serving: the GPUs a plan without ``gpus`` runs on.
    Plans with fixed sizes go first, on their own GPUs' memory; then the plans
    choosing their slots, each with its share of what those leave; then every
    GPU that several plans share is checked for their sum.
    """
    memory = {gpu["index"]: gpu["memory_total_mib"] for gpu in gpus
              if gpu.get("index") is not None and gpu.get("memory_total_mib")}
    serving_indexes = tuple(sorted(gpu["index"] for gpu in serving if gpu.get("index") in memory))

    def gpus_of(plan: Mapping[str, Any]) -> Tuple[int, ...]:
        """The GPU indexes a plan runs on; () where that is unknown or the plan brings its own memory size."""
        indexes = tuple(plan["gpus"]) or serving_indexes
        return indexes if indexes and not plan["gpu_memory_mib"] and all(i in memory for i in indexes) else ()

    choosing = Counter(gpu for plan in plans if plan["choose_slots"] is not None for gpu in gpus_of(plan))
    results: List[Dict[str, Any]] = [{} for _ in plans]
    refusals: List[Refusal] = []
    warnings: List[str] = []
    fixed: List[GpuUse] = []
    uses: List[GpuUse] = []
    for index in sorted(range(len(plans)), key=lambda index: plans[index]["choose_slots"] is not None):
        plan, on = plans[index], gpus_of(plans[index])
        budget, shared = _budget(plan, on, memory, fixed, choosing)
        if budget is None and not on:
            sizes = [gpu.get("memory_total_mib") for gpu in serving if gpu.get("memory_total_mib")]
            budget = plan["gpu_memory_mib"] or (min(sizes) if sizes else None)
        if shared and budget is not None and budget <= plan["safety_margin_mib"]:
            result, refusal, warning = plan_error(
                plan["name"], "has no memory left on GPU %s: the plans with fixed sizes there take it all (%s)" % (
                    ",".join(map(str, on)), shared),
                "Give it other gpus, or lower the context or slots of the fixed plans there")
        else:
            result, refusal, warning = size_plan(plan, budget, shared)
        results[index] = result
        refusals += [refusal] if refusal else []
        warnings += [warning] if warning else []
        if on and "required_mib" in result:
            use = GpuUse(plan["name"], on, result["required_mib"] - result["safety_margin_mib"])
            uses.append(use)
            fixed += [use] if plan["choose_slots"] is None else []
    margin = max([plan["safety_margin_mib"] for plan in plans] or [0])
    return results, refusals + overcommitted(uses, memory, margin), warnings


def _budget(plan: Mapping[str, Any], on: Tuple[int, ...], memory: Mapping[int, int], fixed: Sequence[GpuUse],
            choosing: Mapping[int, int]) -> Tuple[Optional[int], str]:
    """(GPU memory the plan may use, why it is a share: "" when it has its GPUs to itself)."""
    if not on:
        return None, ""
    if plan["choose_slots"] is None:
        return min(memory[gpu] for gpu in on), ""
    budget = shared_budget_mib(on, fixed, choosing, memory, plan["safety_margin_mib"])
    others = sorted(set(use.name for use in fixed if set(use.gpus) & set(on)))
    beside = len(others) + max(choosing[gpu] for gpu in on) - 1
    if not beside:
        return budget, ""
    return budget, "%d MiB, its share of GPU %s beside %d other plan%s%s" % (
        budget, ",".join(map(str, on)), beside, "" if beside == 1 else "s",
        " (%s)" % ", ".join(others) if others else "")


def size_plan(plan: Mapping[str, Any], budget_mib: Optional[int], shared: str = "") -> Result:
    """One memory plan -> (result dict, refusal or None, warning or None).

    budget_mib: the GPU memory it may plan with (its GPUs', its share, or
    None when unknown); shared: why it is a share, for the messages.
    """
    name, choice, shape = plan["name"], plan["choose_slots"], plan["shape"]
    if choice is None and plan["context_per_slot"] is None:
        return plan_error(name, "has neither context_per_slot nor choose_slots", "Give one of them")
    if plan.get("unreadable"):
        return plan_error(name, "cannot read gguf_path %s: %s" % (plan["gguf_path"], plan["unreadable"]),
                          "Check that the file is a complete GGUF model, or give layers, kv_heads, head_dim "
                          "and weights_mib instead")
    if plan.get("missing"):
        return skipped(plan, "%s does not exist yet (the models stage fetches it); sized on the next run"
                       % plan["gguf_path"])
    draft = plan.get("draft_read") or {}
    if draft.get("refusal"):
        return plan_error(name, draft["refusal"], draft["fix"])
    if draft.get("missing"):
        return skipped(plan, "its draft model %s does not exist yet (the models stage fetches it); sized on the "
                             "next run" % draft["path"])
    request = {"tokens": choice["context_min"], "variable": choice["floor_variable"]} if choice else plan.get("request")
    too_short = request and trained_context_refusal(name, shape.context_length if shape else None,
                                                    request["tokens"], request["variable"])
    if too_short:
        return {"name": name, "skipped": True, "skip_reason": too_short.reason}, too_short, None
    if not budget_mib:
        return skipped(plan, "no GPU memory size is known: no serving GPU, and no gpu_memory_mib")

    def plan_for(slots: int, context_per_slot: int, kv_cache_type: str = plan["kv_cache_type"]) -> MemoryPlan:
        # A unified cache is one stream of every slot's cells, shared by the slots.
        streams, cells, sequences = (1, slots * context_per_slot, slots) if plan["kv_unified"] \
            else (slots, context_per_slot, plan["sequences_per_stream"])
        compute_buffer_mib = plan["compute_buffer_mib"]
        if compute_buffer_mib is None:
            compute_buffer_mib = estimate_compute_buffer_mib(shape, cells, plan["ubatch"], plan["flash_attention"]) \
                if shape else DEFAULT_COMPUTE_BUFFER_MIB
        drafting = DraftModel(
            label=draft["label"], shape=draft["shape"], weights_bytes=draft["weights_bytes"], spread=draft["spread"],
            kv_cache_type=plan["draft"]["kv_cache_type"], rollback_states=draft.get("rollback_states", 0),
            compute_buffer_mib=estimate_compute_buffer_mib(draft["compute_shape"], cells, plan["ubatch"],
                                                           plan["flash_attention"])) if draft else None
        return plan_memory(
            name, draft=drafting, layers=shape.layers if shape else plan["layers"], kv_heads=shape.kv_heads if shape else
            plan["kv_heads"], head_dim=shape.head_dim if shape else plan["head_dim"],
            weights_bytes=plan["weights_bytes"] if shape else plan["weights_mib"] * MIB,
            context_per_slot=cells, slots=streams, gpu_memory_mib=budget_mib, kv_cache_type=kv_cache_type,
            gpu_count=plan["gpu_count"], compute_buffer_mib=compute_buffer_mib, overhead_mib=plan["overhead_mib"],
            safety_margin_mib=plan["safety_margin_mib"], layout=shape.kv_layout if shape else None,
            ubatch=plan["ubatch"], sequences_per_stream=sequences, swa_full=plan["swa_full"],
            tensor_split=plan["tensor_split"], split_mode=plan["split_mode"])

    try:
        if choice is None:
            sized = plan_for(plan["slots"], plan["context_per_slot"])
            return sized.as_dict(), _refusal(sized, shared), _draft_context_warning(name, draft, sized)
        sized, chosen = choose_slots(plan_for, n_ctx_train=shape.context_length if shape else None, **_bounds(choice))
    except ValueError as error:
        return plan_error(name, "cannot be sized: %s" % error, "Correct the plan's numbers")
    result = sized.as_dict()
    if not chosen:
        return result, _refusal(sized, shared, choice["floor_variable"]), None
    reason = "%s, within %s" % (chosen.reason, shared) if shared else chosen.reason
    reason += _smaller_kv_cache_note(plan, plan_for, chosen, choice, shape.context_length if shape else None)
    result.update(chosen_slots=chosen.slots, chosen_context_per_slot=chosen.context_per_slot, choice=reason,
                  message="%s; %s" % (reason, result["message"]))
    return result, None, _draft_context_warning(name, draft, sized)


def _draft_context_warning(name: str, draft: Mapping[str, Any], sized: MemoryPlan) -> Optional[str]:
    """A draft model trained for fewer tokens than a slot holds drafts worse past them; llama.cpp only warns
    (src/llama-context.cpp:327-330 at 0c1e57098)."""
    # A slot holds its cells, or a unified cache's whole pool (plan_for gives that as context_per_slot).
    trained = draft["shape"].context_length if draft.get("weights_bytes") else None
    if not trained or sized.context_per_slot <= trained:
        return None
    return "Memory plan %s: its %s was trained for %d tokens, and a slot holds up to %d: past %d its drafts " \
           "degrade (llama.cpp only warns). Pick a draft trained for longer, or fewer tokens a slot." % (
               name, draft["label"], trained, sized.context_per_slot, trained)


def _smaller_kv_cache_note(plan: Mapping[str, Any], plan_for: Callable[..., MemoryPlan], chosen: SlotChoice,
                           choice: Mapping[str, Any], n_ctx_train: Optional[int]) -> str:
    """Where the plan's KV cache type leaves one slot and q8_0 would hold more, say so; the plan keeps its
    type. A q8_0 cache decoded 7 % slower than f16 at an empty context and 22 % with 16k tokens in the slot
    (docs/BENCHMARKS.md): worth it for a second user at once, which only the owner can weigh."""
    if chosen.slots > 1 or choice["slots_max"] < 2 or not plan["flash_attention"] \
            or not smaller_kv_cache_saves(plan["kv_cache_type"]):
        return ""
    _, smaller = choose_slots(lambda slots, context: plan_for(slots, context, SMALLER_KV_CACHE_TYPE),
                              n_ctx_train=n_ctx_train, **_bounds(choice))
    if smaller is None or smaller.slots <= chosen.slots:
        return ""
    return " (kv_cache_type %s would hold %d slots x %d tokens, each decoding 7-22 %% slower: " \
           "docs/BENCHMARKS.md)" % (SMALLER_KV_CACHE_TYPE, smaller.slots, smaller.context_per_slot)


def _refusal(sized: MemoryPlan, shared: str, floor_variable: str = "") -> Optional[Refusal]:
    """The plan's refusal, saying where a share's limit comes from; a slot
    choice's remedies name the floor's variable, and a share gets no "add GPUs"."""
    refusal = sized.refusal()
    if refusal is None or not (shared or floor_variable):
        return refusal
    remedies = sized.remedies()
    if floor_variable:
        remedies = [remedy.replace("lower context_per_slot to", "lower %s to" % floor_variable)
                    for remedy in remedies]
    if shared:
        remedies = [remedy for remedy in remedies if not remedy.startswith("add GPUs")]
        remedies.append("give it other gpus, or lower the context or slots of the other plans there")
    fix = "; or ".join(remedies) or refusal.fix
    return Refusal(refusal.variable, refusal.value,
                   refusal.reason + (" (its memory is %s)" % shared if shared else ""),
                   fix[0].upper() + fix[1:], refusal.source)


def skipped(plan: Mapping[str, Any], reason: str) -> Result:
    """A plan not sized; a slot choice then takes llama-server's own count."""
    name, result = plan["name"], {"name": plan["name"], "skipped": True, "skip_reason": reason}
    warning = "Memory plan %s skipped: %s." % (name, reason)
    if plan["choose_slots"] is not None:
        shape = plan["shape"]
        try:
            chosen = unsized_slots(why=reason, n_ctx_train=shape.context_length if shape else None,
                                   **_bounds(plan["choose_slots"]))
        except ValueError as error:
            return plan_error(name, "cannot be sized: %s" % error, "Correct the plan's numbers")
        result.update(chosen_slots=chosen.slots, chosen_context_per_slot=chosen.context_per_slot,
                      choice=chosen.reason)
        warning = "Memory plan %s: %s." % (name, chosen.reason)
    return result, None, warning


def _bounds(choice: Mapping[str, Any]) -> Dict[str, Any]:
    """choose_slots' options without the name used in messages."""
    return {key: value for key, value in choice.items() if key != "floor_variable"}


def plan_error(name: str, reason: str, fix: str) -> Result:
    refusal = Refusal("memory_plans", name, reason, fix, SOURCE)
    return {"name": name, "skipped": True, "skip_reason": reason}, refusal, None
