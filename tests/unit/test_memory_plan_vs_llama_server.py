"""The planner's KV cache against what a real llama-server allocated.

tests/fixtures/llama_cpp/kv-cache_smollm2-135m-q4_1_llama-server_0c1e570_cpu.txt
holds the log lines of llama-server (llama.cpp 0c1e57098, built here from the
llama-cpp-python 0.3.36 sdist, CPU backend) loading the real
SmolLM2-135M-Instruct.Q4_1.gguf with the flags in each `###` header. For every
run, the flags go through llama_server_kv_cells and kv_cache_bytes, and the
result must equal the `llama_kv_cache: size = ... MiB` llama-server printed.
"""
from __future__ import annotations

import math
import re

import pytest

from ansible_collections.v100.llm.plugins.module_utils.models.gguf import read_gguf_metadata
from ansible_collections.v100.llm.plugins.module_utils.memory.plan import (
    MIB,
    KvLayout,
    estimate_compute_buffer_mib,
    kv_cache_bytes,
    kv_layout,
    llama_server_kv_cells,
    plan_memory,
    shape_from_gguf,
)
from conftest import FIXTURES

RUNS_FILE = FIXTURES / "llama_cpp" / "kv-cache_smollm2-135m-q4_1_llama-server_0c1e570_cpu.txt"
SMOLLM2 = FIXTURES / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix"
KV_SIZE = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
                     r"K \((\w+)\): +[\d.]+ MiB, V \((\w+)\)")


def _flag(args: list[str], *names: str, default: str | None = None) -> str | None:
    for name in names:
        if name in args:
            return args[args.index(name) + 1]
    return default


def _runs() -> list[tuple[str, re.Match]]:
    runs = []
    for block in RUNS_FILE.read_text().split("### llama-server ")[1:]:
        flags, _, log = block.partition("\n")
        runs.append((flags, KV_SIZE.search(log)))
    return runs


def test_every_recorded_run_printed_its_kv_cache():
    runs = _runs()
    assert len(runs) == 16
    assert all(match for _, match in runs)


@pytest.mark.parametrize("flags, printed", _runs(), ids=[flags for flags, _ in _runs()])
def test_planner_matches_llama_server(flags, printed):
    shape = shape_from_gguf(read_gguf_metadata(SMOLLM2, max_array_items=0))
    args = flags.split()
    parallel = _flag(args, "-np")
    # llama-server: no -np means "auto" slots with a unified cache.
    unified = "-kvu" in args or parallel is None
    cells, streams = llama_server_kv_cells(int(_flag(args, "-c", default="0")), int(parallel or 1), unified,
                                           shape.context_length)
    k_type = _flag(args, "--cache-type-k", default="f16")
    v_type = _flag(args, "--cache-type-v", default="f16")
    planned = sum(kv_cache_bytes(shape.layers, shape.kv_heads, shape.head_dim, cells, streams, cache_type) / 2
                  for cache_type in (k_type, v_type))

    size_mib, printed_cells, layers, _, printed_streams, printed_k, printed_v = printed.groups()
    assert (int(printed_cells), int(printed_streams), int(layers)) == (cells, streams, shape.layers)
    assert (printed_k, printed_v) == (k_type, v_type)
    assert round(planned / MIB, 2) == float(size_mib)


COMPUTE = re.compile(r"CPU compute buffer size = +([\d.]+) MiB")


@pytest.mark.parametrize("flags", [flags for flags, _ in _runs() if "-fa off" in flags])
def test_without_flash_attention_the_compute_buffer_follows_one_kv_stream(flags):
    """-fa off: the KQ scores span one stream's cells (a slot's, or a unified cache's whole pool).

    The estimate's other term, the logits of a whole micro-batch, is what
    llama-completion reserves; llama-server reserves one output per sequence,
    so where the logits term is the larger (short contexts) the estimate is
    high, never low."""
    shape = shape_from_gguf(read_gguf_metadata(SMOLLM2, max_array_items=0))
    args = flags.split()
    block = RUNS_FILE.read_text().split("### llama-server " + flags + "\n")[1].split("###")[0]
    cells, _ = llama_server_kv_cells(int(_flag(args, "-c")), int(_flag(args, "-np")), "-kvu" in args,
                                     shape.context_length)
    printed = float(COMPUTE.search(block).group(1))
    estimate = estimate_compute_buffer_mib(shape, cells, flash_attention=False)
    assert estimate >= printed
    if cells >= 8192:  # the KQ scores outweigh the logits
        assert estimate == pytest.approx(printed, rel=0.05)


# A sliding-window model: a tiny gemma3 (tests/fixtures/llama_cpp/make_swa_model.py: 12 layers, 2 KV heads of 64,
# window 128, trained context 32768), recorded by tests/fixtures/llama_cpp/record-kv-cache. llama-server prints
# two caches, the non-SWA one first.
SWA_RUNS_FILE = FIXTURES / "llama_cpp" / "kv-cache-swa_tiny-gemma3_llama-server_0c1e570_cpu.txt"
SWA_LAYOUT = kv_layout("gemma3", 12, 2, None, 128, None)


def _swa_runs() -> list[tuple[str, list[re.Match]]]:
    blocks = SWA_RUNS_FILE.read_text().split("### llama-server ")[1:]
    return [(flags, list(KV_SIZE.finditer(log))) for flags, _, log in (block.partition("\n") for block in blocks)]


def test_every_swa_run_printed_both_caches():
    runs = _swa_runs()
    assert len(runs) == 8 and all(len(caches) == 2 for _, caches in runs)
    assert SWA_LAYOUT == KvLayout(full_heads=2 * 2, swa_heads=10 * 2, sliding_window=128)


@pytest.mark.parametrize("flags, caches", _swa_runs(), ids=[flags for flags, _ in _swa_runs()])
def test_planner_matches_llama_server_with_a_sliding_window(flags, caches):
    args = flags.split()
    unified = "-kvu" in args
    parallel = int(_flag(args, "-np"))
    cells, streams = llama_server_kv_cells(int(_flag(args, "-c")), parallel, unified, 32768)
    ubatch = min(int(_flag(args, "-ub", default="512")), int(_flag(args, "-b", default="2048")))
    plan = plan_memory("tiny-gemma3", layers=12, kv_heads=2, head_dim=64, weights_bytes=0, context_per_slot=cells,
                       slots=streams, gpu_memory_mib=1024, kv_cache_type=_flag(args, "--cache-type-k", default="f16"),
                       layout=SWA_LAYOUT, ubatch=ubatch, sequences_per_stream=parallel if unified else 1,
                       swa_full="--swa-full" in args)
    full, swa = (match.groups() for match in caches)
    assert (int(full[1]), int(full[2]), int(full[4])) == (cells, 2, streams)
    assert (int(swa[1]), int(swa[2]), int(swa[4])) == (plan.swa_cells, 10, streams)
    assert plan.kv_cache_mib == math.ceil(float(full[0]) + float(swa[0]))
