# -*- coding: utf-8 -*-
"""What the llama_cpp role builds: CUDA architectures, the CMake arguments and
the build stamp that decides whether a build is needed at all.

Pure functions, no I/O (tests/unit/test_llama_cpp_build.py). The role hands
in what it read on the host (compiler and nvcc versions, GPU facts) through
the `llama_cpp_build_plan` filter (plugins/filter/llama.py) and gets back
a plan: the CMake argument list, the stamp (a dict written as JSON into the
install folder) and the stamp's short hash that names that folder. Same
inputs, same hash: a second run finds the folder with a matching stamp and
builds nothing.

Options checked against llama.cpp 0c1e57098 (docs/VOLTA_FACTS.md):
GGML_CUDA_FA_ALL_QUANTS is deprecated for GGML_CUDA_FA_QUANTS=all (a list of
K-V type pairs; "OFF" is a fatal configure error),
GGML_CUDA_F16 was removed, LLAMA_CUBLAS is a fatal error, LLAMA_CURL is
ignored, and without LLAMA_USE_PREBUILT_UI=OFF the build downloads the web UI.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from ansible_collections.v100.llm.plugins.module_utils.driver.releases import NVCC_MAX_GCC, SOURCE_HOST_GCC

STAMP_FORMAT = 1
STAMP_FILE = "build-stamp.json"

# Options a user must not pass through llama_cpp_cmake_extra_args: removed or
# fatal in this llama.cpp, or set by the role from its own variables.
_REFUSED_OPTIONS = {
    "LLAMA_CUBLAS": "a fatal error in current llama.cpp; CUDA is GGML_CUDA, set from llama_cpp_cuda_architectures",
    "GGML_CUDA_F16": "removed from llama.cpp",
    "GGML_CUDA": "set from llama_cpp_cuda_architectures (\"\" with no GPU: CPU build)",
    "CMAKE_CUDA_ARCHITECTURES": "set from llama_cpp_cuda_architectures",
    "GGML_CUDA_FA_ALL_QUANTS": "a deprecated alias of GGML_CUDA_FA_QUANTS, set from llama_cpp_cuda_fa_all_quants",
    "GGML_CUDA_FA_QUANTS": "set from llama_cpp_cuda_fa_all_quants",
    "LLAMA_BUILD_NUMBER": "set from llama_cpp_build_number",
    "LLAMA_BUILD_COMMIT": "set from llama_cpp_commit",
    "GGML_CUDA_NCCL": "set from llama_cpp_nccl",
}

# Arguments that change how fast the build runs, not what it produces: left
# out of the stamp so that turning ccache on or off does not rebuild.
_NOT_IN_STAMP = ("-DGGML_CCACHE=",)

_ARCH_ENTRY = re.compile(r"^(?:\d{2,3}[af]?(?:-real|-virtual)?|all|all-major|native)$")
_CAPABILITY = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
_DEFINE = re.compile(r"^-D([A-Za-z_][A-Za-z0-9_]*)(?::[A-Z]+)?=")


def normalize_architectures(value: Optional[str]) -> str:
    """" 70, 80 " -> "70;80"; "" stays ""; ValueError for anything that is not
    a CMake CUDA architecture list."""
    entries = [entry.strip() for entry in re.split(r"[;,]", value or "")]
    entries = [entry for entry in entries if entry]
    bad = [entry for entry in entries if not _ARCH_ENTRY.match(entry)]
    if bad:
        raise ValueError("%s is not a CUDA architecture (e.g. 70, 70-real, 80)" % ", ".join(bad))
    return ";".join(entries)


def architectures_from_gpus(gpus: Optional[Iterable[Mapping[str, Any]]]) -> str:
    """nvidia_gpus facts -> "70" for V100s ("7.0"), "70;89" for V100 + RTX 4090.
    GPUs whose compute capability is unknown are left out, and so are display cards
    kept out of serving (serving: false): nothing runs on them."""
    numbers = set()
    for gpu in gpus or []:
        if not (gpu or {}).get("serving", True):
            continue
        match = _CAPABILITY.match(str((gpu or {}).get("compute_capability") or ""))
        if match:
            numbers.add(int(match.group(1)) * 10 + int(match.group(2)))
    return ";".join(str(number) for number in sorted(numbers))


def resolve_architectures(requested: Optional[str], preflight_architectures: Optional[str] = None,
                          gpus: Optional[Sequence[Mapping[str, Any]]] = None) -> str:
    """The CUDA architectures to build for; "" means a CPU build.

    An explicit `llama_cpp_cuda_architectures` wins (it is also how a display
    card is built for on purpose: "61;70"); else what preflight resolved (it
    checked the list against the GPUs) when it ran; else the serving GPUs'
    compute capabilities; no GPUs -> "".
    """
    if (requested or "").strip():
        return normalize_architectures(requested)
    if preflight_architectures is not None:
        return normalize_architectures(preflight_architectures)
    return architectures_from_gpus(gpus)


# `cuobjdump --list-elf --list-ptx <binary>` names each embedded image after
# its architecture: "ELF file    1: llama-server.1.sm_70.cubin", "PTX file
# 1: llama-server.1.sm_70.ptx" (tests/fixtures/debian13/cuobjdump-*.txt).
_EMBEDDED_CODE = re.compile(r"\.sm_(\d{2,3}[af]?)\.(cubin|ptx)\b")
_NUMBERED_ENTRY = re.compile(r"^(\d{2,3}[af]?)(?:-(real|virtual))?$")


def missing_gpu_code(listing: str, architectures: str) -> List[str]:
    """The entries of a CMake CUDA architecture list a binary does not carry, each with what it lacks.

    `listing` is `cuobjdump --list-elf --list-ptx` of the binary. CMake's "70"
    means machine code (sm_70 cubin) and PTX (compute_70), "70-real" machine
    code only, "70-virtual" PTX only (CMake's CUDA_ARCHITECTURES). "native",
    "all" and "all-major" name no fixed architecture and are not checked.
    Proves the build without a GPU: a device count needs one.
    """
    found = set(_EMBEDDED_CODE.findall(listing or ""))
    missing = []
    for entry in normalize_architectures(architectures).split(";"):
        match = _NUMBERED_ENTRY.match(entry)
        if not match:
            continue
        number, kind = match.groups()
        wanted = [("cubin", "sm_%s machine code" % number), ("ptx", "compute_%s PTX" % number)]
        lacking = [what for image, what in wanted
                   if (kind, image) not in (("virtual", "cubin"), ("real", "ptx")) and (number, image) not in found]
        if lacking:
            missing.append("%s (no %s)" % (entry, " and no ".join(lacking)))
    return missing


_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+)")
# `c++ --version`'s first line ends with GCC's version: "c++ (Debian 14.2.0-19) 14.2.0".
_GCC_VERSION = re.compile(r"^(?:c\+\+|g\+\+)\S* \(.*\) (\d+)\.\d+")
_GXX_PACKAGE = re.compile(r"^g\+\+-(\d+)$")
HOST_COMPILER_ARG = "-DCMAKE_CUDA_HOST_COMPILER="
NO_HOST_COMPILER = {"path": "", "package": "", "error": ""}


def cuda_host_compiler(nvcc: str, compiler: str, packages: Sequence[str]) -> Dict[str, str]:
    """{"path", "package", "error"}: the g++ nvcc must compile host code with, when the host's default is newer
    than that nvcc accepts; all "" when it accepts the default or a version is unknown.

    nvcc: "release 12.4, V12.4.131"; compiler: the first line of `c++ --version`; packages: the g++-<major>
    names apt knows (`apt-cache pkgnames g++-`). NVIDIA's nvcc does not pick a host compiler itself (it runs
    `g++` and refuses a newer GCC: "unsupported GNU version!"); the newest GCC each release accepts is
    driver/releases.py: NVCC_MAX_GCC, read from its crt/host_config.h. The newest g++-<major> no newer than that is
    chosen, so CMake's host compiler for CUDA (CMAKE_CUDA_HOST_COMPILER, nvcc's -ccbin) is one it accepts.
    """
    release = _NVCC_RELEASE.search(nvcc or "")
    gcc = _GCC_VERSION.match(compiler or "")
    newest = NVCC_MAX_GCC.get((int(release.group(1)), int(release.group(2)))) if release else None
    if newest is None or gcc is None or int(gcc.group(1)) <= newest:
        return dict(NO_HOST_COMPILER)
    majors = sorted((int(m.group(1)) for m in map(_GXX_PACKAGE.match, packages or ()) if m), reverse=True)
    usable = [major for major in majors if major <= newest]
    if not usable:
        return dict(NO_HOST_COMPILER, error=(
            "nvcc %s.%s accepts GCC %d at most, the host's c++ is GCC %s, and apt knows no g++-%d or older "
            "(apt-cache pkgnames g++-: %s). Install an older g++ from the distribution, use a newer CUDA 12 "
            "(cuda_toolkit_version), or name a host compiler in llama_cpp_cmake_extra_args "
            "(%s<path>) [source: %s]" % (release.group(1), release.group(2), newest, gcc.group(1), newest,
                                           ", ".join("g++-%d" % m for m in majors) or "none",
                                           HOST_COMPILER_ARG, SOURCE_HOST_GCC)))
    return dict(NO_HOST_COMPILER, path="/usr/bin/g++-%d" % usable[0], package="g++-%d" % usable[0])


def refused_extra_args(extra_args: Sequence[str]) -> List[str]:
    """Messages for llama_cpp_cmake_extra_args entries the role refuses."""
    messages = []
    for arg in extra_args or []:
        match = _DEFINE.match(str(arg))
        if match and match.group(1) in _REFUSED_OPTIONS:
            messages.append("%s: %s" % (arg, _REFUSED_OPTIONS[match.group(1)]))
    return messages


def _on_off(value: Any) -> str:
    return "ON" if value else "OFF"


def cmake_args(cuda_architectures: str = "", build_number: Any = None, commit: str = "",
               fa_all_quants: bool = False, ccache: bool = True, extra_args: Sequence[str] = (),
               build_type: str = "Release", nccl: bool = False, host_compiler: str = "") -> List[str]:
    """The configure arguments (without -S/-B) for llama.cpp.

    Static libraries, so the installed binaries carry no RUNPATH into the
    build folder and the install folder can move. GGML_NATIVE=OFF always: a
    CUDA build must target the listed architectures, not whatever GPU the
    build host has, and a CPU build stays runnable on any AVX2 CPU.
    """
    archs = normalize_architectures(cuda_architectures)
    args = [
        "-DCMAKE_BUILD_TYPE=%s" % build_type,
        "-DBUILD_SHARED_LIBS=OFF",
        "-DGGML_NATIVE=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DGGML_CCACHE=%s" % _on_off(ccache),
    ]
    if archs:
        args += ["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=%s" % archs]
        # GGML_CUDA_FA_QUANTS is a list of K-V type pairs, not a switch; its
        # default (q4_0, q8_0, f16 and bf16 pairs) covers the servers' caches.
        if fa_all_quants:
            args.append("-DGGML_CUDA_FA_QUANTS=all")
        # On by default upstream (ggml/CMakeLists.txt), where it links any NCCL it finds and only warns when
        # there is none: asked for, it must be found (the role checks CMake's cache after configure); not
        # asked for, it is off, so a libnccl-dev left on the host is not linked behind the stamp's back.
        args.append("-DGGML_CUDA_NCCL=%s" % _on_off(bool(nccl)))
        if host_compiler:
            args.append(HOST_COMPILER_ARG + host_compiler)
    else:
        args.append("-DGGML_CUDA=OFF")
    if build_number not in (None, ""):
        args.append("-DLLAMA_BUILD_NUMBER=%s" % int(build_number))
    if commit:
        args.append("-DLLAMA_BUILD_COMMIT=%s" % commit)
    return args + [str(arg) for arg in extra_args or []]


def build_stamp(source_sha256: str, version: str, cmake_arguments: Sequence[str], targets: Sequence[str],
                compiler: str, cuda_architectures: str = "", nvcc: str = "", commit: str = "",
                build_number: Any = None, nccl: str = "") -> Dict[str, Any]:
    """The inputs that decide what the build produces. Two builds with the same
    stamp are the same build; any change here means a new install folder."""
    archs = normalize_architectures(cuda_architectures)
    # The version only with NCCL (a build without it has -DGGML_CUDA_NCCL=OFF among its arguments).
    with_nccl = {"nccl": nccl} if nccl and archs else {}
    return {
        **with_nccl,
        "format": STAMP_FORMAT,
        "version": str(version),
        "commit": commit or "",
        "build_number": None if build_number in (None, "") else int(build_number),
        "source_sha256": (source_sha256 or "").lower(),
        "backend": "cuda" if archs else "cpu",
        "cuda_architectures": archs,
        "nvcc": (nvcc or "") if archs else "",
        "compiler": compiler or "",
        "cmake_args": [arg for arg in cmake_arguments if not arg.startswith(_NOT_IN_STAMP)],
        "targets": sorted(str(target) for target in targets),
    }


def stamp_hash(stamp: Mapping[str, Any], length: int = 10) -> str:
    """A short hash of the stamp (canonical JSON): names the install folder."""
    canonical = json.dumps(stamp, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:length]


def build_plan(inputs: Mapping[str, Any]) -> Dict[str, Any]:
    """Everything the role needs to decide and run a build, from one dict:

    requested_architectures, preflight_architectures (None when preflight did
    not run), gpus, source_sha256, version, build_number, commit,
    fa_all_quants, ccache, extra_args, targets, compiler, nvcc, prefix,
    nccl (the libnccl-dev version built against, "" for none: nccl_choice),
    gxx_packages (the g++-<major> names apt knows, for cuda_host_compiler).
    """
    archs = resolve_architectures(inputs.get("requested_architectures"), inputs.get("preflight_architectures"),
                                  inputs.get("gpus"))
    nccl = str(inputs.get("nccl") or "")
    extra_args = inputs.get("extra_args") or []
    # A host compiler named in the extra arguments (-DCMAKE_CUDA_HOST_COMPILER[:FILEPATH]=) is the user's choice.
    named = [match.group(1) for match in map(_DEFINE.match, map(str, extra_args)) if match]
    host = (cuda_host_compiler(inputs.get("nvcc") or "", inputs.get("compiler") or "", inputs.get("gxx_packages") or [])
            if archs and "CMAKE_CUDA_HOST_COMPILER" not in named else dict(NO_HOST_COMPILER))
    args = cmake_args(archs, inputs.get("build_number"), inputs.get("commit") or "",
                      bool(inputs.get("fa_all_quants")), bool(inputs.get("ccache", True)),
                      extra_args, nccl=bool(nccl), host_compiler=host["path"])
    stamp = build_stamp(inputs.get("source_sha256") or "", inputs.get("version") or "", args,
                        inputs.get("targets") or [], inputs.get("compiler") or "", archs,
                        inputs.get("nvcc") or "", inputs.get("commit") or "", inputs.get("build_number"), nccl)
    short = stamp_hash(stamp)
    name = "%s-%s" % (stamp["version"], short)
    prefix = str(inputs.get("prefix") or "/opt/llama.cpp").rstrip("/")
    return {
        "cuda_architectures": archs,
        "cuda": bool(archs),
        "cuda_host_compiler": host,
        "cmake_args": args,
        "stamp": stamp,
        "hash": short,
        "name": name,
        "install_dir": "%s/%s" % (prefix, name),
    }



def _machine_code(architectures: str) -> set:
    """"70;80-virtual" -> {"70"}: the architectures a list gives machine code for (CMake's "NN-virtual" is PTX only)."""
    numbers = set()
    for entry in normalize_architectures(architectures).split(";"):
        match = _NUMBERED_ENTRY.match(entry)
        if match and match.group(2) != "virtual":
            numbers.add(match.group(1))
    return numbers


def _release(release: Mapping[str, str]) -> str:
    return " ".join(part for part in (release.get("id"), release.get("version_id")) if part)


def _in_order(numbers: Iterable[str]) -> List[str]:
    return sorted(numbers, key=lambda number: (int(re.match(r"\d+", number).group()), number))


def artifact_plan(stamp: Any, folder: str, prefix: str, requested_architectures: Optional[str] = None,
                  preflight_architectures: Optional[str] = None,
                  gpus: Optional[Sequence[Mapping[str, Any]]] = None,
                  built_on: Optional[Mapping[str, str]] = None,
                  host_release: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The plan for installing an exported build (llama_cpp_artifact_file) instead of building: build_plan's keys
    from the archive's own stamp, and "error" when it does not fit this host.

    The archive's folder must be named after its stamp (<version>-<stamp hash>: nothing in it was changed since
    the export), it must come from this host's distribution release (built_on and host_release: {"id",
    "version_id"} of /etc/os-release; a build links its release's glibc, libstdc++ and OpenSSL), and it must carry
    machine code for every architecture this host would build for (the same resolve_architectures as a build:
    llama_cpp_cuda_architectures, else preflight's, else the serving GPUs'). PTX alone is refused: the driver
    would compile every kernel at each start (its cache aside), minutes for llama.cpp's, where a build for the
    architecture starts at once. A CUDA build on a host without serving GPUs is installed only when
    llama_cpp_cuda_architectures names its architectures (a second build host). Lists without numbers ("all",
    "all-major", "native"), on either side, are not compared: where a toolkit is installed, cuobjdump checks the
    binary after unpacking."""
    if not isinstance(stamp, Mapping) or stamp.get("format") != STAMP_FORMAT \
            or not all(key in stamp for key in ("version", "cuda_architectures", "cmake_args")):
        return {"error": "its %s is not a build stamp of this role's format %d (it was not exported by the "
                         "llama_cpp role, or by a version with another stamp format)" % (STAMP_FILE, STAMP_FORMAT)}
    short = stamp_hash(stamp)
    name = "%s-%s" % (stamp["version"], short)
    if folder != name:
        return {"error": "its folder %s is not named after its stamp (%s): the archive was changed after it was "
                         "exported" % (folder, name)}
    built = dict(built_on or {})
    here = dict(host_release or {})
    if not built.get("id") or (built.get("id"), built.get("version_id")) != (here.get("id"), here.get("version_id")):
        return {"error": "it was built on %s, and this host runs %s: a build links its release's glibc, libstdc++ "
                         "and OpenSSL, so export one from a build host of this release" % (
                             _release(built) or "an unknown release (no built-on.json)", _release(here) or "?")}
    carried = str(stamp["cuda_architectures"] or "")
    needed = resolve_architectures(requested_architectures, preflight_architectures, gpus)
    error = ""
    if needed and not carried:
        error = "it is a CPU build, and this host builds for CUDA %s: export a CUDA build" % needed
    elif carried and not needed:
        error = ("it is a CUDA build for %s, and this host has no serving GPU: set llama_cpp_cuda_architectures: "
                 '"%s" to install it here anyway' % (carried, carried))
    elif any(map(_NUMBERED_ENTRY.match, carried.split(";"))) and _machine_code(needed) - _machine_code(carried):
        error = "it carries machine code for %s, not for %s, which this host needs (for %s): build for \"%s\"" % (
            carried, ", ".join(_in_order(_machine_code(needed) - _machine_code(carried))), needed,
            ";".join(_in_order(_machine_code(needed) | _machine_code(carried))))
    return {
        "cuda_architectures": carried,
        "cuda": bool(carried),
        "cuda_host_compiler": dict(NO_HOST_COMPILER),
        "cmake_args": list(stamp["cmake_args"]),
        "stamp": dict(stamp),
        "hash": short,
        "name": name,
        "install_dir": "%s/%s" % (str(prefix or "/opt/llama.cpp").rstrip("/"), name),
        "nccl": str(stamp.get("nccl") or ""),
        "error": error,
    }

# NCCL, for the cross-GPU reductions of split mode tensor: "selected at build time (-DGGML_CUDA_NCCL=ON, this is
# the default) ... not automatically distributed with CUDA" (docs/multi-gpu.md at the pinned commit). NVIDIA
# builds each NCCL release for several CUDA releases, named after "+cuda" in the package version
# (X.Y.Z-REV+cudaA.B: NVIDIA/nccl pkg/debian/changelog.in), and -dev depends on libnccl2 at the same version
# (pkg/debian/control.in): NVIDIA's CUDA 12.4.1 images install libnccl2=2.21.5-1+cuda12.4
# (gitlab.com/nvidia/container-images/cuda, dist/12.4.1/ubuntu2204/runtime), the NCCL Installation Guide
# (3.1, Ubuntu) names the version for the CUDA in use, and apt's own pick of "2.21.*" can be a +cuda12.5 build.
NCCL_PACKAGES = ("libnccl2", "libnccl-dev")
_NCCL_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)-(\d+)\+cuda(\d+\.\d+)$")


def nccl_wanted(setting: Any, cuda_build: bool, serving_gpus: int) -> Dict[str, Any]:
    """llama_cpp_nccl (auto, true or false) -> {"wanted": bool, "required": bool, "error": ""}. auto: a CUDA build on
    a host that serves with two GPUs or more (a build host without GPUs, or one GPU, gains nothing from NCCL),
    where the apt sources have it; true: required."""
    if setting == "auto":
        return {"wanted": bool(cuda_build) and int(serving_gpus or 0) >= 2, "required": False, "error": ""}
    # As Ansible reads a boolean given as text (-e llama_cpp_nccl=true).
    setting = {"true": True, "yes": True, "on": True, "1": True,
               "false": False, "no": False, "off": False, "0": False}.get(str(setting).lower(), setting)
    if not isinstance(setting, bool):
        return {"wanted": False, "required": False, "error": "llama_cpp_nccl=%s must be auto, true or false" % (
            setting,)}
    if setting and not cuda_build:
        return {"wanted": False, "required": False, "error": (
            "llama_cpp_nccl=true needs a CUDA build, and this one is for the CPU (no GPU, or "
            "llama_cpp_cuda_architectures is empty): set it to auto")}
    return {"wanted": setting, "required": setting, "error": ""}


def nccl_versions(madison: str, package: str = "libnccl-dev") -> List[str]:
    """`apt-cache madison libnccl-dev` ("libnccl-dev | 2.21.5-1+cuda12.4 | https://... Packages") -> the versions
    NVIDIA built for a CUDA release, without repeats (a distribution's own build has no +cuda)."""
    found: List[str] = []
    for line in madison.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) >= 2 and fields[0] == package and _NCCL_VERSION.match(fields[1]) \
                and fields[1] not in found:
            found.append(fields[1])
    return found


def _nccl_order(version: str) -> tuple:
    match = _NCCL_VERSION.match(version)
    return tuple(int(part) for part in match.groups()[:4]) if match else ()


def _nccl_cuda(version: str) -> str:
    match = _NCCL_VERSION.match(version)
    return match.group(5) if match else ""


def nccl_choice(madison: str, installed: str, cuda_release: str, requested: str = "",
                required: bool = True, asked_as: str = "llama_cpp_nccl_version",
                package: str = "libnccl-dev") -> Dict[str, Any]:
    """The libnccl2/libnccl-dev version to hold and build against: {"version", "error", "warning"}.

    requested (llama_cpp_nccl_version) when the sources have it; else the installed one when it was built for the
    toolkit's CUDA major release (so NVIDIA publishing a newer NCCL does not rebuild llama.cpp, and an owner's
    newer 12.y build is not downgraded); else the newest the sources have for the toolkit's release, or failing
    that for its major release. NCCL links the CUDA runtime statically and every CUDA 12 build of it carries sm_70
    code (NVIDIA/nccl makefiles/common.mk, src/Makefile), so any 12.y build runs beside a 12.x llama.cpp under
    minor version compatibility; NVIDIA's install guide only recommends the matching one. Its CUDA 13 builds start
    at sm_75 (common.mk): refused on a V100. cuda_release "" (no nvcc yet: check mode on a fresh host) chooses
    nothing. None for the major release is refused when NCCL is required (llama_cpp_nccl: true), else a warning:
    the build goes on without it, as llama.cpp's own does (a host whose apt sources carry no NCCL still gets its
    server). asked_as names where `requested` came from in the messages (an exported build's stamp); package is
    the one madison and installed are of (an exported build needs libnccl2 only).
    """
    available = nccl_versions(madison, package)
    major = cuda_release.split(".")[0]
    if requested:
        if not _NCCL_VERSION.match(requested):
            return {"version": "", "warning": "", "error": "%s=%s is not an NVIDIA NCCL package "
                    "version such as 2.21.5-1+cuda12.4 (apt-cache madison libnccl-dev lists them)" % (asked_as, requested)}
        built_for = _nccl_cuda(requested)
        if built_for.split(".")[0] != (major or "12"):
            return {"version": "", "warning": "", "error": "%s=%s was built for CUDA %s, and "
                    "llama.cpp is built with CUDA %s: NCCL must come from the same major release (its CUDA 13 "
                    "builds carry no kernels for the V100's sm_70). Choose a +cuda%s.y version, or leave "
                    "llama_cpp_nccl_version empty" % (asked_as, requested, built_for, cuda_release or "12",
                                                      major or "12")}
        if requested not in available and requested != installed:
            return {"version": "", "warning": "", "error": "%s=%s is not in this host's apt "
                    "sources (they have: %s)" % (asked_as, requested, ", ".join(available) or "none")}
        return {"version": requested, "warning": "", "error": ""}
    if not cuda_release:
        return {"version": "", "warning": "", "error": ""}
    if _nccl_cuda(installed).split(".")[0] == major:
        return {"version": installed, "warning": "", "error": ""}
    same_major = [v for v in available if _nccl_cuda(v).split(".")[0] == major]
    matching = [v for v in same_major if _nccl_cuda(v) == cuda_release] or same_major
    if matching:
        return {"version": max(matching, key=_nccl_order), "warning": "", "error": ""}
    others = sorted({_nccl_cuda(v) for v in available}, key=lambda r: tuple(int(p) for p in r.split(".")))
    missing = "no libnccl-dev built for CUDA %s.x in this host's apt sources (%s). NCCL comes from NVIDIA's CUDA " \
              "repository (role nvidia_cuda_repo); a distribution's own build (Debian 13's 2.22.3-1-1, no +cuda " \
              "in its version) is not used" % (major, "built for CUDA " + ", ".join(others) if others
                                               else "none at all")
    if not required:
        return {"version": "", "error": "", "warning": missing + ": building without it (split_mode layer does not "
                "use it; tensor runs without it, slower). Set llama_cpp_nccl: false to build without it quietly"}
    return {"version": "", "warning": "", "error": missing + ". Set llama_cpp_nccl: false or auto to build without "
            "it (split_mode layer does not use it; tensor runs without it, slower)"}
