"""The planner's KV cache against what a real llama-server allocated.

tests/fixtures/llama_cpp/kv-cache_smollm2-135m-q4_1_llama-server_0c1e570_cpu.txt
holds the log lines of llama-server (llama.cpp 0c1e57098, built here from the
llama-cpp-python 0.3.36 sdist, CPU backend) loading the real
SmolLM2-135M-Instruct.Q4_1.gguf with the flags in each `###` header. For every
run, the flags go through llama_server_kv_cells and kv_cache_bytes, and the
result must equal the `llama_kv_cache: size = ... MiB` llama-server printed.
"""
from __future__ import annotations

import re

import pytest

from ansible.module_utils.gguf_metadata import read_gguf_metadata
from ansible.module_utils.memory_plan import MIB, kv_cache_bytes, llama_server_kv_cells, shape_from_gguf
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
    assert len(runs) == 12
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
