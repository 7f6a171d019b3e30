# -*- coding: utf-8 -*-
"""The vLLM OpenAI API server: from vllm_server_* settings to a command line,
an environment and a memory plan request, or the reasons they are refused.

Pure functions, no I/O: the vllm_server role renders what ``plan_server``
returns into a systemd unit. Flags are vLLM 0.5.4's
(``python -m vllm.entrypoints.openai.api_server --help``). Volta rules
(VOLTA_FACTS.md, "vLLM"): half precision below compute capability 8.0 (no
bfloat16), CUDA graphs off by default (--enforce-eager: host memory grows with
them over long runs), one tensor-parallel rank per GPU given.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import endpoint, is_loopback, local_base_url
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import shape_from_hf_config

HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
SERVED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
ENTRYPOINT = "vllm.entrypoints.openai.api_server"
# vllm_server_max_model_len: auto on a model the role cannot read before vLLM starts (a repository): the
# role's earlier fixed default.
AUTO_FALLBACK_MAX_MODEL_LEN = 4096
# The shortest max_model_len auto settles for: less is no use to a chat or an IDE plugin; a number set
# explicitly may still be lower.
AUTO_MIN_MAX_MODEL_LEN = 4096
# What auto keeps spare beyond the estimate (not measured on a V100: NCCL's buffers with tensor parallelism, the
# GPTQ kernel's dequantization buffer, the MLP's output beside its input), and the step it rounds down to.
AUTO_RESERVE_MIB = 512
AUTO_STEP = 256
# Flags the role sets from its variables; in extra args they would contradict
# them (or, for --api-key, put the key on the command line, visible in ps).
ROLE_FLAGS = {
    "--model": "vllm_server_model", "--served-model-name": "vllm_server_served_model_name",
    "--host": "vllm_server_host", "--port": "vllm_server_port", "--dtype": "vllm_dtype",
    "--quantization": "vllm_quantization", "-q": "vllm_quantization",
    "--tensor-parallel-size": "vllm_server_gpus", "-tp": "vllm_server_gpus",
    "--gpu-memory-utilization": "vllm_server_gpu_memory_utilization",
    "--max-model-len": "vllm_server_max_model_len", "--enforce-eager": "vllm_server_enforce_eager",
    "--api-key": "vllm_server_api_key", "--download-dir": "vllm_server_state_dir",
    "--disable-frontend-multiprocessing": "(always set: see plan_server)",
    "--disable-log-requests": "(always set)",
    "--kv-cache-dtype": "vllm_server_kv_cache_dtype",
    "--disable-custom-all-reduce": "vllm_server_nccl_p2p_disable",
}
# --kv-cache-dtype in 0.5.4 (vllm/engine/arg_utils.py:224). On compute capability 7.0 the attention backend is
# XFormers (vllm/attention/selector.py:148-154), whose paged-attention kernels read and write an fp8 cache from
# fp16 (csrc/quantization/fp8/nvidia/quant_utils.cuh: only bf16 -> fp8 needs sm_80, and V100 runs half). What
# reads the cache back for prefill (a prefix-cache hit, any chunked prefill) is a Triton kernel that cannot
# (vllm/attention/backends/xformers.py:600-603; vLLM issues #4381, #6884; fixed in 0.5.5), so with an fp8
# cache both stay off. On CUDA, fp8 is fp8_e4m3 and runs with a scale of 1.0: the scaling factors of
# --quantization-param-path are read on ROCm only (vllm/worker/model_runner.py:763).
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
FP8_CLASHES = {
    "--enable-prefix-caching": "prefix caching reads an fp8 cache through a Triton kernel that cannot "
                               "(vllm/attention/backends/xformers.py:600-603 in 0.5.4)",
    "--enable-chunked-prefill": "chunked prefill reads an fp8 cache through the same Triton kernel (vLLM issues "
                                "#4381, #6884); the role turns it off with an fp8 cache",
    "--quantization-param-path": "0.5.4 reads KV scaling factors on ROCm only (vllm/worker/model_runner.py:763)",
}
VOLTA_FREE_CC = (8, 0)  # bfloat16 and vLLM's "auto" choice of it


def refused_extra_args(extra_args: Sequence[str]) -> List[str]:
    """Extra arguments that repeat a flag the role sets, with the variable to use.

    vLLM's parser reads "_" as "-" and, being argparse, takes any unambiguous
    prefix of a long flag: "--api_key" and "--api-ke" are --api-key. Both
    forms are caught; only the flag is named (its value may be a key).
    """
    return ["%s (set %s instead)" % (given, ROLE_FLAGS[known]) for given, known in flags_given(extra_args, ROLE_FLAGS)]


def flags_given(extra_args: Sequence[str], known_flags: Sequence[str]) -> List[tuple]:
    """(flag as given, the known flag it means) for each extra argument that vLLM's parser reads as one of
    known_flags: "_" read as "-", and any unambiguous prefix of a long flag."""
    given = []
    for arg in extra_args:
        flag = str(arg).split("=", 1)[0]
        if flag.startswith("--"):
            spelled = "--" + flag[2:].replace("_", "-")
            hits = [known for known in known_flags if known.startswith("--") and len(spelled) > 3
                    and known.startswith(spelled)]
        else:
            hits = [flag] if flag in known_flags else []
        if hits:
            given.append((flag, hits[0]))
    return given


def _capabilities(gpus: Sequence[Mapping[str, Any]]) -> List[tuple]:
    found = []
    for gpu in gpus:
        text = str(gpu.get("compute_capability") or "")
        if re.match(r"^\d+\.\d+$", text):
            found.append(tuple(int(part) for part in text.split(".")))
    return found


def effective_dtype(dtype: str, gpus: Sequence[Mapping[str, Any]]) -> str:
    """"auto" becomes "half" on GPUs below 8.0: auto picks bfloat16 for bf16 models, which Volta lacks."""
    capabilities = _capabilities(gpus)
    if dtype == "auto" and capabilities and min(capabilities) < VOLTA_FREE_CC:
        return "half"
    return dtype


def is_local_model(model: str) -> bool:
    return model.startswith("/")


def _errors(settings: Mapping[str, Any]) -> List[str]:
    errors = []
    model = str(settings.get("model") or "")
    if not (is_local_model(model) or HF_REPO.match(model)):
        folders = list(settings.get("model_folders") or [])
        errors.append("vllm_server_model=%s is neither an absolute path to a model folder, a Hugging Face "
                      "repository (organisation/name), nor the name of a models_list model folder (an hf_repo entry "
                      "without hf_file; %s)" % (model or '""', "those here: " + ", ".join(folders) if folders
                                                 else "models_files has none: is the models role in the play?"))
    served = str(settings.get("served_model_name") or "")
    if served and not SERVED_NAME.match(served):
        errors.append("vllm_server_served_model_name=%s must be letters, digits and . _ : / -" % served)
    elif model and not served and not SERVED_NAME.match(default_served_name(model)):
        errors.append("vllm_server_served_model_name is empty and the model's own name %s is not letters, digits "
                      "and . _ : / -: set vllm_server_served_model_name" % default_served_name(model))
    errors += _kv_cache_errors(settings)
    level = str(settings.get("nccl_p2p_level") or "")
    if level and settings.get("nccl_p2p_disable"):
        errors.append("vllm_server_nccl_p2p_disable=true and vllm_server_nccl_p2p_level=%s: NCCL ignores the "
                      "level once P2P is off; set one of them" % level)
    elif level and level not in NCCL_P2P_LEVELS:
        errors.append("vllm_server_nccl_p2p_level=%s is not one of NCCL's path types %s (NCCL's Environment "
                      "Variables guide, NCCL_P2P_LEVEL); \"\" lets NCCL choose" % (level, ", ".join(NCCL_P2P_LEVELS)))
    port = settings.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errors.append("vllm_server_port=%s must be 1-65535" % port)
    gpus = settings.get("gpus")
    known = settings.get("gpu_count")
    if not isinstance(gpus, list) or not gpus or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0
                                                         for g in gpus):
        errors.append("vllm_server_gpus=%s must be a list of GPU indexes, e.g. [0] or [0, 1]" % (gpus,))
    elif len(set(gpus)) != len(gpus):
        errors.append("vllm_server_gpus=%s names a GPU twice" % (gpus,))
    elif known and max(gpus) >= known:
        errors.append("vllm_server_gpus=%s: this host has %d GPU(s), indexes 0-%d" % (gpus, known, known - 1))
    utilization = settings.get("gpu_memory_utilization")
    if not isinstance(utilization, (int, float)) or isinstance(utilization, bool) or not 0.1 <= utilization <= 0.98:
        errors.append("vllm_server_gpu_memory_utilization=%s must be between 0.1 and 0.98 (the rest is the "
                      "CUDA context and other processes' share)" % utilization)
    max_len = settings.get("max_model_len")
    model_max = int(settings.get("model_max_len") or 0)
    if max_len != "auto" and (not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 16):
        errors.append("vllm_server_max_model_len=%s must be auto (the longest that fits) or a whole number of "
                      "tokens, 16 or more" % max_len)
    elif max_len != "auto" and model_max and max_len > model_max:
        errors.append("vllm_server_max_model_len=%d is longer than the model's own maximum of %d tokens (its "
                      "config.json, as vLLM 0.5.4 derives it in config.py _get_and_verify_max_len; it refuses a "
                      "longer one at start): lower it to %d, or set auto" % (max_len, model_max, model_max))
    if effective_dtype(str(settings.get("dtype") or ""), settings.get("gpu_facts") or []) == "bfloat16" \
            and [c for c in _capabilities(settings.get("gpu_facts") or []) if c < VOLTA_FREE_CC]:
        errors.append("vllm_dtype=bfloat16 cannot run below compute capability 8.0 (Volta): use half")
    host = str(settings.get("host") or "")
    if not host:
        errors.append('vllm_server_host="" : use 127.0.0.1 (or an address of this host)')
    elif not is_loopback(host) and not settings.get("api_key_set"):
        errors.append("vllm_server_host=%s exposes the API beyond this host without a key: set "
                      "vllm_server_api_key (from a vault), or keep 127.0.0.1" % host)
    refused = refused_extra_args(settings.get("extra_args") or [])
    if refused:
        errors.append("vllm_server_extra_args repeats flags the role sets: %s" % ", ".join(refused))
    return errors


# NCCL_P2P_LEVEL's path types, nearest first (NCCL's user guide, Environment Variables:
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): P2P is used up to that distance.
NCCL_P2P_LEVELS = ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")


def _kv_cache_errors(settings: Mapping[str, Any]) -> List[str]:
    kv_dtype = str(settings.get("kv_cache_dtype") or "auto")
    if kv_dtype not in KV_CACHE_DTYPES:
        return ["vllm_server_kv_cache_dtype=%s is not one of %s (vLLM 0.5.4's --kv-cache-dtype)" % (
            kv_dtype, ", ".join(KV_CACHE_DTYPES))]
    if kv_dtype == "auto":
        return []
    errors = []
    errors += ["vllm_server_kv_cache_dtype=%s with %s in vllm_server_extra_args: %s. Remove the flag, or set "
               "vllm_server_kv_cache_dtype: auto" % (kv_dtype, given, FP8_CLASHES[known])
               for given, known in flags_given(settings.get("extra_args") or [], FP8_CLASHES)]
    if str(settings.get("quantization") or "") in ("fp8", "compressed-tensors"):
        errors.append("vllm_server_kv_cache_dtype=%s with an %s checkpoint: 0.5.4 refuses an fp8 cache beside fp8 "
                      "weights (vllm/attention/layer.py:66-68), and compute capability 7.0 cannot run those "
                      "weights anyway. Use a GPTQ model" % (kv_dtype, settings["quantization"]))
    return errors


def kv_cache_warnings(settings: Mapping[str, Any]) -> List[str]:
    """fp8 and fp8_e4m3 run on CUDA without scaling factors."""
    kv_dtype = str(settings.get("kv_cache_dtype") or "auto")
    if kv_dtype in ("fp8", "fp8_e4m3"):
        return ["vllm_server_kv_cache_dtype=%s: on CUDA vLLM 0.5.4 stores the cache as E4M3 with a scale of 1.0 (its "
                "scaling factors are read on ROCm only), which can cost accuracy; fp8_e5m2, with its wider range, "
                "is the format meant to run without scales" % kv_dtype]
    return []


def _max_model_len(settings: Mapping[str, Any]) -> int:
    """The number planned (a model folder's "auto" is resolved by plan_max_model_len before), else the fallback,
    no longer than the model's maximum where its config.json was read."""
    if settings["max_model_len"] != "auto":
        return int(settings["max_model_len"])
    return min(AUTO_FALLBACK_MAX_MODEL_LEN, int(settings.get("model_max_len") or AUTO_FALLBACK_MAX_MODEL_LEN))


def default_served_name(model: str) -> str:
    """The name clients ask for when vllm_server_served_model_name is "": the model folder's or the
    repository's own name (Qwen2.5-14B-Instruct-GPTQ-Int4), not the whole path or organisation/name that IDE
    plugins and chat front-ends would have to repeat."""
    return model.rstrip("/").rsplit("/", 1)[-1]


def plan_server(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """``{"errors": [...]}`` or the unit's argv, environment and base URL (http://address:port, where the
    role and the timers ask).

    settings: python (the virtualenv's), model (a folder's path or a repository), model_folders (the
    models_list folder names, for the refusal), served_model_name, host, port,
    gpus, gpu_count (0: unknown), gpu_facts (nvidia_gpus), dtype,
    quantization ("" none), max_model_len, model_max_len (the model's maximum, 0 when its config.json was not
    read), gpu_memory_utilization,
    enforce_eager, extra_args, api_key_set, state_dir, hf_endpoint,
    hf_offline (bool), allowed_networks (CIDRs for the IP allow-list),
    nccl_p2p_disable (bool), nccl_p2p_level ("" or an NCCL path type).
    """
    errors = _errors(settings)
    if errors:
        return {"errors": errors}
    model = str(settings["model"])
    served = str(settings.get("served_model_name") or default_served_name(model))
    # The default answers to the model as given too, the name clients used before the short one (vLLM 0.5.4
    # takes several: the first is the one responses carry, engine/arg_utils.py:640-650).
    served_names = [served] if settings.get("served_model_name") or served == model else [served, model]
    gpus = list(settings["gpus"])
    dtype = effective_dtype(str(settings["dtype"]), settings.get("gpu_facts") or [])
    argv = [str(settings["python"]), "-m", ENTRYPOINT,
            "--model", model,
            "--served-model-name", *served_names,
            "--host", str(settings["host"]), "--port", str(settings["port"]),
            "--dtype", dtype,
            "--tensor-parallel-size", str(len(gpus)),
            "--gpu-memory-utilization", "%g" % settings["gpu_memory_utilization"],
            "--max-model-len", str(_max_model_len(settings)),
            "--download-dir", "%s/hf/hub" % settings["state_dir"]]
    if settings.get("quantization"):
        argv += ["--quantization", str(settings["quantization"])]
    if settings.get("enforce_eager"):
        argv.append("--enforce-eager")
    kv_dtype = str(settings.get("kv_cache_dtype") or "auto")
    if kv_dtype != "auto":
        # vLLM turns chunked prefill on by itself above 32K tokens (arg_utils.py:747-765): not with fp8.
        argv += ["--kv-cache-dtype", kv_dtype, "--enable-chunked-prefill", "False"]
    # No prompts in the journal; and no engine RPC socket: in 0.5.4 the API
    # process talks to the engine over tcp://127.0.0.1:5570, unpickling what
    # arrives, which any local user could reach.
    argv += ["--disable-log-requests", "--disable-frontend-multiprocessing"]
    argv += [str(arg) for arg in settings.get("extra_args") or []]
    state = str(settings["state_dir"])
    environment = {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus),
        "HF_HOME": state + "/hf",
        "XDG_CACHE_HOME": state + "/cache",
        "TRITON_CACHE_DIR": state + "/cache/triton",
        "OUTLINES_CACHE_DIR": state + "/cache/outlines",
        "VLLM_CONFIG_ROOT": state + "/config",
        # vLLM reports usage to its authors unless told not to.
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    if settings.get("hf_endpoint"):
        environment["HF_ENDPOINT"] = str(settings["hf_endpoint"])
    # Tensor parallelism over PCIe: where P2P between the two cards hangs or corrupts (some X99 boards, an
    # IOMMU), NCCL can be kept off it or limited to a distance.
    if settings.get("nccl_p2p_disable"):
        environment["NCCL_P2P_DISABLE"] = "1"
    if settings.get("nccl_p2p_disable") or str(settings.get("nccl_p2p_level") or "") in ("LOC", "NVL"):
        # vLLM's own all-reduce for two GPUs moves data P2P without NCCL
        # (distributed/device_communicators/custom_all_reduce.py:116-131 in 0.5.4).
        argv.append("--disable-custom-all-reduce")
    if settings.get("nccl_p2p_level"):
        environment["NCCL_P2P_LEVEL"] = str(settings["nccl_p2p_level"])
    offline = is_local_model(model) or bool(settings.get("hf_offline"))
    if offline:
        environment["HF_HUB_OFFLINE"] = "1"
        environment["TRANSFORMERS_OFFLINE"] = "1"
    # With tensor parallelism the ranks' own sockets (vLLM's shm_broadcast,
    # torch's TCPStore) listen on every interface: an offline server gets an
    # IP allow-list (loopback, plus vllm_server_allowed_networks when bound
    # wider). A server that still downloads its model needs the network.
    host = str(settings["host"])
    networks = [str(n) for n in settings.get("allowed_networks") or []]
    if not offline:
        ip_allow = []
    elif is_loopback(host):
        ip_allow = ["localhost"]
    else:
        ip_allow = ["localhost"] + networks if networks else []
    return {
        "errors": [],
        "argv": argv,
        "environment": environment,
        "dtype": dtype,
        "tensor_parallel_size": len(gpus),
        "offline": offline,
        "ip_allow": ip_allow,
        "base_url": local_base_url(host, int(settings["port"])),
        "served_model_name": served,
        # The longest prompt verify.yml sends: the whole context but a short answer's room (none before vLLM
        # sizes an "auto" one).
        "endpoint": endpoint("vllm", "vllm", host, int(settings["port"]), served, settings.get("key_file", ""),
                             "VLLM_API_KEY" if settings.get("key_file") else "",
                             max(int(settings["max_model_len"]) - 16, 0)
                             if str(settings["max_model_len"]).isdigit() else 0),
        "warnings": kv_cache_warnings(settings) + ([
            "vllm_server_max_model_len=auto on %s, whose weights the role cannot size before vLLM downloads them: "
            "%d tokens. Fetch it as a models_list model folder to size it to the GPUs, or set a number" % (
                model, _max_model_len(settings))] if settings["max_model_len"] == "auto" else []),
    }


def model_shape(config: Any) -> Dict[str, Any]:
    """A config.json's text (or parsed) -> the model's shape, with "error": "" ; or {"error": "..."}: a mirror may
    answer a page."""
    try:
        if isinstance(config, (str, bytes)):
            config = json.loads(config)
        if not isinstance(config, Mapping):
            raise ValueError("config.json is not a JSON object")
        return dict(vars(shape_from_hf_config(config)), error="")
    except (ValueError, TypeError) as exc:
        return {"error": str(exc)}


def plan_on_model(settings: Mapping[str, Any], config: Optional[str], weight_files: Sequence[Mapping[str, Any]],
                  gpu_memory_mib: Sequence[int], folder_on_host: bool = True) -> Dict[str, Any]:
    """plan_server on what the model says of itself.

    settings: plan_server's, with max_model_len as set ("auto" or a number) and quantization as vllm_quantization:
    the model's config.json, where read, says its quantization and maximum length instead.
    config: the text of the model's config.json (a folder's, or a repository's from the endpoint); None: not read.
    weight_files: a folder's *.safetensors and *.bin ({"path", "size"}); [] for a repository, whose weights are
    not sized.
    gpu_memory_mib: each of vllm_server_gpus' memory; [] when unknown (no memory plan).
    folder_on_host: False for a models_list folder that check mode has yet to fetch: nothing read or sized.
    Returns plan_server's result, whose "errors" include a local model that does not fit, with "shape" ({} when
    not read), "memory" ({} when not planned), "quantization" and "dtype".
    """
    local = is_local_model(str(settings["model"])) and folder_on_host
    shape = model_shape(config) if config is not None else {}
    if local and shape.get("error", "unread"):
        return {"errors": ["vllm_server_model=%s: its config.json %s: point it at a complete Hugging Face model "
                           "folder (config.json, tokenizer and *.safetensors), or at a repository "
                           "(organisation/name)" % (settings["model"], "is missing or unreadable" if config is None
                                                    else "is refused (%s)" % shape["error"])],
                "shape": shape, "memory": {}}
    read = shape.get("error", "unread") == ""
    settings = dict(settings, quantization=str((shape if read else settings).get("quantization") or ""),
                    model_max_len=int(shape.get("context_length") or 0) if read else 0)
    errors = _errors(settings)
    asked = settings["max_model_len"]
    memory: Dict[str, Any] = {}
    if not errors and local and gpu_memory_mib:
        memory = plan_max_model_len(shape, weights_bytes(weight_files), asked, len(settings["gpus"]),
                                    min(gpu_memory_mib), float(settings["gpu_memory_utilization"]),
                                    str(settings.get("kv_cache_dtype") or "auto"))
        memory["verdict"] = memory_verdict(memory)
        if not memory["fits"]:
            errors.append("vllm_server_model=%s with vllm_server_max_model_len=%s %s" % (
                settings["model"], asked, memory["verdict"]))
    plan = {"errors": errors} if errors else plan_server(dict(settings, max_model_len=memory.get("max_model_len",
                                                                                                 asked)))
    return dict(plan, shape=shape, memory=memory, quantization=settings["quantization"],
                dtype=effective_dtype(str(settings["dtype"]), settings.get("gpu_facts") or []))


# vLLM's profile run (0.5.4 worker.determine_num_available_blocks) measures the
# peak of one batch of max_num_batched_tokens (max(max_model_len, 2048) with
# chunked prefill off) plus the sampler for max_num_seqs sequences, which
# samples with top-k/top-p: about six fp32 [seqs, vocab] tensors (logits,
# sorted values, int64 indices, probabilities, log-probabilities) on rank 0.
# The CUDA context is outside the share (it exists before vLLM measures).
PROFILE_MIN_TOKENS = 2048
PROFILE_SEQUENCES = 256
SAMPLER_TENSORS = 6
MIB = 1 << 20


def _ceil_mib(size: float) -> int:
    return int(-(-size // MIB))


def plan_memory(shape: Mapping[str, Any], weights_bytes: int, max_model_len: int, gpus: int,
                gpu_memory_mib: int, utilization: float, kv_cache_dtype: str = "auto",
                reserve_mib: int = 0) -> Dict[str, Any]:
    """Will one sequence of max_model_len fit in the share of each GPU vLLM takes?

    Per GPU, in MiB: weights / gpus + activations of the profile batch (an
    estimate: the MLP's sharded intermediate and the unsharded hidden states
    in fp16, plus the sampler's fp32 tensors) + f16 KV cache of max_model_len tokens
    (2 x layers x kv_heads / gpus x head_dim x 2 bytes per token; 1 byte with
    an fp8 kv_cache_dtype, stored as uint8: vllm/utils.py:34-41) must stay
    within utilization x the GPU's memory, less reserve_mib. Returns the terms, "fits", and the
    longest max_model_len that fits ("fitting_max_model_len", 0 when none).
    """
    if gpus < 1 or max_model_len < 1 or gpu_memory_mib < 1:
        raise ValueError("gpus, max_model_len and gpu_memory_mib must be positive")
    layers, kv_heads, head_dim = int(shape["layers"]), int(shape["kv_heads"]), int(shape["head_dim"])
    hidden = int(shape.get("embedding_length") or shape["attention_heads"] * head_dim)
    intermediate = int(shape.get("feed_forward_length") or 4 * hidden)
    vocab = int(shape.get("vocab_size") or 32000)
    kv_heads_per_gpu = max(1, kv_heads // gpus)  # fewer KV heads than ranks are replicated
    kv_bytes_per_token = 2 * layers * kv_heads_per_gpu * head_dim * (1 if kv_cache_dtype.startswith("fp8") else 2)
    budget = int(gpu_memory_mib * utilization) - reserve_mib

    def terms(length: int) -> Dict[str, int]:
        tokens = max(length, PROFILE_MIN_TOKENS)
        activations = (tokens * (2 * intermediate // gpus + 4 * hidden) * 2
                       + SAMPLER_TENSORS * PROFILE_SEQUENCES * vocab * 4)
        return {"weights_mib": _ceil_mib(weights_bytes / gpus), "activations_mib": _ceil_mib(activations),
                "kv_cache_mib": _ceil_mib(kv_bytes_per_token * length)}

    # The longest multiple of 16 tokens that fits (binary search: the need grows with the length).
    low, high = 0, max_model_len // 16
    while low < high:
        middle = (low + high + 1) // 2
        if sum(terms(middle * 16).values()) <= budget:
            low = middle
        else:
            high = middle - 1
    chosen = terms(max_model_len)
    required = sum(chosen.values())
    return dict(chosen, required_mib=required, budget_mib=budget, gpu_memory_mib=gpu_memory_mib,
                kv_cache_dtype="fp8" if kv_cache_dtype.startswith("fp8") else "f16",
                utilization=utilization, reserve_mib=reserve_mib, gpus=gpus, max_model_len=max_model_len,
                fits=required <= budget, fitting_max_model_len=max_model_len if required <= budget else low * 16)


def plan_max_model_len(shape: Mapping[str, Any], weights_bytes: int, max_model_len: Any, gpus: int,
                       gpu_memory_mib: int, utilization: float, kv_cache_dtype: str = "auto") -> Dict[str, Any]:
    """plan_memory for a number, or for "auto": the model's own maximum (shape's context_length, as vLLM 0.5.4
    derives it) when one sequence of it fits, else the longest multiple of AUTO_STEP that does, down to
    AUTO_MIN_MAX_MODEL_LEN. vLLM itself starts with the model's maximum and stops when its KV cache cannot hold
    one such sequence ("The model's max seq len ... is larger than the maximum number of tokens that can be
    stored in KV cache", vllm/worker/worker.py raise_if_cache_size_invalid), so auto keeps AUTO_RESERVE_MIB
    spare for what the estimate leaves out. "chosen": set, model, fitted, or floor (auto found less than the
    floor: the plan at the floor, which does not fit); "model_max_len" the model's maximum."""
    model_max = int(shape.get("context_length") or AUTO_FALLBACK_MAX_MODEL_LEN)

    def planned(length: int, reserve: int = AUTO_RESERVE_MIB) -> Dict[str, Any]:
        return dict(plan_memory(shape, weights_bytes, length, gpus, gpu_memory_mib, utilization, kv_cache_dtype,
                                reserve), model_max_len=model_max)

    if max_model_len != "auto":
        # One longer than the model's maximum is plan_server's refusal.
        return dict(planned(int(max_model_len), 0), chosen="set")
    plan = planned(model_max)
    if plan["fits"]:
        return dict(plan, chosen="model")
    fitting = plan["fitting_max_model_len"] // AUTO_STEP * AUTO_STEP
    floor = min(AUTO_MIN_MAX_MODEL_LEN, model_max)
    if fitting >= floor:
        return dict(planned(fitting), chosen="fitted")
    # What a number set explicitly (planned without the spare) could be instead.
    return dict(planned(floor), chosen="floor", fitting_max_model_len=planned(model_max, 0)["fitting_max_model_len"])


def weights_bytes(files: Sequence[Mapping[str, Any]]) -> int:
    """Bytes vLLM loads from a model folder's files ({"path", "size"}): the
    *.safetensors when there are any (without consolidated.safetensors, the
    duplicate Mistral ships beside the shards), else the *.bin files."""
    safetensors = [f for f in files if str(f["path"]).endswith(".safetensors")]
    if len(safetensors) > 1:
        safetensors = [f for f in safetensors if not str(f["path"]).endswith("/consolidated.safetensors")]
    chosen = safetensors or [f for f in files if str(f["path"]).endswith(".bin")]
    return sum(int(f["size"]) for f in chosen)


def memory_verdict(plan: Mapping[str, Any]) -> str:
    """One line: the arithmetic, and when it does not fit, what would."""
    arithmetic = ("weights %(weights_mib)d + activations %(activations_mib)d "
                  "+ KV cache %(kv_cache_mib)d (%(kv_cache_dtype)s, %(max_model_len)d tokens) = %(required_mib)d MiB of "
                  "%(budget_mib)d MiB (%(utilization)g x %(gpu_memory_mib)d" % plan
                  + (" - %d kept spare" % plan["reserve_mib"] if plan.get("reserve_mib") else "")
                  + ") per GPU, %(gpus)d GPU(s)" % plan)
    if plan["fits"]:
        chosen = {"model": "; max_model_len auto: the model's own maximum",
                  "fitted": "; max_model_len auto: the longest that fits (the model's own maximum is %d)" % (
                      plan.get("model_max_len") or 0)}.get(str(plan.get("chosen")), "")
        return "fits: " + arithmetic + chosen
    if plan.get("chosen") == "floor":
        arithmetic += "; max_model_len auto settles for no less than %d tokens" % plan["max_model_len"]
    remedies = []
    if plan["fitting_max_model_len"] >= 16:
        remedies.append("lower vllm_server_max_model_len to %d" % plan["fitting_max_model_len"])
    remedies.append("give it more GPUs (vllm_server_gpus)")
    remedies.append("raise vllm_server_gpu_memory_utilization (at most 0.98)")
    remedies.append("or use a smaller or GPTQ-quantized model")
    return "does not fit: %s. To fit: %s" % (arithmetic, ", ".join(remedies))


# Addresses that take a port on every interface, so another server's address there clashes too.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def port_clash_errors(llama_instances: Sequence[Any], llama_host: str, vllm_host: str, vllm_port: Any) -> List[str]:
    """llama-server instances on vLLM's port and address: whichever server starts second cannot listen, and its
    unit restarts in a loop. Two specific addresses may share a port; a wildcard address clashes with any."""
    errors = []
    for index, instance in enumerate(llama_instances):
        if not isinstance(instance, Mapping) or instance.get("port") != vllm_port:
            continue  # llama_server's own checks refuse a malformed instance
        host = instance.get("host", llama_host)
        if host == vllm_host or host in WILDCARD_HOSTS or vllm_host in WILDCARD_HOSTS:
            errors.append(
                "llama_server_instances[%d] (%s).port=%s is vllm_server_port too (addresses %s and %s): the server "
                "that starts second cannot listen. Give the instance another port, or set vllm_server_port." % (
                    index, instance.get("name"), vllm_port, host, vllm_host))
    return errors


def shared_gpu_errors(llama_instances: Sequence[Any], serving_gpus: Sequence[int], vllm_gpus: Sequence[int],
                      vllm_utilization: float) -> List[str]:
    """llama-server instances on a GPU vLLM also serves from. vLLM 0.5.4 sizes its KV cache to
    gpu_memory_utilization of each of its GPUs' whole memory, whatever else runs there (vllm/worker/worker.py
    determine_num_available_blocks at v0.5.4: the memory in use when it starts is not deducted), so whichever
    server starts second runs out of memory. An instance without gpus runs on every serving GPU."""
    errors = []
    for index, instance in enumerate(llama_instances):
        if not isinstance(instance, Mapping):
            continue  # llama_server's own checks refuse it
        gpus = instance.get("gpus") or list(serving_gpus)
        shared = sorted(set(gpus) & set(vllm_gpus)) if isinstance(gpus, list) else []
        if shared:
            errors.append(
                "llama_server_instances[%d] (%s) runs on GPU %s, which vllm_server_gpus=%s also serves: vLLM takes "
                "vllm_server_gpu_memory_utilization=%s of each of its GPUs' whole memory whatever else runs there, "
                "so whichever server starts second runs out of memory. Give the instance gpus that vLLM does not "
                "use (nvidia-smi indexes), or serve this model with llama-server alone (the roles do not plan "
                "vLLM's memory together with llama-server's)." % (
                    index, instance.get("name"), ",".join(map(str, shared)), list(vllm_gpus), vllm_utilization))
    return errors
