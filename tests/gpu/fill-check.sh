#!/usr/bin/env bash
# Run on the lent GPU machine after tests/gpu/llama-bench.sh: does a slot plan
# packed to a V100's memory fit what CUDA really allocates? Sizes the Q4_K_M
# bench model with gpu_memory_plan as the llama_server role does
# (choose_slots; up to 64 slots so that the plan fills its budget), with
# gpu_memory_mib 32768 in place of the H200's memory, then
# tests/gpu/fill_check.py starts llama-server with the chosen -c/-np and fills
# every slot with a long prompt at once, and compares nvidia-smi's peak with
# the plan.
# Usage: tests/gpu/fill-check.sh OUTDIR
set -uo pipefail
out=${1:?output folder}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
export ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_STDOUT_CALLBACK=minimal ANSIBLE_CALLBACK_RESULT_FORMAT=json
plans='[{"name": "fill", "gguf_path": "/tmp/bench-q4_k_m.gguf", "gpu_memory_mib": 32768,
         "choose_slots": {"slots_max": 64}}]'
ansible localhost -i localhost, -c local -e ansible_python_interpreter="$(command -v python3)" \
  -m v100.llm.gpu_memory_plan -a "{\"memory_plans\": $plans}" > "$out/fill-plan.json" || { cat "$out/fill-plan.json"; exit 1; }
export CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1
python3 tests/gpu/fill_check.py "$out/fill-plan.json" /opt/llama.cpp/current/bin/llama-server "$out" 2>&1 \
  | tee "$out/fill-check.txt"
