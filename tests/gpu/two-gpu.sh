#!/usr/bin/env bash
# Run on the lent two-GPU machine (nvidia-h200-x2, no network), after
# tests/gpu/prepare here (issue 13, docs/BENCHMARKS.md "Two GPUs"):
#  1. the GPUs and how they are linked (nvidia-smi topo -m);
#  2. NCCL as packages (NVIDIA's own where installed, else tests/gpu/nccl-debs
#     makes them from the machine's NCCL wheel), then llama.cpp built through the llama_cpp
#     role with llama_cpp_nccl at its default (auto: two serving GPUs and a
#     libnccl-dev built for the toolkit's CUDA), and the 8B-shaped F16 and
#     Q4_K_M bench models (tests/gpu/llama-bench.sh --no-bench);
#  3. llama-bench pp512/tg128 of both models with -sm none (one GPU), layer
#     and tensor;
#  4. the roles' plan of four instances, both models in both split modes on
#     gpus [0, 1] (tests/gpu/llama-server.yml), and each planned command line
#     served under 1, 4, 16 and 32 streams (tests/gpu/slots_bench.py --planned);
#  5. the refusals: the role's plan of tensor with a q8_0 K cache beside an
#     f16 V cache and of tensor without flash attention; then llama-server
#     itself in layer and tensor mode with each KV cache setting, its greedy
#     tokens compared (tests/gpu/split_tokens.py).
# NVLink multicast stays off (../.library/device/KINDS.md). The units cannot
# run there (no systemd); the planned command lines run in the foreground.
# Usage: tests/gpu/two-gpu.sh OUTDIR
set -uo pipefail
out=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0 PYTHONUNBUFFERED=1
tarball=$PWD/.devcarry/llama.cpp-0c1e570.tar.gz
begun=$(date +%s)
step() { echo; echo "== $* (at $(( $(date +%s) - begun )) s)"; }

step GPUs
nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv | tee "$out/gpus.csv"
nvidia-smi topo -m | tee "$out/topo.txt"

step NCCL packages
tests/gpu/nccl-debs "$out" || exit 1

step llama.cpp through the role, and the bench models
ANSIBLE_VERBOSITY=1 tests/gpu/llama-bench.sh "$tarball" "$out" --no-bench
bin=/opt/llama.cpp/current/bin
grep -o -m1 -- "-- Found NCCL: [^\\\"]*" "$out/llama_cpp-role.log" || echo "NCCL: no 'Found NCCL' in the role's log"
cat /opt/llama.cpp/current/build-stamp.json; echo
ldd "$bin/llama-server" | grep -E "nccl|cudart|cublas"
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH

step "llama-bench: -sm none (GPU 0 alone), layer, tensor"
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,1 "$bin/llama-bench" -m /tmp/bench-q4_k_m.gguf -m /tmp/bench-f16.gguf \
  -ngl 99 -fa 1 -sm none,layer,tensor -p 512 -n 128 -r 3 -o json > "$out/split-llama-bench.json" 2> "$out/split-llama-bench.err"
echo "llama-bench rc=$?"; grep -i -m3 "nccl\|error" "$out/split-llama-bench.err"
python3 - "$out/split-llama-bench.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    test = "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]
    print(f"{r['model_type']:<28} {r['model_size']/2**30:6.2f} GiB  sm={r['split_mode']:<7} {test:<6} "
          f"{r['avg_ts']:9.1f} ± {r['stddev_ts']:.1f} t/s  {r['gpu_info']}")
PY

step "the roles' plan: both models, layer and tensor, gpus [0, 1]"
cat > /tmp/split-vars.yml <<'VARS'
models_list:
  - {name: bench-8b-q4_k_m, controller_file: /tmp/bench-q4_k_m.gguf}
  - {name: bench-8b-f16, controller_file: /tmp/bench-f16.gguf}
llama_server_instances:
  - {name: q4-layer, model: bench-8b-q4_k_m, port: 8081, gpus: [0, 1], split_mode: layer}
  - {name: q4-tensor, model: bench-8b-q4_k_m, port: 8082, gpus: [0, 1], split_mode: tensor}
  - {name: f16-layer, model: bench-8b-f16, port: 8083, gpus: [0, 1], split_mode: layer}
  - {name: f16-tensor, model: bench-8b-f16, port: 8084, gpus: [0, 1], split_mode: tensor}
VARS
roles() { ansible-playbook -i localhost, -c local tests/gpu/llama-server.yml --skip-tags llama_cpp_packages \
  -e llama_cpp_source_file="$tarball" -e ansible_become=false -e ansible_python_interpreter="$(command -v python3)" "$@"; }
roles -e @/tmp/split-vars.yml -e gpu_out="$out" > "$out/split-roles.log" 2>&1
echo "roles rc=$?"; grep -E "ok=|fits|slots x" "$out/split-roles.log" | tail -8

step "each planned command line under 1, 4, 16 and 32 streams"
python3 tests/gpu/slots_bench.py --planned "$out/llama-server-plan.json" "$out" 2>&1 | tee "$out/split-bench.txt"

step "refusals: the role"
cat > /tmp/refused-vars.yml <<'VARS'
models_list:
  - {name: bench-8b-q4_k_m, controller_file: /tmp/bench-q4_k_m.gguf}
llama_server_instances:
  - {name: tensor-k8-vf16, model: bench-8b-q4_k_m, port: 8081, gpus: [0, 1], split_mode: tensor, cache_type_k: q8_0}
  - {name: tensor-nofa, model: bench-8b-q4_k_m, port: 8082, gpus: [0, 1], split_mode: tensor, flash_attention: false}
VARS
roles -e @/tmp/refused-vars.yml -e gpu_out=/tmp > "$out/refused-roles.log" 2>&1
echo "roles rc=$? (a refusal is rc 2)"; grep -o "split_mode=tensor[^\"]*" "$out/refused-roles.log" | sort -u

step "llama-server itself: KV cache settings in layer and tensor mode, greedy tokens compared"
python3 tests/gpu/split_tokens.py "$bin/llama-server" /tmp/bench-q4_k_m.gguf "$out" 2>&1 | tee "$out/split-tokens.txt"
step "done"
