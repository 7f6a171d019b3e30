"""Filters over this project's module_utils: nvcc output (cuda_version.py),
the llama.cpp build plan (llama_cpp_build.py), model sources
(model_sources.py), llama-server instances (llama_server_plan.py), the vLLM
server (vllm_server_plan.py), pip's source options (pip_options.py), model
shapes (memory_plan.py), the default CUDA toolkit (stack_rules.py), Debian's
archive components (debian_sources.py),
systemd unit syntax (systemd_unit.py), a GPU service's units (gpu_service.py), the host's run
lock (run_lock.py), stale initramfs images (initramfs.py) and stamps (stamps.py), all
pure functions unit-tested in tests/unit.
"""
from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path
from typing import Any, Dict, List, Mapping

import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"


def _module_utils(name: str) -> Any:
    """plugins/module_utils/<name>.py, by its collection path."""
    try:
        return importlib.import_module("ansible_collections.v100.llm.plugins.module_utils." + name)
    except Exception as exc:
        # Not a ValueError a filter would report as bad input.
        raise RuntimeError("plugins/module_utils/%s.py did not load: %s" % (name, exc)) from exc


class _Deferred:
    """A module_utils file, loaded when one of its functions is first called.

    Ansible loads every filter plugin in each task's worker process (a fork of
    the controller), and loading all of these there took 0.15 s, on tasks that
    mostly call none of them.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(_module_utils(self._name), attribute)(*args, **kwargs)
        call.__name__ = attribute
        return call


_CUDA = _Deferred("cuda_version")
_BUILD = _Deferred("llama_cpp_build")
_ARTIFACT = _Deferred("llama_cpp_artifact")
_MODELS = _Deferred("model_sources")
_SERVER = _Deferred("llama_server_plan")
_UNIT = _Deferred("systemd_unit")
_VLLM = _Deferred("vllm_server_plan")
_PIP = _Deferred("pip_options")
_DEBIAN = _Deferred("debian_sources")
_GPU_SERVICE = _Deferred("gpu_service")
_CONFIG_FILES = _Deferred("config_files")
_DPKG = _Deferred("dpkg_state")
_RUN_LOCK = _Deferred("run_lock")
_INITRAMFS = _Deferred("initramfs")
_STAMPS = _Deferred("stamps")
_RULES = _Deferred("stack_rules")
_MEMORY = _Deferred("memory_plan")


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


def role_default(name: str) -> Any:
    """'vllm_dtype' | role_default -> its default in the defaults/main.yml of the role it is prefixed with.

    For a role that reads another role's variable where that role may not be
    in the play (preflight checks the whole stack first): the default has
    one owner and no copies.
    """
    for role in sorted((p.name for p in ROLES.iterdir()), key=len, reverse=True):
        path = ROLES / role / "defaults" / "main.yml"
        if name.startswith(role + "_") and path.is_file():
            value = _defaults(str(path), path.stat().st_mtime_ns).get(name, _MISSING)
            if value is _MISSING:
                continue
            # A filter's result is not templated again: a templated default would reach the role as text.
            if isinstance(value, str) and ("{{" in value or "{%" in value):
                raise ValueError("%s's default in %s is a template; role_default gives plain values only"
                                 % (name, path))
            return value
    raise KeyError("no role's defaults/main.yml has %s" % name)


_MISSING = object()


@functools.lru_cache(maxsize=None)
def _defaults(path: str, mtime_ns: int) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def vllm_memory_plan(shape: Mapping[str, Any], *args: Any) -> Dict[str, Any]:
    plan = _VLLM.plan_max_model_len(shape, *args)
    plan["verdict"] = _VLLM.memory_verdict(plan)
    return plan


def hf_model_shape(config: Any) -> Dict[str, Any]:
    """config.json content (parsed, or its text) | hf_model_shape -> the model's shape, or {"error": "..."}."""
    try:
        if isinstance(config, str):
            config = json.loads(config)
        if not isinstance(config, Mapping):
            raise ValueError("config.json is not a JSON object")
        shape = _MEMORY.shape_from_hf_config(config)
    except (ValueError, TypeError) as exc:
        return {"error": str(exc)}
    result = dict(vars(shape))
    result["error"] = ""
    return result


def llama_cpp_build_plan(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """{...inputs...} | llama_cpp_build_plan -> plan dict; a malformed
    architecture list comes back as {"error": "..."} for the role's assert."""
    try:
        plan = _BUILD.build_plan(dict(inputs))
    except ValueError as exc:
        return {"error": str(exc)}
    plan["error"] = ""
    return plan


def llama_cpp_artifact_plan(info: Mapping[str, Any], prefix: str, arch_inputs: Mapping[str, Any],
                            os_release: str) -> Dict[str, Any]:
    """llama_cpp_artifact_info's result | llama_cpp_artifact_plan(prefix, {requested_architectures,
    preflight_architectures, gpus}, this host's /etc/os-release) -> the plan of installing it, with "error" when
    it does not fit."""
    try:
        return _BUILD.artifact_plan(info.get("stamp"), info.get("folder") or "", prefix,
                                    arch_inputs.get("requested_architectures"),
                                    arch_inputs.get("preflight_architectures"), arch_inputs.get("gpus"),
                                    info.get("built_on"), _ARTIFACT.os_release(os_release))
    except ValueError as exc:
        return {"error": str(exc)}


def llama_cpp_refused_args(extra_args: List[str]) -> List[str]:
    """llama_cpp_cmake_extra_args | llama_cpp_refused_args -> messages (empty when fine)."""
    return _BUILD.refused_extra_args(extra_args)


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
            # 'vllm_dtype' | role_default -> the default of the role the name is prefixed with
            "role_default": role_default,
            # apt-get indextargets output | debian_missing_components(release, own_files) -> [{suite, components}]
            "debian_missing_components": _DEBIAN.missing_components,
            "llama_cpp_build_plan": llama_cpp_build_plan,
            "llama_cpp_refused_args": llama_cpp_refused_args,
            "llama_cpp_artifact_plan": llama_cpp_artifact_plan,
            # ldd -r output | llama_cpp_library_problems -> ["libcudart.so.12 not found (the CUDA runtime: ...)", ...]
            "llama_cpp_library_problems": _ARTIFACT.library_problems,
            # cuobjdump listing | llama_cpp_missing_gpu_code(architectures) -> ["70 (no sm_70 machine code)", ...]
            "llama_cpp_missing_gpu_code": _BUILD.missing_gpu_code,
            # llama_cpp_nccl | llama_cpp_nccl_wanted(cuda build, serving GPUs) -> {"wanted", "required", "error"}
            "llama_cpp_nccl_wanted": _BUILD.nccl_wanted,
            # madison output | llama_cpp_nccl_choice(installed, CUDA release, requested, required) -> {"version", ...}
            "llama_cpp_nccl_choice": _BUILD.nccl_choice,
            # models_list | models_fetch_plan(models_dir, hf_endpoint) -> {"models": [...], "errors": [...]}
            "models_fetch_plan": _MODELS.fetch_plan,
            # folders | models_folder_orders(listings by name, hf_endpoint) -> {"models": [...], "errors": [...]}
            "models_folder_orders": _MODELS.folder_orders,
            # fetch orders | models_files(model_files results) -> {name: {path, sha256, verified, size, gguf, parts}}
            "models_files": _MODELS.models_files,
            # llama_server_instances | llama_server_plan(settings, models_files) -> {"instances": [...], "errors": [...]}
            "llama_server_plan": _SERVER.plan_instances,
            # that result | llama_server_commands(nvidia_stack_check's memory_plans) -> the same with sizes and argv
            "llama_server_commands": _SERVER.instance_commands,
            # argv | systemd_exec -> the value of an ExecStart= line
            "systemd_exec": _UNIT.exec_line,
            # value | systemd_exec_word -> one ExecStart= argument, escaped and quoted as needed
            "systemd_exec_word": _UNIT.exec_word,
            # value | systemd_environment(name) -> a quoted Environment= assignment
            "systemd_environment": lambda value, name: _UNIT.environment_line(name, value),
            # settings | vllm_server_plan -> {"errors": [...], "argv": [...], "environment": {...}, ...}
            "vllm_server_plan": _VLLM.plan_server,
            # llama_server_instances | vllm_shared_gpu_errors(serving GPUs, vllm_server_gpus, utilization) -> [...]
            "vllm_shared_gpu_errors": _VLLM.shared_gpu_errors,
            # llama_server_instances | vllm_port_clash_errors(llama_server_host, vllm_server_host, vllm_server_port)
            "vllm_port_clash_errors": _VLLM.port_clash_errors,
            # {index_url, extra_index_urls, wheelhouse, ca_bundle, proxy} | pip_plan -> {"errors", "args", "environment"}
            "pip_plan": _PIP.pip_plan,
            # config.json | hf_model_shape -> {layers, kv_heads, head_dim, architecture, quantization, dtype, ...}
            "hf_model_shape": hf_model_shape,
            # shape | vllm_memory_plan(weights_bytes, max_model_len (or auto), gpus, gpu_memory_mib, utilization,
            #   kv_cache_dtype) -> the terms, "max_model_len" (chosen), "fits", "fitting_max_model_len", "verdict"
            "vllm_memory_plan": vllm_memory_plan,
            # find's files | vllm_weights_bytes -> bytes vLLM loads (safetensors, else .bin)
            "vllm_weights_bytes": _VLLM.weights_bytes,
            # lsinitramfs loop results | initramfs_stale(conf, conf ctime, wanted) -> kernels whose image to rebuild
            "initramfs_stale": initramfs_stale,
            # slurp's content | read_stamp -> the stamp's JSON object, {} when missing or torn
            "read_stamp": _STAMPS.read_stamp,
            # argv | with_run_lock -> argv under flock(1) on the host's run lock (host_guard waits for it)
            "with_run_lock": _RUN_LOCK.with_run_lock,
            # dpkg-query status lines | dpkg_not_installed(names) -> the names not fully installed
            "dpkg_not_installed": _DPKG.not_installed,
            # items | config_files_per_item(path %-format, template, mode[, owner, group]) -> config_files entries
            "config_files_per_item": _CONFIG_FILES.per_item,
            # services | gpu_service_config_files(device_nodes) -> every folder and file, as config_files entries
            "gpu_service_config_files": _GPU_SERVICE.config_files,
            # services | gpu_service_unwanted_restart_timers -> restart timer units no longer asked for
            "gpu_service_unwanted_restart_timers": _GPU_SERVICE.unwanted_restart_timers,
            # services | gpu_service_systemd_units(device_nodes) -> the units for unit_freshness, in start order
            "gpu_service_systemd_units": _GPU_SERVICE.systemd_units,
            # unit names | gpu_service_retired_files -> every file gpu_service wrote for them
            "gpu_service_retired_files": _GPU_SERVICE.retired_files,
        }
