#!/usr/bin/env bash
# Run on the lent GPU machine after tests/gpu/llama-bench.sh (which built
# llama.cpp through the role and wrote /tmp/bench-q4_k_m.gguf): plans one
# instance through the roles with the role's default slot settings (ctx_size
# and parallel auto, sized on the real GPU), then runs tests/gpu/slots_bench.py:
# the planned command line and hand-tuned slot settings under 1, 4, 16 and 32
# concurrent streams.
# Usage: tests/gpu/slots-bench.sh OUTDIR
set -uo pipefail
out=${1:?output folder}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
cat > /tmp/slots-vars.yml <<VARS
models_list:
  - {name: bench-8b-q4_k_m, controller_file: /tmp/bench-q4_k_m.gguf}
llama_server_instances:
  - {name: bench, model: bench-8b-q4_k_m, port: 8081, gpus: [0]}
VARS
start=$(date +%s)
ansible-playbook -i localhost, -c local tests/gpu/llama-server.yml --skip-tags llama_cpp_packages \
  -e @/tmp/slots-vars.yml -e llama_cpp_source_file="$PWD/.devcarry/llama.cpp-0c1e570.tar.gz" -e ansible_become=false \
  -e ansible_python_interpreter="$(command -v python3)" -e gpu_out="$out" > "$out/slots-roles.log" 2>&1
echo "roles rc=$? in $(( $(date +%s) - start ))s"; grep -E "ok=|slots x" "$out/slots-roles.log" | tail -4
export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1
python3 tests/gpu/slots_bench.py "$out/llama-server-plan.json" "$out" 2>&1 | tee "$out/slots-bench.txt"
