# -*- coding: utf-8 -*-
"""llama-server instances: from llama_server_instances to command lines,
environments, schedules and memory plans, or the reasons they are refused.

Pure functions, no I/O, in two steps around the host's memory sizing:
``plan_instances`` checks the instances and says what to size (a fixed
context and slot count, or a slot choice for ctx_size/parallel "auto");
``instance_commands`` then writes each command line with the sizes chosen.
The llama_server role renders the result into systemd units. Flags are
llama.cpp 0c1e57098's (llama-server --help); -c is the total context over all
slots (measured, see memory_plan.llama_server_kv_cells), so each slot gets
ceil(c / np) tokens, or shares one pool of c with --kv-unified.
"""
from __future__ import annotations

import posixpath

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.v100.llm.plugins.module_utils.memory.plan import slot_cells
from ansible_collections.v100.llm.plugins.module_utils.models.sources import split_parts

INSTANCE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
# The shared timer units are <unit>-health.* and <unit>-restart.*.
RESERVED_SUFFIXES = ("-health", "-restart")
KV_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
SPLIT_MODES = ("none", "layer", "row", "tensor")
# --split-mode tensor (docs/multi-gpu.md at the pinned commit): experimental; llama.cpp refuses it without
# flash attention, and for these architectures (llm_arch_supports_sm_tensor in src/llama-arch.cpp at 0c1e57098,
# by their GGUF general.architecture names). Those docs also say it refuses a quantized KV cache; the source at
# that commit has no such check. On two GPUs (docs/BENCHMARKS.md, "Two GPUs") f16, q8_0, q5_1 and q4_0 for both K
# and V gave the tokens of split_mode layer, every pair of two types tried did not, and iq4_nl aborted
# (_tensor_errors); the other one-type caches are accepted by extension, untried.
TENSOR_REFUSED_KV_CACHE_TYPES = ("iq4_nl",)
TENSOR_UNSUPPORTED_ARCHITECTURES = frozenset((
    "grok", "mpt", "plamo2", "minicpm3", "gemma3n", "mamba", "mamba2", "jamba", "falcon-h1", "olmo2", "olmoe",
    "deepseek2", "deepseek32", "hy_v4", "dots3note", "glm-dsa", "bitnet", "t5", "nemotron_h", "nemotron_h_moe",
    "granitehybrid", "minimax-01", "minimax-m2", "minimax-m3", "mistral4", "kimi-linear", "bailingmoe3", "kimi-k3",
    "glm5-next", "qwen3tts", "qwen4exp"))
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
INSTANCE_KEYS = frozenset((
    "name", "model", "port", "host", "gpus", "ctx_size", "parallel", "kv_cache_type", "cache_type_k",
    "cache_type_v", "split_mode", "tensor_split", "gpu_layers", "flash_attention", "kv_unified", "batch_size",
    "ubatch_size", "extra_args", "restart_schedule", "api_key", "environment", "prompt_cache_mib", "speculative",
))
AUTO = "auto"
# Flags the role sets from instance keys; in extra_args they would contradict
# them (or, for --api-key, put the key on the command line, visible in ps).
ROLE_FLAGS = {
    "-m": "model", "--model": "model", "--host": "host", "--port": "port", "-c": "ctx_size",
    "--ctx-size": "ctx_size", "-np": "parallel", "--parallel": "parallel", "-ctk": "cache_type_k",
    "--cache-type-k": "cache_type_k", "-ctv": "cache_type_v", "--cache-type-v": "cache_type_v",
    "-ngl": "gpu_layers", "--gpu-layers": "gpu_layers", "--n-gpu-layers": "gpu_layers",
    "-fa": "flash_attention", "--flash-attn": "flash_attention", "-sm": "split_mode", "--split-mode": "split_mode",
    "-ts": "tensor_split", "--tensor-split": "tensor_split", "--api-key": "api_key", "--api-key-file": "api_key",
    "-kvu": "kv_unified", "--kv-unified": "kv_unified", "-no-kvu": "kv_unified", "--no-kv-unified": "kv_unified",
    "-b": "batch_size", "--batch-size": "batch_size", "-ub": "ubatch_size", "--ubatch-size": "ubatch_size",
    "-mg": "gpus and split_mode", "--main-gpu": "gpus and split_mode", "-dev": "gpus", "--device": "gpus",
    "-fit": "ctx_size and gpu_layers (the role sizes them)", "--fit": "ctx_size and gpu_layers (the role sizes them)",
    "-a": "name", "--alias": "name", "--metrics": "llama_server_metrics",
    "--webui": "llama_server_webui", "--no-webui": "llama_server_webui",
    # The deep health probe tells a busy server from a stuck one by /slots (server_systemd).
    "--no-slots": "nothing: the health probe reads /slots", "--slots": "nothing: /slots is on by default",
    "-cram": "prompt_cache_mib", "--cache-ram": "prompt_cache_mib", "--cache-idle-slots": "prompt_cache_mib",
    "--no-cache-idle-slots": "prompt_cache_mib",
    # A cap on each slot below ctx_size / parallel that the memory plan would not see (server-context.cpp).
    "--kv-unified-per-slot": "ctx_size and parallel (the role sizes each slot)",
}
# llama-server's host-RAM prompt cache (--cache-ram MiB; 8192 by default at 0c1e57098, -1 no limit, 0 off:
# common/arg.cpp, tools/server/server-context.cpp). Before a slot that held a long prompt serves another
# request, the server saves the old state into it: on an H100 with 16 IDE-sized prompts (issue 35) short
# requests then waited 7-111 s for their first token, 0.27-1.06 s with the cache off. The cache spares a user
# whose slot was taken the re-processing of their prompt, which with one slot per request is rarer than the
# stall; so the role turns it off unless asked.
PROMPT_CACHE_OFF_REASON = ("prompt cache off (--cache-ram 0): saving a long prompt's state to host RAM when its "
                           "slot is reused stalled other requests for seconds (llama_server_prompt_cache_mib)")
# Speculative decoding (--spec-type, common/speculative.cpp's type names at 0c1e57098). The n-gram types draft
# from n-grams of the slot's own context and need no second model. Their state is in host RAM (ngram-mod: one
# table of 4M int32 entries that all slots share, speculative.cpp:1876); GPU memory grows only by the logits of
# the drafted tokens the server verifies, at most n_parallel x (n_max + 1) rows capped at the batch
# (common_speculative_get_output_limits, speculative.cpp:2586). A draft model (`speculative: {draft: NAME}`,
# draft-simple) and the model's own MTP layers (draft-mtp) need a second context, which the memory plan counts
# (memory/plan.py DraftModel). A draft model is passed with --spec-type draft-simple: with -md alone llama-server
# infers a type only from a draft GGUF with MTP layers or a DFlash one, and otherwise loads the draft without
# drafting (common/arg.cpp:566-572, speculative.cpp:2270-2304 and 2620-2622). Eagle3, DFlash and DSpark need their own converted heads
# and are not planned. Nor ngram-cache: its per-slot cache is never reset between requests (begin() does nothing
# and cache_size only grows, speculative.cpp:2091-2116), so a new request is not indexed until it outgrows the
# slot's longest earlier one, and drafts from earlier requests meanwhile.
SPECULATIVE_TYPES = ("ngram-mod", "ngram-simple", "ngram-map-k", "ngram-map-k4v", "draft-mtp")
DRAFT_MODEL_TYPE = "draft-simple"
NOT_PLANNED_TYPES = {
    DRAFT_MODEL_TYPE: "a draft model is given as {draft: <models_list name>}, which the memory plan then counts",
    "ngram-cache": "its per-slot cache is not reset between requests at the pinned commit, so it drafts from "
                   "earlier requests (common/speculative.cpp:2091-2116)",
    "none": "it is off: write off",
}
SPECULATIVE_OFF = "off"
# Flags that choose or preset the speculative type, which `speculative` sets.
SPECULATIVE_FLAGS = ("--spec-type", "--spec-default")
# Flags that place or shape the second context, which the role sets from `speculative` and the KV cache types
# (common/arg.cpp:4090-4116, 4213-4236 at 0c1e570): in extra_args they would undo what the memory plan counts.
DRAFT_CONTEXT_FLAGS = ("-devd", "--spec-draft-device", "--device-draft", "-ngld", "--spec-draft-ngl",
                       "--gpu-layers-draft", "--n-gpu-layers-draft", "-ctkd", "--spec-draft-type-k",
                       "--cache-type-k-draft", "-ctvd", "--spec-draft-type-v", "--cache-type-v-draft", "-otd",
                       "--spec-draft-override-tensor", "--override-tensor-draft")
# How many tokens a draft context drafts at most, which MTP's memory depends on (common/common.h:328, arg.cpp:4140).
DRAFT_MAX_FLAG = "--spec-draft-n-max"
DRAFT_MAX_DEFAULT = 3
# And a draft model, which makes llama-server speculate too (common/arg.cpp:567-572, 3975, 4241 at 0c1e570).
DRAFT_MODEL_FLAGS = ("-md", "--spec-draft-model", "--model-draft", "-hfd", "-hfrd", "--spec-draft-hf",
                     "--hf-repo-draft")
# Bytes per element, to size the memory plan by the larger of the K and V caches.
KV_CACHE_RANK = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q5_1": 24 / 32, "q5_0": 22 / 32,
                 "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32}
SHORTHAND_CALENDARS = {"daily": "*-*-* 00:00:00", "weekly": "Mon *-*-* 00:00:00"}
CALENDAR_TIME = re.compile(r"^(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?$")
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def local_address(host: str) -> str:
    """Where on the host to reach a server bound to host: a wildcard bind answers on loopback."""
    if host in ("0.0.0.0", "::", "") or is_loopback(host):
        return "::1" if host in ("::1", "::") else "127.0.0.1"
    return host


def local_base_url(host: str, port: int) -> str:
    """Where the role and the health timer ask a server bound to host:port (/health, /v1/completions, ...)."""
    address = local_address(host)
    return "http://%s:%d" % ("[%s]" % address if ":" in address else address, port)


def endpoint(name: str, kind: str, host: str, port: int, model: str, key_file: str, key_variable: str,
             prompt_tokens_max: int) -> Dict[str, Any]:
    """What endpoint_check (playbooks/verify.yml) is handed: the roles' llama_server_endpoints and
    vllm_server_endpoints."""
    return {"name": name, "kind": kind, "url": local_base_url(host, port), "address": local_address(host),
            "port": port, "model": model, "key_file": key_file, "key_variable": key_variable,
            "prompt_tokens_max": prompt_tokens_max}


def calendar_time_checked(expression: str) -> None:
    """Raise ValueError for an OnCalendar expression whose time of day does not exist (25:00); one that ends
    otherwise ("hourly", "Mon..Fri *-*-* *:00") is systemd's to judge."""
    last = SHORTHAND_CALENDARS.get(expression.strip(), expression.strip()).rpartition(" ")[2]
    match = CALENDAR_TIME.match(last)
    if match and (int(match.group("hour")) > 23 or int(match.group("minute")) > 59
                  or int(match.group("second") or 0) > 59):
        raise ValueError("has no such time of day")


def staggered_calendar(base: str, offset_minutes: int) -> str:
    """Shift a systemd OnCalendar expression's time of day by offset_minutes.

    The expression must end with a fixed time (HH:MM or HH:MM:SS), or be
    daily/weekly. A shift past midnight would move the restart to another day
    than the one asked for, so it raises ValueError instead.
    """
    expression = SHORTHAND_CALENDARS.get(base.strip(), base.strip())
    head, _, last = expression.rpartition(" ")
    match = CALENDAR_TIME.match(last)
    if not match:
        raise ValueError("%r does not end with a fixed time of day (HH:MM or HH:MM:SS)" % base)
    try:
        calendar_time_checked(expression)
    except ValueError as error:
        raise ValueError("%r %s" % (base, error)) from None
    hour, minute = int(match.group("hour")), int(match.group("minute"))
    second = int(match.group("second") or 0)
    total = hour * 60 + minute + offset_minutes
    if total >= 24 * 60:
        raise ValueError("%r plus %d minutes passes midnight" % (base, offset_minutes))
    shifted = "%02d:%02d:%02d" % (total // 60, total % 60, second)
    return "%s %s" % (head, shifted) if head else shifted


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _model_path(model: Any, models_files: Mapping[str, Mapping[str, Any]]) -> Tuple[str, str, List[str]]:
    """-> (path, sha256, every file: the parts of a split set); path "" when unknown."""
    if isinstance(model, str) and model in models_files:
        entry = models_files[model]
        return (str(entry["path"]), str(entry.get("sha256") or ""),
                [str(part) for part in entry.get("parts") or [entry["path"]]])
    if isinstance(model, str) and model.startswith("/"):
        # A split set's part 1: the other parts, next to it, are inputs too.
        folder, name = posixpath.split(model)
        return model, "", [posixpath.join(folder, part) for part in split_parts(name)]
    return "", "", []


def refused_extra_args(extra_args: Sequence[str]) -> List[str]:
    refused = []
    for arg in extra_args:
        flag = str(arg).split("=", 1)[0]
        if flag in ROLE_FLAGS:
            # The flag only: its value may be a key.
            refused.append("%s (set %s instead)" % (flag, ROLE_FLAGS[flag]))
    return refused


def _instance_errors(where: str, instance: Mapping[str, Any], settings: Mapping[str, Any],
                     models_files: Mapping[str, Any]) -> List[str]:
    errors = []
    unknown = sorted(set(instance) - INSTANCE_KEYS)
    if unknown:
        errors.append("%s has unknown keys %s: the keys are %s." % (where, ", ".join(unknown),
                                                                    ", ".join(sorted(INSTANCE_KEYS))))
    name = instance.get("name")
    if not isinstance(name, str) or not INSTANCE_NAME.match(name) or name.endswith(RESERVED_SUFFIXES):
        errors.append("%s.name=%r is not an instance name: use lowercase letters, digits and '-', at most 40, "
                      "not ending in -health or -restart (it names the unit llama-server-<name>)." % (where, name))
    if not _int_in(instance.get("port"), 1, 65535):
        errors.append("%s.port=%r is not a TCP port: give a number from 1 to 65535." % (where, instance.get("port")))
    errors += _environment_errors(where, instance.get("environment", {}))
    model = instance.get("model")
    if isinstance(model, str) and (models_files.get(model) or {}).get("folder"):
        errors.append("%s.model=%r is a Hugging Face model folder (for vllm_server_model): llama-server loads a "
                      ".gguf file; name a models_list entry with a .gguf file." % (where, model))
    elif not _model_path(model, models_files)[0]:
        errors.append("%s.model=%r is neither a models_list name (known: %s) nor an absolute path to a "
                      ".gguf file." % (where, model, _known_gguf_models(models_files)))
    sizes_valid = True
    for key in ("ctx_size", "parallel"):
        label, value = _setting(where, instance, settings, key)
        if value != AUTO and not _int_in(value, 1, 10_000_000):
            sizes_valid = False
            errors.append("%s=%r must be a positive whole number, or auto (sized to the GPU's memory)." % (
                label, value))
    if sizes_valid:  # the role-wide settings were checked first (plan_instances)
        errors += _short_slot_errors(where, instance, settings)
    for key in ("batch_size", "ubatch_size"):
        label, value = _setting(where, instance, settings, key)
        if not _int_in(value, 1, 1_000_000):
            errors.append("%s=%r must be a positive whole number (llama-server's -b/-ub; its defaults are "
                          "2048 and 512)." % (label, value))
    label, value = _setting(where, instance, settings, "prompt_cache_mib")
    if not _int_in(value, -1, 10_000_000):
        errors.append("%s=%r must be a whole number of MiB: 0 turns llama-server's prompt cache off, -1 leaves it "
                      "unlimited." % (label, value))
    errors += _speculative_errors(where, instance, settings, models_files)
    label, value = _setting(where, instance, settings, "gpu_layers")
    if not _int_in(value, 0, 100_000):
        errors.append("%s=%r must be a whole number of layers, 0 or more (999: all of them); the memory plan "
                      "counts every layer on the GPUs." % (label, value))
    label, value = _setting(where, instance, settings, "kv_unified")
    if not isinstance(value, bool):
        errors.append("%s=%r must be true or false." % (label, value))
    for key, value in zip(("cache_type_k", "cache_type_v"), _cache_types(instance, settings)):
        if value not in KV_CACHE_TYPES:
            errors.append("%s.%s=%r is not a KV cache type: use one of %s." % (
                where, key, value, ", ".join(KV_CACHE_TYPES)))
    cache_v = _cache_types(instance, settings)[1]
    if cache_v not in ("f32", "f16", "bf16") and not instance.get("flash_attention", settings["flash_attention"]):
        errors.append("%s: a quantized V cache (cache_type_v=%s) needs flash attention in llama.cpp: set "
                      "flash_attention: true or an f16 V cache." % (where, cache_v))
    host_label, host = _setting(where, instance, settings, "host")
    if not isinstance(host, str) or not host:
        errors.append("%s=%r must be an address to listen on." % (host_label, host))
    elif not is_loopback(host) and not (instance.get("api_key") or settings["api_key_set"]):
        errors.append("%s=%s listens beyond this machine without an API key: set llama_server_api_key (in a "
                      "vault) or the api_key of %s, or keep host 127.0.0.1." % (host_label, host, where))
    key = instance.get("api_key")
    if key not in (None, "") and (not isinstance(key, str) or not key.strip() or CONTROL_CHARACTERS.search(key)):
        # llama-server reads one key per line of --api-key-file; a blank key makes the probes' header invalid.
        errors.append("%s.api_key is blank or holds a control character (a newline from a vault file?): llama-server "
                      "would read it as other keys. Strip it." % where)
    schedule = instance.get("restart_schedule")
    if schedule not in (None, ""):
        try:
            if not isinstance(schedule, str):
                raise ValueError("is not an OnCalendar expression")
            calendar_time_checked(schedule)
        except ValueError as error:
            errors.append("%s.restart_schedule=%r %s: systemd would refuse the timer. Give an OnCalendar "
                          "expression such as '*-*-* 04:00:00', or \"\" for no scheduled restart." % (
                              where, schedule, error))
    extra = instance.get("extra_args", [])
    if not isinstance(extra, list):
        errors.append("%s.extra_args must be a list of arguments." % where)
    else:
        refused = refused_extra_args(extra + list(settings["extra_args"]))
        if refused:
            errors.append("%s: extra arguments %s are set by the role: %s." % (
                where, ", ".join(refused), "use the instance keys named there"))
    errors += _gpu_errors(where, instance, settings, models_files)
    return errors


def _known_gguf_models(models_files: Mapping[str, Any]) -> str:
    """The models_list names of .gguf files, for a refusal."""
    return ", ".join(sorted(name for name in models_files if not models_files[name].get("folder"))) \
        or "none: the models role has not run"


def draft_model(speculative: Any) -> Any:
    """The draft model a `speculative` setting names ({draft: NAME}), or None."""
    return speculative.get("draft") if isinstance(speculative, Mapping) else None


def _speculative_errors(where: str, instance: Mapping[str, Any], settings: Mapping[str, Any],
                        models_files: Mapping[str, Any]) -> List[str]:
    label, value = _setting(where, instance, settings, "speculative")
    if isinstance(value, Mapping):
        draft = value.get("draft")
        if set(value) != {"draft"}:
            return ["%s=%r is not a draft model setting: give {draft: <models_list name>} and nothing else (more "
                    "drafted tokens: --spec-draft-n-max in extra_args)." % (label, dict(value))]
        if isinstance(draft, str) and (models_files.get(draft) or {}).get("folder") \
                or not _model_path(draft, models_files)[0]:
            return ["%s.draft=%r is neither a models_list name of a .gguf file (known: %s) nor an absolute path "
                    "to one." % (label, draft, _known_gguf_models(models_files))]
        flags = SPECULATIVE_FLAGS + DRAFT_MODEL_FLAGS + DRAFT_CONTEXT_FLAGS
    elif value != SPECULATIVE_OFF and value not in SPECULATIVE_TYPES:
        why = ' (YAML reads an unquoted off as false: write "off")' if value is False \
            else " (%s)" % NOT_PLANNED_TYPES[value] if value in NOT_PLANNED_TYPES \
            else " (its converted draft heads are not planned)" if str(value).startswith("draft-") \
            else " (one type: llama-server's comma-separated list is not planned)" if "," in str(value) else ""
        return ["%s=%r is not a speculative decoding type the role plans: use off, one of %s, or {draft: "
                "<models_list name>}%s." % (label, value, ", ".join(SPECULATIVE_TYPES), why)]
    else:
        flags = SPECULATIVE_FLAGS + (DRAFT_MODEL_FLAGS + DRAFT_CONTEXT_FLAGS if value == "draft-mtp" else ())
    extra = instance.get("extra_args") if isinstance(instance.get("extra_args"), list) else []
    given = [str(arg).split("=", 1)[0] for arg in list(settings["extra_args"]) + extra
             if str(arg).split("=", 1)[0] in flags]
    if value != SPECULATIVE_OFF and given:
        return ["%s=%s and extra arguments %s both choose how llama-server speculates: keep one (the role sets the "
                "draft context's flags from it and from the KV cache types)." % (label, value, ", ".join(given))]
    return []


def _setting(where: str, instance: Mapping[str, Any], settings: Mapping[str, Any], key: str) -> Tuple[str, Any]:
    """(the name to quote, the value): the instance's key, or the role variable it falls back to."""
    if key in instance:
        return "%s.%s" % (where, key), instance[key]
    return "llama_server_%s" % key, settings[key]


# What one request needs, named as the role's variables in messages.
REQUEST_VARIABLES = "llama_server_prompt_tokens_max + llama_server_answer_tokens_max"


def request_tokens(settings: Mapping[str, Any]) -> int:
    """Tokens a slot needs for one request: its longest prompt and its longest answer. llama-server
    (tools/server/server-context.cpp at 0c1e57098) answers HTTP 400 to a prompt that does not fit its slot
    ("exceeds the available context size") and, without context shift (its default), ends an answer where
    prompt and answer fill the slot (it stops once prompt + answer + 1 reaches the slot, before the last
    sampled token is added): a prompt of P tokens gets slot - P. scripts/test checks it on the demo's
    2048-token slot: a 1536-token prompt gets its 512 tokens, and a 2048-token one HTTP 400."""
    return settings["prompt_tokens_max"] + settings["answer_tokens_max"]


def settings_errors(settings: Mapping[str, Any]) -> List[str]:
    """The role-wide slot bounds and workload, checked once."""
    errors = ["llama_server_%s=%r must be a positive whole number." % (key, settings[key])
              for key in ("slots_max", "prompt_tokens_max", "answer_tokens_max", "slot_context_max")
              if not _int_in(settings[key], 1, 10_000_000)]
    if not errors and request_tokens(settings) > settings["slot_context_max"]:
        errors.append("%s = %d tokens is more than llama_server_slot_context_max=%d: raise the maximum, or lower "
                      "the longest prompt or answer." % (REQUEST_VARIABLES, request_tokens(settings),
                                                         settings["slot_context_max"]))
    return errors


def _short_slot_errors(where: str, instance: Mapping[str, Any], settings: Mapping[str, Any]) -> List[str]:
    """A fixed ctx_size that leaves a slot less than one request needs: the run would succeed and the
    clients' long prompts get HTTP 400. (ctx_size auto sizes the slots to it: _sizing.)"""
    sizing = _sizing(instance, settings)
    if "ctx_size" not in sizing:
        return []
    kv_unified = instance.get("kv_unified", settings["kv_unified"])
    per_slot = slot_cells(sizing["ctx_size"], sizing["parallel"], kv_unified)
    needed = request_tokens(settings)
    if per_slot >= needed:
        return []
    ctx_label, ctx_size = _setting(where, instance, settings, "ctx_size")
    np_label, np_value = _setting(where, instance, settings, "parallel")
    slots = "%d" % sizing["parallel"] if np_value != AUTO else "auto (%d slot%s)" % (
        sizing["parallel"], "" if sizing["parallel"] == 1 else "s")
    return ["%s=%d with %s=%s leaves each slot %d tokens, less than one request needs: %s = %d + %d = %d "
            "(a longer prompt gets HTTP 400 from llama-server). Set ctx_size to auto, or to at least %d, or "
            "fewer parallel slots; or lower llama_server_prompt_tokens_max and llama_server_answer_tokens_max to "
            "what the clients send." % (
                ctx_label, ctx_size, np_label, slots, per_slot, REQUEST_VARIABLES,
                settings["prompt_tokens_max"], settings["answer_tokens_max"], needed,
                needed if kv_unified else needed * sizing["parallel"])]


def _gpu_errors(where: str, instance: Mapping[str, Any], settings: Mapping[str, Any],
                models_files: Mapping[str, Any]) -> List[str]:
    gpus = instance.get("gpus", [])
    gpu_count = settings["gpu_count"]
    if not isinstance(gpus, list) or not all(_int_in(gpu, 0, 63) for gpu in gpus) or len(set(gpus)) != len(gpus):
        return ["%s.gpus=%r must be a list of distinct GPU indexes (nvidia-smi's), e.g. [0] or [0, 1]." % (
            where, gpus)]
    errors = []
    if gpus and settings["backend"] != "cuda":
        errors.append("%s.gpus=%r, but llama.cpp here is a %s build: remove gpus, or build for CUDA on a host "
                      "with GPUs." % (where, gpus, settings["backend"]))
    elif gpu_count and any(gpu >= gpu_count for gpu in gpus):
        errors.append("%s.gpus=%r names a GPU this host does not have: it has %d (indexes 0-%d)." % (
            where, gpus, gpu_count, gpu_count - 1))
    split_mode = instance.get("split_mode", "layer" if len(gpus) > 1 else "none")
    if split_mode not in SPLIT_MODES:
        errors.append("%s.split_mode=%r is not one of %s." % (where, split_mode, ", ".join(SPLIT_MODES)))
    elif split_mode != "none" and len(gpus) < 2:
        errors.append("%s.split_mode=%s splits across GPUs but gpus=%r lists fewer than two." % (
            where, split_mode, gpus))
    if split_mode == "tensor":
        errors += _tensor_errors(where, instance, settings, models_files)
    tensor_split = instance.get("tensor_split")
    if tensor_split is not None and (
            not isinstance(tensor_split, list) or len(tensor_split) != len(gpus) or len(gpus) < 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in tensor_split)):
        errors.append("%s.tensor_split=%r must list one non-negative share per GPU in gpus=%r (e.g. [1, 1])." % (
            where, tensor_split, gpus))
    return errors


# Set by the role (CUDA_* from gpus, HOME and the CUDA cache in the unit): an instance cannot change them.
ROLE_ENVIRONMENT = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HOME", "CUDA_CACHE_PATH")


def _environment_errors(where: str, environment: Any) -> List[str]:
    """An instance's own environment (e.g. GGML_CUDA_DISABLE_GRAPHS: "1"): names and plain values only."""
    if not isinstance(environment, Mapping):
        return ["%s.environment=%r must be a mapping of variable names to values." % (where, environment)]
    errors = []
    for name, value in environment.items():
        if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            errors.append("%s.environment has %r, which is not a variable name." % (where, name))
        elif name in ROLE_ENVIRONMENT:
            errors.append("%s.environment sets %s, which the role sets (gpus for CUDA_VISIBLE_DEVICES and "
                          "CUDA_DEVICE_ORDER): remove it." % (where, name))
        elif name.startswith("LLAMA_ARG_") or name == "LLAMA_API_KEY":
            # llama.cpp reads these as flags (common/arg.cpp set_env): they would pass what extra_args refuses,
            # and a key here would sit in the unit, readable by every user.
            errors.append("%s.environment sets %s, which llama-server reads as a command-line flag: use the "
                          "instance's own keys, extra_args (checked) or api_key instead." % (where, name))
        elif not isinstance(value, (str, int, float)) or isinstance(value, bool) or any(
                ord(char) < 32 for char in str(value)):
            errors.append("%s.environment.%s=%r must be a string or number without control characters "
                          "(quote true/false as strings)." % (where, name, value))
    return errors


def _tensor_errors(where: str, instance: Mapping[str, Any], settings: Mapping[str, Any],
                   models_files: Mapping[str, Any]) -> List[str]:
    """What --split-mode tensor cannot serve, refused here before any change: what llama.cpp stops at start
    (docs/multi-gpu.md, section 4, at the pinned commit), and the KV cache settings that gave other tokens than
    layer mode, or aborted, on two GPUs (docs/BENCHMARKS.md, "Two GPUs")."""
    errors = []
    if not instance.get("flash_attention", settings["flash_attention"]):
        errors.append("%s.split_mode=tensor needs flash attention, which is off: llama.cpp stops with "
                      "\"SPLIT_MODE_TENSOR requires flash_attn to be enabled\". Set flash_attention: true, or "
                      "split_mode: layer." % where)
    cache_k, cache_v = _cache_types(instance, settings)
    if cache_k != cache_v:
        errors.append("%s.split_mode=tensor with cache_type_k=%s and cache_type_v=%s: with two cache types tensor "
                      "mode computed other numbers than split_mode layer on two GPUs (other greedy tokens; bf16 with "
                      "f16 too), unlike f16, q8_0, q5_1 or q4_0 for both (docs/BENCHMARKS.md, \"Two GPUs\"); what "
                      "that does to answers is not known. Set kv_cache_type (one type for K and V), or use "
                      "split_mode: layer." % (where, cache_k, cache_v))
    refused = sorted({cache_k, cache_v} & set(TENSOR_REFUSED_KV_CACHE_TYPES))
    if refused:
        errors.append("%s.split_mode=tensor cannot use the KV cache type %s: CUDA's flash attention has no kernel "
                      "for it (ggml/src/ggml-cuda/fattn.cu at the pinned commit), and llama-server aborted at load "
                      "(\"unsupported mul_mat split states\"). Set kv_cache_type (and cache_type_k/cache_type_v) "
                      "to q8_0, q5_1, q4_0 or f16, or use split_mode: layer." % (where, "/".join(refused)))
    model = instance.get("model")
    gguf = (models_files.get(model) or {}).get("gguf") if isinstance(model, str) else None
    architecture = (gguf or {}).get("architecture")
    if architecture in TENSOR_UNSUPPORTED_ARCHITECTURES:
        errors.append("%s.split_mode=tensor is not implemented for the %s architecture of model %s (llama.cpp "
                      "stops with \"LLAMA_SPLIT_MODE_TENSOR not implemented\"). Use split_mode: layer." % (
                          where, architecture, model))
    return errors


def _default_gpus(settings: Mapping[str, Any]) -> List[int]:
    """What an instance without `gpus` sees: every GPU (no CUDA_VISIBLE_DEVICES), unless a
    display card is kept out of serving; then the serving GPUs only."""
    serving = settings.get("serving_gpus")
    if serving is None or len(serving) >= settings["gpu_count"]:
        return []
    return list(serving)


def _cache_types(instance: Mapping[str, Any], settings: Mapping[str, Any]) -> Tuple[str, str]:
    kv = instance.get("kv_cache_type", settings["kv_cache_type"])
    return instance.get("cache_type_k", kv), instance.get("cache_type_v", kv)


def _gpus_seen(gpus: Sequence[int], settings: Mapping[str, Any]) -> int:
    """How many GPUs an instance's llama.cpp sees: its gpus, else the serving ones, else all."""
    return len(gpus) or len(settings.get("serving_gpus") or ()) or settings["gpu_count"]


def _launch(instance: Mapping[str, Any], settings: Mapping[str, Any], model_path: str, draft_path: str,
            key_file: str) -> Dict[str, Any]:
    """Every llama-server setting of one instance but the sizes (instance_commands adds them)."""
    cache_k, cache_v = _cache_types(instance, settings)
    gpus = instance.get("gpus", [])
    split = len(gpus) > 1 and settings["backend"] == "cuda"
    # Without -ts llama.cpp splits the layers by each GPU's free memory when it starts, which then
    # depends on what runs there already; the plan counts equal shares, so they are always passed.
    visible = _gpus_seen(gpus, settings)
    split_mode = instance.get("split_mode", "layer") if split else None
    tensor_split = instance.get("tensor_split") or [1] * visible \
        if settings["backend"] == "cuda" and visible > 1 and split_mode != "none" else None
    return {
        "server_bin": settings["server_bin"],
        "model_path": model_path,
        "alias": str(instance["model"]) if not str(instance["model"]).startswith("/") else instance["name"],
        "host": instance.get("host", settings["host"]),
        "port": instance["port"],
        "kv_unified": instance.get("kv_unified", settings["kv_unified"]),
        "batch_size": instance.get("batch_size", settings["batch_size"]),
        "ubatch_size": instance.get("ubatch_size", settings["ubatch_size"]),
        "prompt_cache_mib": instance.get("prompt_cache_mib", settings["prompt_cache_mib"]),
        "speculative": instance.get("speculative", settings["speculative"]),
        "draft_path": draft_path,
        "cache_type_k": cache_k,
        "cache_type_v": cache_v,
        "flash_attention": bool(instance.get("flash_attention", settings["flash_attention"])),
        "gpu_layers": instance.get("gpu_layers", settings["gpu_layers"]) if settings["backend"] == "cuda" else None,
        "split_mode": split_mode,
        "tensor_split": tensor_split,
        "metrics": settings["metrics"],
        "webui": settings["webui"],
        "key_file": key_file,
        "extra_args": [str(arg) for arg in settings["extra_args"]] + [str(arg) for arg in instance.get("extra_args", [])],
    }


def _argv(launch: Mapping[str, Any], ctx_size: int, parallel: int) -> List[str]:
    argv = [
        launch["server_bin"],
        "--model", launch["model_path"],
        "--alias", launch["alias"],
        "--host", launch["host"],
        "--port", str(launch["port"]),
        "--ctx-size", str(ctx_size),
        "--parallel", str(parallel),
        "--kv-unified" if launch["kv_unified"] else "--no-kv-unified",
        "--batch-size", str(launch["batch_size"]),
        "--ubatch-size", str(launch["ubatch_size"]),
        "--cache-type-k", launch["cache_type_k"],
        "--cache-type-v", launch["cache_type_v"],
        "--flash-attn", "on" if launch["flash_attention"] else "off",
        "--cache-ram", str(launch["prompt_cache_mib"]),
        # Saving idle slots needs the cache (on by default upstream; without it llama-server warns at each start).
        *(["--no-cache-idle-slots"] if launch["prompt_cache_mib"] == 0 else []),
        # The role sizes the context and layers itself (memory plan); llama.cpp's own fitting
        # (--fit, on by default at 0c1e57098) would only log that it cannot.
        "--fit", "off",
    ]
    argv += speculative_argv(launch)
    argv += _gpu_args(launch, ("--gpu-layers", "--split-mode", "--tensor-split"), ",")
    if launch["metrics"]:
        argv.append("--metrics")
    argv.append("--webui" if launch["webui"] else "--no-webui")
    if launch["key_file"]:
        argv += ["--api-key-file", launch["key_file"]]
    return argv + launch["extra_args"]


def speculative_argv(launch: Mapping[str, Any]) -> List[str]:
    """The flags of the instance's `speculative` setting."""
    if launch["speculative"] == SPECULATIVE_OFF:
        return []
    # The second context's K and V as the model's (f16 otherwise: a 0.6B draft's f16 cache of 4 slots x 20k
    # tokens is 8.75 GiB).
    cache_types = ["--spec-draft-type-k", launch["cache_type_k"], "--spec-draft-type-v", launch["cache_type_v"]]
    if draft_model(launch["speculative"]):
        # Every draft layer on the GPUs, as the memory plan counts them (what auto means under --fit off too:
        # src/llama-model.cpp:2004; said, not left to a default).
        return ["--spec-type", DRAFT_MODEL_TYPE, "--spec-draft-model", launch["draft_path"]] + cache_types + (
            ["--spec-draft-ngl", "all"] if launch["gpu_layers"] is not None else [])
    if launch["speculative"] == "draft-mtp":
        return ["--spec-type", "draft-mtp"] + cache_types
    return ["--spec-type", launch["speculative"]]


def draft_max(extra_args: Sequence[str]) -> int:
    """--spec-draft-n-max from the extra arguments, else llama.cpp's default."""
    for position, arg in enumerate(extra_args):
        value = arg.split("=", 1)[1] if arg.startswith(DRAFT_MAX_FLAG + "=") else \
            extra_args[position + 1] if arg == DRAFT_MAX_FLAG and position + 1 < len(extra_args) else None
        if value is not None and value.isdigit():
            return int(value)
    return DRAFT_MAX_DEFAULT


def speculative_label(speculative: Any) -> str:
    """How reports name a `speculative` setting: the type, or draft-simple with the draft model's name."""
    draft = draft_model(speculative)
    return "%s %s" % (DRAFT_MODEL_TYPE, posixpath.basename(str(draft))) if draft else str(speculative)


def _sizing(instance: Mapping[str, Any], settings: Mapping[str, Any]) -> Dict[str, Any]:
    """What the memory plan sizes: fixed -c/-np, or a slot choice for "auto".

    ctx_size given, parallel auto: as many slots as keep one request each
    (request_tokens; at most slots_max); no memory is needed to decide that.
    parallel given, ctx_size auto: that many slots, as many tokens each as fit.
    """
    ctx_size = instance.get("ctx_size", settings["ctx_size"])
    parallel = instance.get("parallel", settings["parallel"])
    if ctx_size != AUTO and parallel == AUTO:
        parallel = max([count for count in range(1, settings["slots_max"] + 1)
                        if slot_cells(ctx_size, count, False) >= request_tokens(settings)] or [1])
    if ctx_size != AUTO:
        return {"ctx_size": ctx_size, "parallel": parallel}
    slots_min, slots_max = (1, settings["slots_max"]) if parallel == AUTO else (parallel, parallel)
    return {"choose_slots": {"slots_min": slots_min, "slots_max": slots_max,
                             "context_min": request_tokens(settings),
                             "context_max": settings["slot_context_max"]}}


def _memory_plan(name: str, model: str, model_path: str, gpus: Sequence[int], settings: Mapping[str, Any],
                 launch: Mapping[str, Any], sizing: Mapping[str, Any]) -> Dict[str, Any]:
    """nvidia_stack_check's memory plan: gpus [] is every serving GPU, which
    llama.cpp splits the layers over as it does over named ones; -sm none
    keeps everything on the first (the main GPU, index 0 of what it sees),
    and -ts gives each GPU its share."""
    spread = _gpus_seen(gpus, settings)
    if launch["split_mode"] == "none":
        gpus, spread = list(gpus[:1]), 1
    spec = {
        "name": "llama_server_instances %s (%s)" % (name, model),
        "gguf_path": model_path,
        "kv_cache_type": max((launch["cache_type_k"], launch["cache_type_v"]), key=KV_CACHE_RANK.__getitem__),
        "gpus": list(gpus),
        "gpu_count": max(1, spread),
        "tensor_split": launch["tensor_split"],
        "split_mode": "tensor" if launch["split_mode"] == "tensor" else "layer",
        "flash_attention": launch["flash_attention"],
        # llama.cpp runs micro-batches of at most the batch (src/llama-context.cpp: n_ubatch = min(n_batch, ...)).
        "ubatch": min(launch["ubatch_size"], launch["batch_size"]),
        "swa_full": "--swa-full" in launch["extra_args"],
    }
    if draft_model(launch["speculative"]):
        spec["draft"] = {"gguf_path": launch["draft_path"], "kv_cache_type": spec["kv_cache_type"]}
    elif launch["speculative"] == "draft-mtp":
        spec["draft"] = {"mtp": True, "kv_cache_type": spec["kv_cache_type"],
                         "draft_max": draft_max(launch["extra_args"])}
    if "choose_slots" in sizing:
        spec.update(choose_slots=dict(sizing["choose_slots"], floor_variable=REQUEST_VARIABLES),
                    kv_unified=launch["kv_unified"])
        return spec
    # Fixed sizes: the request is given on its own, for the model's trained context.
    spec["request"] = {"tokens": request_tokens(settings), "variable": REQUEST_VARIABLES}
    if launch["kv_unified"]:
        # One stream of -c cells that every slot shares (memory_plan.llama_server_kv_cells).
        spec.update(context_per_slot=sizing["ctx_size"], slots=1, sequences_per_stream=sizing["parallel"])
    else:
        spec.update(context_per_slot=slot_cells(sizing["ctx_size"], sizing["parallel"], False), slots=sizing["parallel"])
    return spec


def plan_instances(instances: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
                   models_files: Optional[Mapping[str, Mapping[str, Any]]] = None) -> Dict[str, Any]:
    """llama_server_instances -> {"instances": [plan, ...], "errors": [message, ...]}.

    settings: server_bin, backend (cuda | cpu), gpu_count, serving_gpus
    (nvidia_serving_gpu_indexes; None when unknown), host, api_key_set,
    ctx_size, parallel, kv_cache_type, gpu_layers, flash_attention, metrics,
    webui, extra_args, config_dir, restart_schedule ("" for none),
    restart_stagger_minutes. An instance's `gpus` are nvidia-smi indexes (a
    display card's index included, on purpose); without them it sees the
    serving GPUs.
    A plan: name, unit, model, model_path, model_sha256, host, port,
    health_url, argv, environment, key_file, restart_calendar, memory_plan
    (for nvidia_stack_check's memory_plans).
    """
    models_files = models_files or {}
    if not isinstance(instances, (list, tuple)):
        return {"instances": [], "errors": ["llama_server_instances must be a list (got %r)." % (instances,)]}
    errors: List[str] = settings_errors(settings)
    if errors:
        return {"instances": [], "errors": errors}
    plans: List[Dict[str, Any]] = []
    for index, instance in enumerate(instances):
        where = "llama_server_instances[%d]" % index
        if not isinstance(instance, Mapping):
            errors.append("%s=%r is not a mapping with name, model and port." % (where, instance))
            continue
        where += " (%s)" % instance.get("name")
        instance_errors = _instance_errors(where, instance, settings, models_files)
        schedule = instance.get("restart_schedule")
        calendar = ""
        if not instance_errors:
            try:
                calendar = schedule if schedule is not None else (
                    staggered_calendar(settings["restart_schedule"], index * settings["restart_stagger_minutes"])
                    if settings["restart_schedule"] else "")
            except ValueError as error:
                instance_errors.append(
                    "llama_server_restart_schedule=%r cannot be staggered for %s: %s. Give a schedule ending with "
                    "a time of day early enough for every instance (e.g. '*-*-* 04:00:00'), a smaller "
                    "llama_server_restart_stagger_minutes, or the instance its own restart_schedule." % (
                        settings["restart_schedule"], where, error))
        errors += instance_errors
        if instance_errors:
            continue
        model_path, model_sha256, model_parts = _model_path(instance["model"], models_files)
        speculative = instance.get("speculative", settings["speculative"])
        draft_path, _, draft_parts = _model_path(draft_model(speculative), models_files)
        key_file = ("%s/%s.key" % (settings["config_dir"], instance["name"])
                    if instance.get("api_key") or settings["api_key_set"] else "")
        gpus = instance.get("gpus", [])
        visible = gpus or _default_gpus(settings)
        environment = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(map(str, visible))} \
            if settings["backend"] == "cuda" and visible else {}
        environment.update({name: str(value) for name, value in instance.get("environment", {}).items()})
        host = instance.get("host", settings["host"])
        base_url = local_base_url(host, instance["port"])
        launch = _launch(instance, settings, model_path, draft_path, key_file)
        plans.append({
            "name": instance["name"],
            "unit": "llama-server-%s" % instance["name"],
            "model": instance["model"],
            "model_path": model_path,
            "model_sha256": model_sha256,
            "host": host,
            "port": instance["port"],
            "health_url": base_url + "/health",
            # The health timer's 1-token completion (server_systemd), and /slots to tell a busy server from a hung one.
            "deep_probe": {"url": base_url + "/v1/completions", "key_file": key_file, "busy_url": base_url + "/slots"},
            "launch": launch,
            "sizing": _sizing(instance, settings),
            "environment": environment,
            "key_file": key_file,
            "endpoint": dict(endpoint(instance["name"], "llama-server", host, instance["port"], launch["alias"],
                                      key_file, "", settings["prompt_tokens_max"]),
                             engine={"unit": "llama-server-%s" % instance["name"], "argv": bench_argv(launch),
                                     "environment": environment}),
            # What the server reads when it starts: one changed since restarts it (unit_freshness).
            "inputs": [path for path in [key_file] + model_parts + draft_parts + [settings["server_bin"]] if path],
            "restart_calendar": calendar,
        })
        plans[-1]["memory_plan"] = _memory_plan(instance["name"], instance["model"], model_path, gpus, settings,
                                                plans[-1]["launch"], plans[-1]["sizing"])
    errors += _clashes(plans)
    return {"instances": plans if not errors else [], "errors": errors}


def bench_argv(launch: Mapping[str, Any]) -> List[str]:
    """llama-bench with the instance's engine settings (tools/llama-bench at the pinned commit: -fa on|off,
    -ts split by "/"): what playbooks/benchmark.yml measures the engine alone with, the server stopped."""
    argv = [launch["server_bin"].rsplit("/", 1)[0] + "/llama-bench", "-m", launch["model_path"],
            "-b", str(launch["batch_size"]), "-ub", str(launch["ubatch_size"]),
            "-ctk", launch["cache_type_k"], "-ctv", launch["cache_type_v"],
            "-fa", "on" if launch["flash_attention"] else "off"]
    return argv + _gpu_args(launch, ("-ngl", "-sm", "-ts"), "/")


def _gpu_args(launch: Mapping[str, Any], flags: Tuple[str, str, str], separator: str) -> List[str]:
    """Layers offloaded, split mode and tensor split, under the tool's flags (llama-server's or llama-bench's)."""
    layers, split_mode, tensor_split = flags
    return ([layers, str(launch["gpu_layers"])] if launch["gpu_layers"] is not None else []) + \
        ([split_mode, launch["split_mode"]] if launch["split_mode"] else []) + \
        ([tensor_split, separator.join("%g" % share for share in launch["tensor_split"])]
         if launch["tensor_split"] is not None else [])


def _clashes(plans: Sequence[Mapping[str, Any]]) -> List[str]:
    errors = []
    for key in ("name", "port"):
        seen: Dict[Any, int] = {}
        for plan in plans:
            seen[plan[key]] = seen.get(plan[key], 0) + 1
        errors += ["llama_server_instances has %d instances with %s %s: each needs its own." % (count, key, value)
                   for value, count in seen.items() if count > 1]
    calendars: Dict[str, List[str]] = {}
    for plan in plans:
        if plan["restart_calendar"]:
            calendars.setdefault(plan["restart_calendar"], []).append(plan["name"])
    errors += ["llama_server_instances %s would restart together (restart_schedule %r): give them different "
               "times." % (" and ".join(names), calendar) for calendar, names in calendars.items() if len(names) > 1]
    return errors


def instance_commands(planned: Mapping[str, Any], sized: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """plan_instances' result and the host's memory plans (nvidia_stack_check's
    memory_plans, [] when not sized) -> the same with each instance's ctx_size,
    parallel, slot_choice and argv.

    An "auto" instance takes the slots and tokens per slot its memory plan
    chose: -c is their product (each slot's share, or the shared pool with
    --kv-unified) and -np the slots.
    """
    by_name = {plan.get("name"): plan for plan in sized}
    instances, errors = [], list(planned.get("errors", []))
    for plan in planned.get("instances", []):
        sizing, chosen = plan["sizing"], by_name.get(plan["memory_plan"]["name"], {})
        if "choose_slots" in sizing:
            if not chosen.get("chosen_slots") or not chosen.get("chosen_context_per_slot"):
                errors.append("llama_server_instances %s: its slots were not sized (%s): give the instance "
                              "ctx_size and parallel as numbers, or run the role again with its model and GPU "
                              "facts there." % (plan["name"], chosen.get("skip_reason", "no memory plan came back")))
                continue
            ctx_size = chosen["chosen_slots"] * chosen["chosen_context_per_slot"]
            parallel = chosen["chosen_slots"]
        else:
            ctx_size, parallel = sizing["ctx_size"], sizing["parallel"]
        cache = plan["launch"]["prompt_cache_mib"]
        # benchmark.yml compares plain decoding with each speculative type it is given on this command line, and
        # with the instance's own setting (`planned`), unless its extra arguments speculate already (LLAMA_ARG_* in
        # its environment is refused).
        plain = _argv(dict(plan["launch"], speculative=SPECULATIVE_OFF), ctx_size, parallel)
        engine = dict(plan["endpoint"]["engine"], server_argv=plain,
                      server_argv_speculates=any(str(arg).split("=", 1)[0] in SPECULATIVE_FLAGS + DRAFT_MODEL_FLAGS
                                                 for arg in plain),
                      speculative_argv=speculative_argv(plan["launch"]),
                      speculative=speculative_label(plan["launch"]["speculative"]))
        instances.append(dict(plan, ctx_size=ctx_size, parallel=parallel, slot_choice=chosen.get("choice", ""),
                              prompt_cache=PROMPT_CACHE_OFF_REASON if cache == 0 else
                              "prompt cache %s (--cache-ram %d)" % ("unlimited" if cache < 0 else "%d MiB" % cache,
                                                                    cache),
                              argv=_argv(plan["launch"], ctx_size, parallel),
                              endpoint=dict(plan["endpoint"], engine=engine)))
    return {"instances": instances if not errors else [], "errors": errors}


def memory_refusal(message: str, plan: Mapping[str, Any]) -> str:
    """gpu_memory_plan's refusal of an instance's memory plan, in the instance's own terms: its remedies name
    context_per_slot, slots and gpu_count, which the instance sets as ctx_size, parallel and gpus."""
    spec = plan["memory_plan"]
    # A unified cache is one stream of ctx_size cells; else each of parallel slots has ctx_size / parallel.
    slots = 1 if spec.get("kv_unified") or "slots" not in spec else int(spec["slots"])
    ctx_size = plan["sizing"].get("ctx_size")  # the owner's number (none for an auto size)

    def context(match: "re.Match[str]") -> str:
        each = "" if slots == 1 else "%s tokens a slot, " % match.group(2)
        return "%sower its ctx_size to %d (%sfrom %s)" % (match.group(1), int(match.group(2)) * slots, each,
                                                          ctx_size or int(match.group(3)) * slots)

    def fewer(match: "re.Match[str]") -> str:
        # Without a unified cache there are ctx_size cells whatever parallel is: fewer slots free memory only
        # with ctx_size lowered with them, each keeping its tokens.
        if not spec.get("context_per_slot"):
            return "%sower its parallel to %s (from %s)" % match.groups()
        return "%sower its parallel to %s and its ctx_size to %d (from %s and %s)" % (
            match.group(1), match.group(2), int(match.group(2)) * int(spec["context_per_slot"]), match.group(3),
            ctx_size or int(match.group(3)) * int(spec["context_per_slot"]))

    message = re.sub(r"([Ll])ower context_per_slot to (\d+) \(from (\d+)\)", context, message.replace(
        "memory_plans=", "", 1))
    message = re.sub(r"([Ll])ower slots to (\d+) \(from (\d+)\)", fewer, message)
    message = re.sub(r"([Ss])et kv_cache_type=", lambda m: "%set its kv_cache_type=" % m.group(1), message)
    return re.sub(r"([Aa])dd GPUs: gpu_count=(\d+)", lambda m: "%sive it %s GPUs (its gpus)" % (
        "G" if m.group(1) == "A" else "g", m.group(2)), message)


def unfetched_models(planned: Mapping[str, Any], models_files: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """The instances whose models_list file is not on the host as its stamp says (the models role's
    `verified`): llama-server would start on a missing or different file."""
    return [plan["name"] for plan in planned.get("instances", [])
            if any(model in models_files and not models_files[model].get("verified")
                   for model in (plan["model"], draft_model(plan["launch"]["speculative"])))]


def split_row_warnings(planned: Mapping[str, Any]) -> List[str]:
    """split_mode row still starts, but llama.cpp's docs/multi-gpu.md (at the pinned commit) deprecates it."""
    return ["llama_server_instances %s uses split_mode: row, which llama.cpp's docs/multi-gpu.md (at the pinned "
            "commit) deprecates for its poor performance. Use split_mode: layer, or tensor." % plan["name"]
            for plan in planned.get("instances", []) if plan["launch"].get("split_mode") == "row"]
