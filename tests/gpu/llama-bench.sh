#!/usr/bin/env bash
# Run on the lent GPU machine (no network): build llama.cpp through the
# llama_cpp role (-c local; the build tools are there, so the apt step is
# skipped), write an 8B-shaped random model, quantize it with the built
# llama-quantize, and run llama-bench with the flags the servers use
# (all layers on GPU, flash attention on). The models and llama_server roles
# run in tests/gpu/llama-server.sh.
# Usage: tests/gpu/llama-bench.sh SOURCE_TARBALL OUTDIR [--no-bench | --build-only]
# (--no-bench: build and write the models only, for the scripts that follow; --build-only: the build and
# the source in /tmp/llama-src, for tests/gpu/bench32k-plan.sh, which writes its own model.)
set -uo pipefail
tarball=$(realpath "${1:?llama.cpp source archive}"); out=${2:?output folder}; bench=${3:-}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
# Collections the playbooks name (community.general), carried as .devcarry/ansible_collections.
# This repository as v100.llm (collections/), and the collections carried here.
export ANSIBLE_COLLECTIONS_PATH=$PWD/collections:$PWD/.devcarry
start=$(date +%s)
ansible-playbook -i localhost, -c local playbooks/llama_cpp.yml --skip-tags llama_cpp_packages,models,llama_server \
  -e llama_cpp_source_file="$tarball" -e ansible_become=false \
  -e ansible_python_interpreter="$(command -v python3)" > "$out/llama_cpp-role.log" 2>&1
echo "role rc=$? in $(( $(date +%s) - start ))s"; tail -4 "$out/llama_cpp-role.log"
bin=/opt/llama.cpp/current/bin
"$bin/llama-server" --version 2>&1 | tee "$out/llama-server-version.txt"
"$bin/llama-server" --list-devices 2>&1 | tee "$out/llama-server-list-devices.txt"
cp /opt/llama.cpp/current/build-stamp.json "$out/" 2>/dev/null
src=/tmp/llama-src; mkdir -p $src && tar -xzf "$tarball" -C $src --strip-components=1
[ "$bench" = --build-only ] && exit 0
start=$(date +%s)
python3 tests/gpu/make_bench_model.py $src /tmp/bench-f16.gguf && echo "model written in $(( $(date +%s) - start ))s"
start=$(date +%s)
"$bin/llama-quantize" /tmp/bench-f16.gguf /tmp/bench-q4_k_m.gguf Q4_K_M "$(nproc)" > "$out/quantize.log" 2>&1
echo "quantize rc=$? in $(( $(date +%s) - start ))s"; ls -la /tmp/bench-*.gguf
[ "$bench" = --no-bench ] && exit 0
"$bin/llama-bench" -m /tmp/bench-q4_k_m.gguf -m /tmp/bench-f16.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o json \
  > "$out/llama-bench.json" 2> "$out/llama-bench.err"
echo "bench rc=$?"
python3 - "$out/llama-bench.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"{r['model_type']:<28} {r['model_size']/2**30:6.2f} GiB  pp{r['n_prompt']:<4} tg{r['n_gen']:<4} "
          f"fa={r['flash_attn']} {r['avg_ts']:8.1f} ± {r['stddev_ts']:.1f} t/s  {r['gpu_info']}")
PY
