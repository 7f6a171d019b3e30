# -*- coding: utf-8 -*-
"""Which driver / CUDA / llama.cpp / vLLM combinations the detected GPUs can run.

The rules are data (the tables below) plus small pure functions; every table
and check names its source, a section of docs/VOLTA_FACTS.md (which in turn
names the upstream document it was read from). check_stack() runs them all and
returns Refusals: each one says variable=value, why, what to use instead, and
where that rule comes from. Preflight fails on any refusal, before the host is
touched.

GPUs are the dicts the nvidia_gpu_facts module returns; only "name", "index",
"pci_device_id", "pci_bus_id", "compute_capability" ("7.0", or None when
unknown) and "serving" (False for a display card beside headless GPUs; a GPU
without the key serves) are read here. A GPU with an unknown compute
capability is skipped by the capability rules: the toolkit can only refuse what
it knows to be broken. The toolkit, llama.cpp and vLLM rules look at the
serving GPUs only; the driver rules at every GPU: a display card the chosen
branch does not drive is warned about, not refused (display_gpu_warnings).

Runs on the managed host's Python (3.8+): no third-party imports, no `match`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.v100.llm.plugins.module_utils.gpu.catalog import architecture, last_driver_branch
from ansible_collections.v100.llm.plugins.module_utils.driver.releases import (
    DRIVER_BRANCH_LIFECYCLE,
    DISTRIBUTION_GCC,
    REPOS_WITHOUT_VOLTA_DRIVERS,
    SOURCE_DEBIAN13_REPO,
    SOURCE_DISTRIBUTION_TOOLKITS,
    MAINTAINED_VOLTA_BRANCH,
    NVCC_MAX_GCC,
    SOURCE_HOST_GCC,
    SOURCE_LIFECYCLE,
    SOURCE_REPO_TOOLKITS,
    UNSUPPORTED_BRANCHES,
    accepts_gcc,
    carried_toolkits,
    default_toolkit,
    distribution_toolkit,
    repo_name,
    system_label,
    system_name,
)

Capability = Tuple[int, int]
Version = Tuple[int, ...]
Gpu = Mapping[str, Any]

FACTS = "VOLTA_FACTS.md"
SOURCE_SYSTEMS = (FACTS + ", Driver branches (NVIDIA CUDA apt repo: ubuntu2204, ubuntu2404, debian12) and Debian 13 "
                  "(Debian's own driver and toolkit)")
SOURCE_GPU_REQUIRED = "DESIGN.md, Public variables (preflight_require_gpu)"
SOURCE_BRANCHES = FACTS + ", Driver branches"
SOURCE_DRIVER_SUPPORT = FACTS + ", GPUs outside the catalogue (NVIDIA's legacy driver branches)"
SOURCE_OPEN_MODULES = FACTS + ", Driver branches (open GPU kernel modules need GSP)"
SOURCE_CUDA = FACTS + ", CUDA toolkit"
SOURCE_CUDA_DRIVER = FACTS + ", CUDA toolkit (minor version compatibility: CUDA Compatibility guide)"
SOURCE_MACHINE_CODE = FACTS + ", CUDA toolkit (ship sm_70 machine code)"
SOURCE_LLAMA_CPP = FACTS + ", llama.cpp (GGML_NATIVE builds for the GPU present at build time)"
SOURCE_VLLM_VERSIONS = FACTS + ", vLLM (version table)"
SOURCE_VLLM_QUANTIZATION = FACTS + ", vLLM (quantization minimum cc in 0.5.x)"
SOURCE_VLLM_DTYPE = FACTS + ", vLLM (dtype)"

# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

# (ansible_distribution, major version for Debian / major.minor for Ubuntu)
SUPPORTED_SYSTEMS = (("Ubuntu", "22.04"), ("Ubuntu", "24.04"), ("Debian", "12"), ("Debian", "13"))
# cuda_toolkit_source: NVIDIA's repository, or the distribution's own nvidia-cuda-toolkit.
CUDA_TOOLKIT_SOURCES = ("cuda_repo", "distro")

# Driver branch -> the CUDA it ships (nvidia-smi's "CUDA Version"). Not a ceiling
# for the toolkit: see FIRST_BRANCH_FOR_CUDA_MAJOR. VOLTA_FACTS.md, Driver branches.
DRIVER_BRANCH_MAX_CUDA: Dict[int, Tuple[int, int]] = {
    535: (12, 2),
    550: (12, 4),
    570: (12, 8),
    575: (12, 9),
    580: (13, 0),
}
DEFAULT_DRIVER_BRANCH = 580
# 590 and newer ignore Volta ("supported through the NVIDIA 580.xx Legacy drivers").
FIRST_BRANCH_WITHOUT_VOLTA = 590
DRIVER_FLAVORS = ("proprietary", "open")

# Minor version compatibility (NVIDIA's CUDA Compatibility guide, "Minor Version
# Compatibility"): CUDA 12.x applications run on drivers >= 525, 13.x on >= 580.
FIRST_BRANCH_FOR_CUDA_MAJOR = {12: 525, 13: 580}
# Only where the distribution is unknown (refused anyway); else releases.default_toolkit.
DEFAULT_CUDA_TOOLKIT = (12, 4)
_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)$")
CUDA_TOOLKIT_MAJORS = (12, 13)
# CUDA 13 removed sm_70; 12.9 is the newest toolkit the table lists below 13 (575 row).
NEWEST_CUDA_FOR_VOLTA = (12, 9)

# Compute-capability thresholds.
TURING = (7, 5)  # GSP (open modules), CUDA 13, driver 590+, vLLM >= 0.20
AMPERE = (8, 0)  # bfloat16 in vLLM

CMAKE_SPECIAL_ARCHITECTURES = ("native", "all", "all-major")
_ARCH_ENTRY = re.compile(r"^(?P<number>\d{2,3})(?P<suffix>[af]?)(?:-(?P<kind>real|virtual))?$")

# vLLM versions are compared as (major, minor, patch, post).
DEFAULT_VLLM_VERSION = "0.5.4"
FIRST_VLLM_WITHOUT_VOLTA = (0, 20, 0, 0)
LAST_VLLM_FOR_VOLTA = "0.19.1"
FIRST_VLLM_WITH_QWEN3 = (0, 8, 4, 0)
QWEN3_ARCHITECTURES = ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
# The architectures a vLLM release registers (config.json "architectures"), where the role knows them:
# _GENERATION_MODELS and _EMBEDDING_MODELS of vllm/model_executor/models/__init__.py at v0.5.4 (commit
# 4db5176d9758b720b05460c50ace3c01026eb158, "bump version to v0.5.4"). Gemma-3, Qwen3, Qwen3.5, GLM-4 and
# gpt-oss are not among them: 0.5.4 would download them, then fail to start.
VLLM_REGISTERED_ARCHITECTURES = {
    (0, 5, 4, 0): frozenset((
        "AquilaModel", "AquilaForCausalLM", "BaiChuanForCausalLM", "BaichuanForCausalLM", "BloomForCausalLM",
        "Blip2ForConditionalGeneration", "ChameleonForConditionalGeneration", "ChatGLMModel",
        "ChatGLMForConditionalGeneration", "CohereForCausalLM", "DbrxForCausalLM", "DeciLMForCausalLM",
        "DeepseekForCausalLM", "DeepseekV2ForCausalLM", "FalconForCausalLM", "FuyuForCausalLM", "GemmaForCausalLM",
        "Gemma2ForCausalLM", "GPT2LMHeadModel", "GPTBigCodeForCausalLM", "GPTJForCausalLM", "GPTNeoXForCausalLM",
        "InternLMForCausalLM", "InternLM2ForCausalLM", "InternVLChatModel", "JAISLMHeadModel", "LlamaForCausalLM",
        "LlavaForConditionalGeneration", "LlavaNextForConditionalGeneration", "LLaMAForCausalLM",
        "MistralForCausalLM", "MixtralForCausalLM", "QuantMixtralForCausalLM", "MptForCausalLM", "MPTForCausalLM",
        "MiniCPMForCausalLM", "MiniCPMV", "NemotronForCausalLM", "OlmoForCausalLM", "OPTForCausalLM",
        "OrionForCausalLM", "PersimmonForCausalLM", "PaliGemmaForConditionalGeneration", "PhiForCausalLM",
        "Phi3ForCausalLM", "Phi3VForCausalLM", "QWenLMHeadModel", "Qwen2ForCausalLM", "Qwen2MoeForCausalLM",
        "RWForCausalLM", "StableLMEpochForCausalLM", "StableLmForCausalLM", "Starcoder2ForCausalLM",
        "ArcticForCausalLM", "XverseForCausalLM", "Phi3SmallForCausalLM", "MedusaModel",
        "MLPSpeculatorPreTrainedModel", "JambaForCausalLM", "MistralModel",
    )),
}
# Gemma-2 caps its attention logits (attn_logit_softcapping); below compute capability 8.0 vLLM 0.5.4 runs
# attention on its xformers backend, which raises "XFormers does not support attention logits soft capping"
# (vllm/attention/backends/xformers.py at 4db5176).
SOFT_CAPPING_ARCHITECTURES = ("Gemma2ForCausalLM",)
FIRST_VLLM_WITH_GGUF = (0, 5, 5, 0)


@dataclass(frozen=True)
class PythonRange:
    """vLLM releases [first, before) publish wheels for Python oldest..newest."""

    first: Version
    before: Version
    oldest: Tuple[int, int]
    newest: Tuple[int, int]
    label: str
    source: str = SOURCE_VLLM_VERSIONS


VLLM_PYTHON_RANGES = (
    PythonRange((0, 5, 0, 0), (0, 5, 4, 0), (3, 8), (3, 11), "0.5.0-0.5.3.post1"),
    PythonRange((0, 5, 4, 0), (0, 5, 6, 0), (3, 8), (3, 12), "0.5.4"),
)

# Minimum compute capability (vLLM's own integer form, 75 = 7.5) per method.
# fp8 is 80 or 89 depending on the kernel path: 80, the lower, is enforced.
VLLM_QUANTIZATION_MIN_CAPABILITY: Dict[str, int] = {
    "awq": 75,
    "awq_marlin": 80,
    "bitsandbytes": 70,
    "fp8": 80,
    "gguf": 60,
    "gptq": 60,
    "gptq_marlin": 80,
    "marlin": 80,
    "squeezellm": 70,
}
FALLBACK_QUANTIZATION = "gptq"
VLLM_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
# Checkpoint dtypes that `--dtype auto` keeps as they are on a pre-Ampere GPU.
DTYPES_SAFE_UNDER_AUTO = ("float16", "half", "float32", "float")


# ---------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """One reason preflight will not go on, and what to change."""

    variable: str
    value: str
    reason: str
    fix: str
    source: str

    def message(self) -> str:
        value = self.value if self.value != "" else '""'
        return "%s=%s %s. %s. [source: %s]" % (
            self.variable, value, self.reason.rstrip("."), self.fix.rstrip("."), self.source)

    def as_dict(self) -> Dict[str, str]:
        return {
            "variable": self.variable,
            "value": self.value,
            "reason": self.reason,
            "fix": self.fix,
            "source": self.source,
            "message": self.message(),
        }


@dataclass(frozen=True)
class StackRequest:
    """The public variables the rules read (DESIGN.md, Public variables)."""

    nvidia_driver_branch: str = str(DEFAULT_DRIVER_BRANCH)
    nvidia_driver_flavor: str = "proprietary"
    # "" = the default for the distribution and branch (resolve_cuda_toolkit).
    cuda_toolkit_version: str = ""
    cuda_toolkit_source: str = "cuda_repo"
    llama_cpp_cuda_architectures: str = ""
    vllm_enabled: bool = True
    vllm_version: str = DEFAULT_VLLM_VERSION
    vllm_quantization: Optional[str] = "gptq"
    vllm_dtype: str = "half"
    vllm_model_architecture: Optional[str] = ""
    # torch_dtype of the checkpoint (config.json); "" when unknown.
    vllm_model_dtype: Optional[str] = ""
    python_version: str = ""
    distribution: str = ""
    distribution_version: str = ""
    require_gpu: bool = True


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def parse_version(text: Any) -> Optional[Version]:
    """"0.5.4" -> (0, 5, 4, 0); "0.5.3.post1" -> (0, 5, 3, 1); malformed -> None.

    One to three release numbers (missing ones are 0) and an optional .postN.
    Pre-releases (rc, dev) are not accepted: the tables only name releases.
    """
    match = re.match(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.post(\d+))?$", str(text or "").strip())
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def format_version(version: Version) -> str:
    release = ".".join(str(part) for part in version[:3])
    return release + (".post%d" % version[3] if len(version) > 3 and version[3] else "")


def parse_major_minor(text: Any) -> Optional[Tuple[int, int]]:
    """"12.4" -> (12, 4); "3.12.3" -> (3, 12); anything else -> None."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.\d+)?$", str(text or "").strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def serving_gpus(gpus: Sequence[Gpu]) -> List[Gpu]:
    """The GPUs the services run on: all but display cards kept out of serving."""
    return [gpu for gpu in gpus if gpu.get("serving", True)]


def compute_capability(gpu: Gpu) -> Optional[Capability]:
    """A GPU fact's "7.0" -> (7, 0); None when nothing knew the card's capability."""
    return parse_major_minor(gpu.get("compute_capability"))


def format_major_minor(capability: Capability) -> str:
    return "%d.%d" % capability


def min_compute_capability(gpus: Sequence[Gpu]) -> Optional[Capability]:
    """The lowest known compute capability, or None when no GPU has a known one."""
    known = [cc for cc in (compute_capability(gpu) for gpu in gpus) if cc is not None]
    return min(known) if known else None


def gpus_below(gpus: Sequence[Gpu], capability: Capability) -> List[Gpu]:
    """GPUs with a known compute capability lower than `capability`, lowest first."""
    below = []
    for gpu in gpus:
        known = compute_capability(gpu)
        if known is not None and known < capability:
            below.append((known, gpu))
    return [gpu for _, gpu in sorted(below, key=lambda pair: pair[0])]


def describe_gpu(gpu: Gpu) -> str:
    """"Tesla V100-PCIE-32GB (compute capability 7.0)"."""
    name = gpu.get("name") or "GPU %s (%s)" % (gpu.get("index", "?"), gpu.get("pci_device_id", "unknown id"))
    capability = compute_capability(gpu)
    if capability is None:
        return "%s (compute capability unknown)" % name
    return "%s (compute capability %s)" % (name, format_major_minor(capability))


def _parse_branch(text: Any) -> Optional[int]:
    text = str(text if text is not None else "").strip()
    return int(text) if text.isdigit() else None


def _suggested_cuda(branch: Optional[int], repo: Optional[str], gpus: Sequence[Gpu]) -> Tuple[Tuple[int, int], str]:
    """The toolkit to suggest in a refusal, and why."""
    branch_cuda = DRIVER_BRANCH_MAX_CUDA.get(branch) if branch is not None else None
    if repo:
        default = default_toolkit(repo, branch_cuda)
        if default is not None:
            return default, "the default for %s%s" % (
                repo, " with the %d branch" % branch if branch_cuda else "")
    if branch_cuda is None:
        return DEFAULT_CUDA_TOOLKIT, "the toolkit's default"
    if gpus_below(gpus, TURING) and branch_cuda > NEWEST_CUDA_FOR_VOLTA:
        return NEWEST_CUDA_FOR_VOLTA, "the newest CUDA 12, which the %d branch runs" % branch
    return branch_cuda, "the CUDA the %d branch ships" % branch


# ---------------------------------------------------------------------------
# Rules: each returns the refusals for one variable (an empty list = fine)
# ---------------------------------------------------------------------------


def check_system(request: StackRequest) -> List[Refusal]:
    """Ubuntu 22.04 / 24.04 and Debian 12 (NVIDIA's CUDA repo paths that exist) and Debian 13 (its own packages).

    Source: VOLTA_FACTS.md, Driver branches (NVIDIA CUDA apt repo URLs) and Debian 13.
    Ubuntu compares major.minor ("22.04"), Debian its major ("12.7" -> "12"): system_label.
    """
    distribution = request.distribution or ""
    version = str(request.distribution_version or "")
    if system_label(distribution, version) in ["%s %s" % system for system in SUPPORTED_SYSTEMS]:
        return []
    return [Refusal(
        variable="ansible_distribution",
        value=("%s %s" % (distribution, version)).strip(),
        reason="is not a supported system: the driver and CUDA packages this toolkit installs are published "
               "for Ubuntu 22.04, Ubuntu 24.04 and Debian 12 (NVIDIA's repository) and Debian 13 (Debian's own)",
        fix="Use Ubuntu 22.04, Ubuntu 24.04, Debian 12 or Debian 13",
        source=SOURCE_SYSTEMS,
    )]


def check_gpu_present(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """A GPU host must show a GPU; GPU-less hosts (CI, demo) opt out.

    Source: DESIGN.md, Public variables (preflight_require_gpu).
    """
    if gpus or not request.require_gpu:
        return []
    return [Refusal(
        variable="preflight_require_gpu",
        value="true",
        reason="but no NVIDIA GPU was found on the PCI bus (no device with vendor id 10de)",
        fix="Check that the card is seated and powered (PCIe power cables) and that "
            "`lspci -nn | grep -i 10de` lists it; on a host without a GPU set preflight_require_gpu=false",
        source=SOURCE_GPU_REQUIRED,
    )]


def _last_branch_before(gpu: Gpu, branch: int) -> Optional[int]:
    """The last branch that drives the GPU's architecture when that is older than `branch`, else None."""
    last = last_driver_branch(gpu.get("compute_capability"))
    return last if last is not None and last < branch else None


def _undriven(gpus: Sequence[Gpu], branch: int) -> List[Tuple[int, Gpu]]:
    """(last branch, GPU) for GPUs whose architecture NVIDIA stopped driving before `branch`, oldest first."""
    found = [(_last_branch_before(gpu, branch), gpu) for gpu in gpus]
    return sorted([pair for pair in found if pair[0] is not None], key=lambda pair: pair[0])


def check_driver_branch(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """Branches 535/550/570/575/580 are known, and must drive every serving GPU: 590+
    drops Maxwell, Pascal and Volta, 535+ never drove Kepler or older.

    Sources: VOLTA_FACTS.md, Driver branches (580 is the last Volta branch; 590+
    ignores the GPU, "supported through the NVIDIA 580.xx Legacy drivers") and GPUs
    outside the catalogue (470 the last for Kepler, 390 for Fermi, 340 for Tesla).
    Display cards are display_gpu_warnings' business.
    """
    value = str(request.nvidia_driver_branch if request.nvidia_driver_branch is not None else "")
    known = ", ".join(str(branch) for branch in sorted(DRIVER_BRANCH_MAX_CUDA))
    fix = "Use %d (or one of %s)" % (DEFAULT_DRIVER_BRANCH, known)
    branch = _parse_branch(value)
    if branch is None:
        return [Refusal("nvidia_driver_branch", value,
                        "is not a driver branch number (e.g. 580)", fix, SOURCE_BRANCHES)]
    undriven = _undriven(serving_gpus(gpus), branch)
    if undriven:
        last, gpu = undriven[0]
        if last >= min(DRIVER_BRANCH_MAX_CUDA):
            return [Refusal(
                "nvidia_driver_branch", value,
                "cannot drive %s: the driver ignores Volta GPUs (and older): they are \"supported through "
                "the NVIDIA 580.xx Legacy drivers\"" % describe_gpu(gpu),
                "Use 580 (the last branch for Volta)" + (
                    "" if DEFAULT_DRIVER_BRANCH == 580 else " or %d (the default)" % DEFAULT_DRIVER_BRANCH),
                SOURCE_BRANCHES,
            )]
        return [Refusal(
            "nvidia_driver_branch", value,
            "cannot drive %s: NVIDIA's last driver branch for %s GPUs is %d, and this toolkit installs %s" % (
                describe_gpu(gpu), architecture(gpu.get("compute_capability")), last, known),
            "Take the card out of the host: no branch this toolkit installs drives it",
            SOURCE_DRIVER_SUPPORT,
        )]
    if branch >= FIRST_BRANCH_WITHOUT_VOLTA or branch in DRIVER_BRANCH_MAX_CUDA:
        return []
    return [Refusal(
        "nvidia_driver_branch", value,
        "is not a branch this toolkit installs (it knows %s, and %d+ for Turing and newer GPUs)"
        % (known, FIRST_BRANCH_WITHOUT_VOLTA),
        fix, SOURCE_BRANCHES,
    )]


def check_driver_flavor(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """The open kernel modules need GSP, which only Turing (7.5) and newer have.

    Source: VOLTA_FACTS.md, Driver branches (open GPU kernel modules need GSP;
    the module refuses a V100: "does not include the required GPU System
    Processor (GSP)").
    """
    flavor = str(request.nvidia_driver_flavor or "")
    if flavor not in DRIVER_FLAVORS:
        return [Refusal("nvidia_driver_flavor", flavor,
                        'is not a driver flavour (expected "proprietary" or "open")',
                        "Use proprietary", SOURCE_OPEN_MODULES)]
    old = gpus_below(gpus, TURING) if flavor == "open" else []
    if not old:
        return []
    return [Refusal(
        "nvidia_driver_flavor", flavor,
        "cannot drive %s: the open kernel modules need the GPU System Processor (GSP), which only "
        "Turing (7.5) and newer GPUs have; the module refuses the card (\"does not include the "
        "required GPU System Processor (GSP)\")" % describe_gpu(old[0]),
        "Use proprietary", SOURCE_OPEN_MODULES,
    )]


def resolve_cuda_toolkit(request: StackRequest) -> str:
    """The toolkit the roles will install: cuda_toolkit_version, or when it is empty the distribution's own
    (cuda_toolkit_source: distro) or the default for the distribution's NVIDIA repository and the driver
    branch (releases.default_toolkit)."""
    value = str(request.cuda_toolkit_version or "").strip()
    if value:
        return value
    own = distribution_toolkit(request.distribution, request.distribution_version)
    if request.cuda_toolkit_source == "distro" and own is not None:
        return format_major_minor(own.release)
    repo = repo_name(request.distribution, request.distribution_version)
    branch = _parse_branch(request.nvidia_driver_branch)
    default = default_toolkit(repo, DRIVER_BRANCH_MAX_CUDA.get(branch)) if repo else None
    return format_major_minor(default or DEFAULT_CUDA_TOOLKIT)


def check_cuda_toolkit_source(request: StackRequest) -> List[Refusal]:
    """Where the toolkit comes from: NVIDIA's repository where it carries a CUDA 12, else the distribution's
    own nvidia-cuda-toolkit where that is a 12.x the driver branch can run. One refusal at most.

    Sources: VOLTA_FACTS.md, CUDA toolkit (what NVIDIA's repositories carry) and Debian 13 (Debian's
    packages: nvidia-cuda-toolkit's version; nvidia-cuda-dev's Depends on libcuda1 (>= 550)).
    """
    source = request.cuda_toolkit_source
    system = system_label(request.distribution, request.distribution_version)
    repo = repo_name(request.distribution, request.distribution_version)
    own = distribution_toolkit(request.distribution, request.distribution_version)
    own_usable = own is not None and own.release[0] == 12
    if source not in CUDA_TOOLKIT_SOURCES:
        return [Refusal("cuda_toolkit_source", source, "is not a toolkit source",
                        "Use cuda_repo (NVIDIA's repository) or distro (the distribution's nvidia-cuda-toolkit)",
                        SOURCE_CUDA)]
    if source == "cuda_repo":
        if repo is None or any(release[0] == 12 for release in carried_toolkits(repo)):
            return []
        return [Refusal(
            "cuda_toolkit_source", source,
            "on %s: NVIDIA's %s repository carries no CUDA 12 toolkit (it opened with CUDA 13, which "
            "removed sm_70)" % (system, repo),
            "Set cuda_toolkit_source: distro (%s packages CUDA %s as nvidia-cuda-toolkit)"
            % (system, format_major_minor(own.release)) if own_usable else "Use Debian 12 or Ubuntu",
            SOURCE_DEBIAN13_REPO if repo in REPOS_WITHOUT_VOLTA_DRIVERS else SOURCE_REPO_TOOLKITS)]
    fix = ("Set cuda_toolkit_source: cuda_repo (NVIDIA's %s repository carries CUDA %s)"
           % (repo, ", ".join(format_major_minor(release) for release in carried_toolkits(repo)))
           if repo and carried_toolkits(repo) else "Use Debian 13")
    if own is None:
        return [Refusal("cuda_toolkit_source", source,
                        "on %s: this toolkit installs no distribution CUDA toolkit but Debian's (its tables know "
                        "Debian 12's and 13's nvidia-cuda-toolkit)" % system, fix, SOURCE_DISTRIBUTION_TOOLKITS)]
    if not own_usable:
        return [Refusal(
            "cuda_toolkit_source", source,
            "on %s: its nvidia-cuda-toolkit %s is CUDA %s, not the CUDA 12 this toolkit builds and serves with "
            "(llama.cpp sets no minimum of its own; the rules here and vLLM's wheels are for 12.x)"
            % (system, own.version, format_major_minor(own.release)), fix, SOURCE_DISTRIBUTION_TOOLKITS)]
    value = str(request.cuda_toolkit_version or "").strip()
    if value and value != format_major_minor(own.release):
        return [Refusal(
            "cuda_toolkit_version", value,
            "with cuda_toolkit_source: distro: %s packages CUDA %s only (nvidia-cuda-toolkit %s)"
            % (system, format_major_minor(own.release), own.version),
            'Set cuda_toolkit_version: "" or "%s"' % format_major_minor(own.release), SOURCE_DISTRIBUTION_TOOLKITS)]
    branch = _parse_branch(request.nvidia_driver_branch)
    if branch is not None and branch < own.min_branch:
        return [Refusal(
            "nvidia_driver_branch", str(branch),
            "cannot run %s's CUDA %s packages: nvidia-cuda-dev depends on libcuda1 (>= %d), which the %d "
            "branch's libcuda does not provide" % (system, format_major_minor(own.release), own.min_branch, branch),
            "Use nvidia_driver_branch=%d" % own.min_branch, SOURCE_DISTRIBUTION_TOOLKITS)]
    return []


def check_cuda_toolkit(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """12.x or 13.x; 13.x needs every GPU at cc >= 7.5; the branch must run the major; 12.x must be carried.

    Sources: VOLTA_FACTS.md, CUDA toolkit (CUDA 13.0 removed sm_70; minor
    version compatibility: a 12.x toolkit runs on any driver >= 525, a 13.x one
    on >= 580; which 12.x NVIDIA's repository carries per distribution). A 12.x
    newer than the CUDA the branch ships is allowed: stack_warnings() says what
    minor version compatibility does not cover. One refusal at most.
    """
    value = resolve_cuda_toolkit(request)
    branch = _parse_branch(request.nvidia_driver_branch)
    repo = repo_name(request.distribution, request.distribution_version)
    suggestion, why = _suggested_cuda(branch, repo, gpus)
    own = distribution_toolkit(request.distribution, request.distribution_version)
    if request.cuda_toolkit_source == "distro" and own is not None:
        # check_cuda_toolkit_source refused any other release; only the distribution's own limits remain.
        repo = None
        suggestion, why = own.release, "the distribution's nvidia-cuda-toolkit"
    fix = "Use %s (%s)" % (format_major_minor(suggestion), why)
    match = _CUDA_VERSION.match(value)
    if match is None:
        return [Refusal("cuda_toolkit_version", value,
                        "is not a CUDA release as major.minor, quoted (e.g. \"12.4\")", fix, SOURCE_CUDA)]
    toolkit = (int(match.group(1)), int(match.group(2)))
    if toolkit[0] not in CUDA_TOOLKIT_MAJORS:
        return [Refusal("cuda_toolkit_version", value,
                        "is not a CUDA 12.x or 13.x toolkit, the ones this toolkit installs", fix, SOURCE_CUDA)]
    old = gpus_below(gpus, TURING)
    if toolkit[0] >= 13 and old:
        return [Refusal(
            "cuda_toolkit_version", value,
            "cannot build for %s: CUDA 13 removed sm_70 (\"nvcc fatal : Unsupported gpu architecture "
            "'sm_70'\")" % describe_gpu(old[0]),
            fix, SOURCE_CUDA,
        )]
    first_branch = FIRST_BRANCH_FOR_CUDA_MAJOR[toolkit[0]]
    if branch is not None and branch < first_branch:
        return [Refusal(
            "cuda_toolkit_version", value,
            "needs a driver of branch %d or newer: minor version compatibility covers CUDA %d.x on drivers "
            ">= %d only, and the %d branch is older (\"CUDA driver version is insufficient for CUDA runtime "
            "version\")" % (first_branch, toolkit[0], first_branch, branch),
            "%s, or nvidia_driver_branch=%d" % (fix, first_branch), SOURCE_CUDA_DRIVER,
        )]
    carried = carried_toolkits(repo) if repo else ()
    if toolkit[0] == 12 and carried and toolkit not in carried:
        return [Refusal(
            "cuda_toolkit_version", value,
            "is not in NVIDIA's %s repository (it carries cuda-toolkit-12-<minor> for %s only)"
            % (repo, ", ".join(format_major_minor(release) for release in carried)),
            fix, SOURCE_REPO_TOOLKITS,
        )]
    return []


def parse_cuda_architectures(value: str) -> List[str]:
    """"70;80" / "70,80" / " 70-real " -> ["70", "80"] etc.; ValueError when malformed.

    Accepts CMake's CUDA_ARCHITECTURES forms: numbers with an optional a/f
    suffix and -real/-virtual, or one of the special values on its own.
    """
    entries = [entry.strip() for entry in re.split(r"[;,]", value or "")]
    entries = [entry for entry in entries if entry]
    if not entries:
        raise ValueError("no architectures listed")
    if any(entry in CMAKE_SPECIAL_ARCHITECTURES for entry in entries):
        if len(entries) > 1:
            raise ValueError("%s must be used on its own" % "/".join(CMAKE_SPECIAL_ARCHITECTURES))
        return entries
    bad = [entry for entry in entries if not _ARCH_ENTRY.match(entry)]
    if bad:
        raise ValueError("%s is not a CUDA architecture (e.g. 70, 70-real, 80)" % ", ".join(bad))
    return entries


def _architecture(entry: str) -> Tuple[Capability, str, str]:
    """"70-real" -> ((7, 0), "", "real"); a plain "70" is kind "both" (SASS and PTX)."""
    match = _ARCH_ENTRY.match(entry)
    if match is None:
        raise ValueError("%s is not a CUDA architecture" % entry)
    number = int(match.group("number"))
    return (number // 10, number % 10), match.group("suffix"), match.group("kind") or "both"


def _runs_machine_code(entry: str, gpu_capability: Capability) -> bool:
    """SASS for X.y runs on X.z with z >= y; an "a" (arch-specific) build only on X.y itself."""
    capability, suffix, kind = _architecture(entry)
    if kind == "virtual" or capability[0] != gpu_capability[0]:
        return False
    return capability == gpu_capability if suffix == "a" else capability[1] <= gpu_capability[1]


def _has_machine_code(entries: Sequence[str], gpu_capability: Optional[Capability]) -> bool:
    """True when some entry runs on the GPU, or when the GPU's capability is unknown."""
    if gpu_capability is None:
        return True
    return any(_runs_machine_code(entry, gpu_capability) for entry in entries)


def derive_cuda_architectures(gpus: Sequence[Gpu]) -> str:
    """"70" for V100s, "70;89" for a V100 + RTX 4090: sorted, de-duplicated, CMake list.

    GPUs with an unknown compute capability are left out (check_llama_cpp_architectures
    refuses to derive a list when there are any).
    """
    numbers = sorted({cc[0] * 10 + cc[1] for cc in (compute_capability(gpu) for gpu in gpus) if cc})
    return ";".join(str(number) for number in numbers)


def resolve_cuda_architectures(request: StackRequest, gpus: Sequence[Gpu]) -> str:
    """The list llama.cpp will be built with: derived from the serving GPUs when the variable
    is "", else normalised ("70, 80" -> "70;80"). A malformed value comes back as given (and
    is refused by the check)."""
    if not (request.llama_cpp_cuda_architectures or "").strip():
        return derive_cuda_architectures(serving_gpus(gpus))
    try:
        return ";".join(parse_cuda_architectures(request.llama_cpp_cuda_architectures))
    except ValueError:
        return request.llama_cpp_cuda_architectures


def check_llama_cpp_architectures(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """Every GPU needs machine code (SASS) it can run, and the toolkit must build it.

    Sources: VOLTA_FACTS.md, CUDA toolkit ("Ship sm_70 machine code (not PTX
    only)"; CUDA 13 cannot target sm_70) and llama.cpp (GGML_NATIVE builds for
    the GPU present at build time, so "native" needs a GPU there).
    """
    variable = "llama_cpp_cuda_architectures"
    value = request.llama_cpp_cuda_architectures or ""
    derived = derive_cuda_architectures(gpus)
    use_derived = "Use %s (or leave it empty to derive it from the detected GPUs)" % derived if derived else \
        "Use 70 for V100 GPUs"
    if not value.strip():
        unknown = [gpu for gpu in gpus if compute_capability(gpu) is None]
        if not unknown:
            return []
        return [Refusal(
            variable, value,
            "cannot be derived: %s has no known compute capability" % describe_gpu(unknown[0]),
            "Set llama_cpp_cuda_architectures explicitly (e.g. 70 for a V100)", SOURCE_MACHINE_CODE,
        )]
    try:
        entries = parse_cuda_architectures(value)
    except ValueError as error:
        return [Refusal(variable, value, "is not a CMake CUDA architecture list: %s" % error,
                        use_derived, SOURCE_MACHINE_CODE)]
    if entries[0] in CMAKE_SPECIAL_ARCHITECTURES:
        if entries[0] == "native" and not gpus:
            return [Refusal(variable, value,
                            "builds for the GPU present at build time, and this host has none",
                            "Set the list explicitly (70 for a V100) to build without the GPU",
                            SOURCE_LLAMA_CPP)]
        return []
    refusals = []
    # One refusal names the first GPU left without machine code; the fix covers them all.
    stranded = next((gpu for gpu in gpus if not _has_machine_code(entries, compute_capability(gpu))), None)
    if stranded is not None:
        capability = compute_capability(stranded)
        ptx_only = any(_architecture(entry)[0] <= capability for entry in entries)
        reason = ("gives %s only PTX, no machine code for it: PTX newer than the driver cannot be "
                  "JIT-compiled" if ptx_only else
                  "has no machine code that %s can run (SASS runs only on the same major "
                  "architecture at an equal or newer minor)") % describe_gpu(stranded)
        refusals.append(Refusal(variable, value, reason, use_derived, SOURCE_MACHINE_CODE))
    toolkit = parse_major_minor(request.cuda_toolkit_version)
    pre_turing = [entry for entry in entries if _architecture(entry)[0] < TURING]
    if toolkit and toolkit[0] >= 13 and pre_turing:
        refusals.append(Refusal(
            variable, value,
            "cannot be built with cuda_toolkit_version=%s: CUDA 13 removed sm_70 and older "
            "(\"nvcc fatal : Unsupported gpu architecture\")" % request.cuda_toolkit_version,
            "Use cuda_toolkit_version 12.x, or drop %s from the list" % ", ".join(pre_turing),
            SOURCE_CUDA,
        ))
    return refusals


def check_vllm_version(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """Well-formed; < 0.20.0 on pre-Turing GPUs; Qwen3 needs 0.8.4; Python within the wheels' range.

    Source: VOLTA_FACTS.md, vLLM (version table: Python ranges, 0.8.4 first
    with Qwen3 / Qwen3-MoE, 0.19.1 the last Volta release).
    """
    value = str(request.vllm_version or "")
    version = parse_version(value)
    if version is None:
        return [Refusal("vllm_version", value,
                        "is not a vLLM release version (e.g. 0.5.4 or 0.5.3.post1)",
                        "Use %s" % DEFAULT_VLLM_VERSION, SOURCE_VLLM_VERSIONS)]
    refusals = []
    old = gpus_below(gpus, TURING)
    if version >= FIRST_VLLM_WITHOUT_VOLTA and old:
        refusals.append(Refusal(
            "vllm_version", value,
            "cannot run on %s: vLLM 0.20.0 and newer need compute capability 7.5" % describe_gpu(old[0]),
            "Use %s (the last release for Volta) or %s" % (LAST_VLLM_FOR_VOLTA, DEFAULT_VLLM_VERSION),
            SOURCE_VLLM_VERSIONS,
        ))
    architecture = request.vllm_model_architecture or ""
    registered = VLLM_REGISTERED_ARCHITECTURES.get(version)
    if architecture and registered is not None and architecture not in registered \
            and architecture not in QWEN3_ARCHITECTURES:
        refusals.append(Refusal(
            "vllm_model_architecture", architecture,
            "is not a model vLLM %s registers: it would download the model, then fail to start" % value,
            "Serve the model's GGUF with llama_server (llama.cpp at the pinned commit loads far more "
            "architectures), or give vLLM a model it registers, e.g. Qwen2ForCausalLM "
            "(Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4 with vllm_quantization gptq)",
            SOURCE_VLLM_VERSIONS + "; vllm/model_executor/models/__init__.py at v0.5.4",
        ))
    below_ampere = gpus_below(gpus, AMPERE)
    if architecture in SOFT_CAPPING_ARCHITECTURES and registered is not None and below_ampere:
        refusals.append(Refusal(
            "vllm_model_architecture", architecture,
            "cannot run on %s with vLLM %s: below compute capability 8.0 it uses the xformers attention backend, "
            "which refuses the model's attention logit soft-capping" % (describe_gpu(below_ampere[0]), value),
            "Serve the model's GGUF with llama_server, or choose another model for vLLM",
            "vllm/attention/backends/xformers.py at v0.5.4",
        ))
    if architecture in QWEN3_ARCHITECTURES and version < FIRST_VLLM_WITH_QWEN3:
        volta_note = " (%s is the last for Volta)" % LAST_VLLM_FOR_VOLTA if old else ""
        refusals.append(Refusal(
            "vllm_version", value,
            "cannot load %s models: Qwen3 and Qwen3-MoE arrived in vLLM %s"
            % (architecture, format_version(FIRST_VLLM_WITH_QWEN3)),
            "Use %s or newer%s, or serve the model's GGUF with llama_server (llama.cpp at the pinned commit loads "
            "qwen3 and qwen3moe: src/llama-arch.cpp)" % (format_version(FIRST_VLLM_WITH_QWEN3), volta_note),
            SOURCE_VLLM_VERSIONS,
        ))
    refusals.extend(_check_vllm_python(value, version, request.python_version))
    return refusals


def _check_vllm_python(value: str, version: Version, python_text: str) -> List[Refusal]:
    """The target's Python must be one the release published wheels for (known rows only)."""
    python = parse_major_minor(python_text)
    row = next((row for row in VLLM_PYTHON_RANGES if row.first <= version < row.before), None)
    if python is None or row is None or row.oldest <= python <= row.newest:
        return []
    fitting = [candidate for candidate in VLLM_PYTHON_RANGES if candidate.oldest <= python <= candidate.newest]
    if fitting:
        best = fitting[-1]
        fix = "Use %s (wheels for Python %s-%s)" % (
            format_version(best.first), format_major_minor(best.oldest), format_major_minor(best.newest))
    else:
        fix = "Run vLLM %s from a Python %s-%s venv" % (
            value, format_major_minor(row.oldest), format_major_minor(row.newest))
    return [Refusal(
        "vllm_version", value,
        "has no wheels for Python %s (vLLM %s supports Python %s-%s)" % (
            format_major_minor(python), row.label, format_major_minor(row.oldest), format_major_minor(row.newest)),
        fix, row.source,
    )]


def check_vllm_quantization(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """A known method whose kernels the lowest GPU runs; gguf only from vLLM 0.5.5.

    Source: VOLTA_FACTS.md, vLLM ("Quantization minimum cc in 0.5.x"; vLLM's
    error: "The quantization method awq is not supported for the current GPU.
    Minimum capability: 75. Current capability: 70.").
    """
    method = request.vllm_quantization or ""
    if not method:
        return []
    minimum = VLLM_QUANTIZATION_MIN_CAPABILITY.get(method)
    if minimum is None:
        return [Refusal(
            "vllm_quantization", method,
            "is not a quantization method this toolkit knows for vLLM (known: %s)"
            % ", ".join(sorted(VLLM_QUANTIZATION_MIN_CAPABILITY)),
            'Use %s with a GPTQ checkpoint, or "" for an unquantized model' % FALLBACK_QUANTIZATION,
            SOURCE_VLLM_QUANTIZATION,
        )]
    refusals = []
    required = (minimum // 10, minimum % 10)
    old = gpus_below(gpus, required)
    if old:
        refusals.append(Refusal(
            "vllm_quantization", method,
            "is not supported on %s: vLLM's %s kernels need compute capability %s (\"Minimum capability: "
            "%d. Current capability: %s.\")" % (
                describe_gpu(old[0]), method, format_major_minor(required), minimum,
                "%d%d" % compute_capability(old[0])),
            _quantization_fix(gpus), SOURCE_VLLM_QUANTIZATION,
        ))
    version = parse_version(request.vllm_version)
    if method == "gguf" and version is not None and version < FIRST_VLLM_WITH_GGUF:
        first_gguf = format_version(FIRST_VLLM_WITH_GGUF)
        refusals.append(Refusal(
            "vllm_quantization", method,
            "needs vLLM %s or newer (vllm_version is %s)" % (first_gguf, request.vllm_version),
            "Use vllm_version=%s, or %s with a GPTQ checkpoint" % (first_gguf, FALLBACK_QUANTIZATION),
            SOURCE_VLLM_QUANTIZATION,
        ))
    return refusals


def _quantization_fix(gpus: Sequence[Gpu]) -> str:
    lowest = min_compute_capability(gpus)
    gptq_minimum = VLLM_QUANTIZATION_MIN_CAPABILITY[FALLBACK_QUANTIZATION]
    if lowest is None or lowest[0] * 10 + lowest[1] >= gptq_minimum:
        return "Use %s (minimum compute capability %d.%d) with a GPTQ checkpoint of the model" % (
            FALLBACK_QUANTIZATION, gptq_minimum // 10, gptq_minimum % 10)
    return 'Use "" (an unquantized model)'


def check_vllm_dtype(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """bfloat16 needs cc 8.0; `auto` on older GPUs only with a known fp16/fp32 checkpoint.

    Source: VOLTA_FACTS.md, vLLM (dtype: "Bfloat16 is only supported on GPUs
    with compute capability of at least 8.0"; a bf16 checkpoint under --dtype
    auto fails on V100; "Always pass --dtype half on cc < 8.0").
    """
    dtype = str(request.vllm_dtype or "")
    if dtype not in VLLM_DTYPES:
        return [Refusal("vllm_dtype", dtype, "is not a vLLM dtype (expected one of %s)" % ", ".join(VLLM_DTYPES),
                        "Use half", SOURCE_VLLM_DTYPE)]
    old = gpus_below(gpus, AMPERE)
    if not old:
        return []
    bf16_error = "\"Bfloat16 is only supported on GPUs with compute capability of at least 8.0\""
    if dtype == "bfloat16":
        return [Refusal("vllm_dtype", dtype, "cannot run on %s: %s" % (describe_gpu(old[0]), bf16_error),
                        "Use half", SOURCE_VLLM_DTYPE)]
    model_dtype = request.vllm_model_dtype or ""
    if dtype == "auto" and model_dtype not in DTYPES_SAFE_UNDER_AUTO:
        checkpoint = "the checkpoint is %s" % model_dtype if model_dtype else "the checkpoint's dtype is not known"
        return [Refusal(
            "vllm_dtype", dtype,
            "keeps the checkpoint's dtype and %s; a bfloat16 checkpoint fails on %s: %s"
            % (checkpoint, describe_gpu(old[0]), bf16_error),
            "Use half", SOURCE_VLLM_DTYPE,
        )]
    return []


def check_stack(request: StackRequest, gpus: Sequence[Gpu]) -> List[Refusal]:
    """Every rule, in the order a reader fixes them: system, GPU, driver, CUDA, llama.cpp, vLLM.

    The driver rules see every GPU (they pick the serving ones themselves); the rest see
    only the serving GPUs: nothing is built for or run on a display card.
    """
    request = replace(request, cuda_toolkit_version=resolve_cuda_toolkit(request))
    serving = serving_gpus(gpus)
    refusals = check_system(request)
    refusals += check_gpu_present(request, gpus)
    refusals += check_driver_branch(request, gpus)
    refusals += check_driver_flavor(request, serving)
    refusals += check_cuda_toolkit_source(request) or check_cuda_toolkit(request, serving)
    refusals += check_llama_cpp_architectures(request, serving)
    if request.vllm_enabled:
        refusals += check_vllm_version(request, serving)
        refusals += check_vllm_quantization(request, serving)
        refusals += check_vllm_dtype(request, serving)
    return refusals


# ---------------------------------------------------------------------------
# Warnings: allowed, but the user should know (each names its source)
# ---------------------------------------------------------------------------


def minor_compatibility_warnings(request: StackRequest) -> List[str]:
    """A 12.x toolkit newer than the CUDA the branch ships runs through minor version compatibility."""
    toolkit = parse_major_minor(resolve_cuda_toolkit(request))
    branch = _parse_branch(request.nvidia_driver_branch)
    shipped = DRIVER_BRANCH_MAX_CUDA.get(branch) if branch is not None else None
    if toolkit is None or shipped is None or toolkit <= shipped or toolkit[0] != shipped[0]:
        return []
    return ["cuda_toolkit_version=%s is newer than CUDA %s, which the %d driver branch ships: it runs through "
            "CUDA minor version compatibility (any %d.x on a driver >= %d). Its limits: PTX newer than the driver "
            "cannot be JIT-compiled, so builds must carry machine code for the GPU (llama.cpp's \"70\" does), "
            "and a few newer APIs return cudaErrorCallRequiresNewerDriver. For none of these limits use "
            "cuda_toolkit_version=%s or a newer branch. [source: %s]"
            % (format_major_minor(toolkit), format_major_minor(shipped), branch, toolkit[0],
               FIRST_BRANCH_FOR_CUDA_MAJOR[toolkit[0]], format_major_minor(shipped), SOURCE_CUDA_DRIVER)]


def host_compiler_warnings(request: StackRequest) -> List[str]:
    """nvcc refuses a host GCC newer than its release supports; the distribution's default may be one."""
    toolkit = parse_major_minor(resolve_cuda_toolkit(request))
    repo = repo_name(request.distribution, request.distribution_version)
    gcc = DISTRIBUTION_GCC.get(repo) if repo else None
    # The distribution's nvcc brings the g++ it accepts (releases.DistributionToolkit); a repository
    # without CUDA 12 is refused (check_cuda_toolkit_source).
    if (toolkit is None or request.cuda_toolkit_source == "distro" or not carried_toolkits(repo or "")
            or accepts_gcc(toolkit, gcc)):
        return []
    return ["cuda_toolkit_version=%s: its nvcc accepts GCC %d at most, and %s's default GCC is %d (nvcc refuses "
            "it: \"unsupported GNU version!\"), so llama_cpp installs the newest older g++ apt has and builds "
            "with it as CUDA host compiler (CMAKE_CUDA_HOST_COMPILER); it refuses the build where apt has none. "
            "[source: %s]" % (format_major_minor(toolkit), NVCC_MAX_GCC[toolkit], repo, gcc, SOURCE_HOST_GCC)]


def branch_lifecycle_warnings(request: StackRequest, gpus: Sequence[Gpu], today: str) -> List[str]:
    """A branch past its end of life, or gone from NVIDIA's support table, gets no security fixes.

    `today` is "YYYY-MM" or a longer ISO date; an end of life "2026-06" covers all of June.
    """
    branch = _parse_branch(request.nvidia_driver_branch)
    if branch in UNSUPPORTED_BRANCHES:
        status = "(%s) is no longer in NVIDIA's table of supported data-center branches" % UNSUPPORTED_BRANCHES[branch]
    elif branch in DRIVER_BRANCH_LIFECYCLE and str(today)[:7] > DRIVER_BRANCH_LIFECYCLE[branch][1]:
        status = "(%s) reached its end of life in %s" % DRIVER_BRANCH_LIFECYCLE[branch]
    else:
        return []
    if gpus_below(gpus, TURING) or not gpus:
        kind, end = DRIVER_BRANCH_LIFECYCLE[MAINTAINED_VOLTA_BRANCH]
        advice = ("use nvidia_driver_branch=%d, the long-term branch that still drives Volta (%s, supported to %s)"
                  % (MAINTAINED_VOLTA_BRANCH, kind, end))
        system = system_name(request.distribution, request.distribution_version)
        if system in REPOS_WITHOUT_VOLTA_DRIVERS:
            advice = ("no source has a maintained Volta branch for %s (NVIDIA's repository carries 590 and newer "
                      "there, Debian 550): for security fixes run Debian 12 or Ubuntu with nvidia_driver_branch=%d"
                      % (system_label(request.distribution, request.distribution_version), MAINTAINED_VOLTA_BRANCH))
        elif request.distribution == "Debian":
            advice += " from NVIDIA's repository (nvidia_driver_source=cuda_repo: Debian 12 packages only 535)"
    else:
        advice = "use a branch NVIDIA still supports"
    return ["nvidia_driver_branch=%d %s and gets no security fixes: %s. [source: %s]"
            % (branch, status, advice, SOURCE_LIFECYCLE)]


def gpu_label(gpu: Gpu) -> str:
    """"GPU 0 (GeForce GT 710, 0000:04:00.0)": which card, and where to find it."""
    return "GPU %s (%s, %s)" % (gpu.get("index", "?"), gpu.get("name") or gpu.get("pci_device_id") or "unknown",
                                gpu.get("pci_bus_id") or "bus id unknown")


def display_gpu_warnings(request: StackRequest, gpus: Sequence[Gpu]) -> List[str]:
    """A display card kept out of serving that the chosen branch or flavour does not drive,
    or whose architecture is unknown: the run goes on, the card gets no NVIDIA driver.

    Sources: VOLTA_FACTS.md, GPUs outside the catalogue (470 the last branch for Kepler,
    390 for Fermi, 340 for Tesla, 580 for Maxwell to Volta) and Driver branches (the open
    kernel modules need GSP, Turing and newer).
    """
    branch = _parse_branch(request.nvidia_driver_branch)
    if branch is None:
        return []
    warnings = []
    for gpu in gpus:
        if gpu.get("serving", True):
            continue
        capability = gpu.get("compute_capability")
        last = _last_branch_before(gpu, branch)
        if compute_capability(gpu) is None:
            reason = ("its architecture is unknown (PCI id %s), so whether nvidia_driver_branch=%d drives it "
                      "cannot be checked" % (gpu.get("pci_device_id") or "unknown", branch))
        elif last is not None:
            reason = ("nvidia_driver_branch=%d does not drive it: NVIDIA's last branch for %s GPUs is %d"
                      % (branch, architecture(capability), last))
        elif request.nvidia_driver_flavor == "open" and gpus_below([gpu], TURING):
            reason = ("nvidia_driver_flavor=open does not drive it: the open kernel modules need the GPU System "
                      "Processor (GSP) of Turing and newer, and it is %s" % architecture(capability))
        else:
            continue
        warnings.append(
            "%s is a display card, left out of the serving GPUs and the CUDA build; %s. Serving is not "
            "affected; the card gets no driver at all (nouveau is blacklisted for the NVIDIA driver), so it "
            "shows the firmware console at most. For a desktop on that screen use a display card the branch "
            "drives, or the board's own graphics. [source: %s]" % (gpu_label(gpu), reason, SOURCE_DRIVER_SUPPORT))
    return warnings


def stack_warnings(request: StackRequest, gpus: Sequence[Gpu], today: str) -> List[str]:
    """Every warning about the requested stack (host readiness warnings live in host/readiness.py)."""
    return (branch_lifecycle_warnings(request, serving_gpus(gpus), today) + minor_compatibility_warnings(request)
            + host_compiler_warnings(request) + display_gpu_warnings(request, gpus))
