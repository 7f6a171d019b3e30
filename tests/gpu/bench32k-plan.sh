# Sourced by tests/gpu/ide-bench.sh and tests/gpu/benchmark.sh (with $out set), on the lent GPU machine after
# `tests/gpu/llama-bench.sh ARCHIVE OUTDIR --build-only`: the tools from .whl, the 8B-shaped bench model with a
# trained context of 32768 (/tmp/bench32k-q4_k_m.gguf; a second run keeps it), and one llama-server instance
# planned through the roles, every slot setting at its default ($out/llama-server-plan.json, /tmp/ide-plan.json;
# its variables in /tmp/ide-vars.yml). Sets bin and model.
# shellcheck shell=bash
: "${out:?set out, the output folder, before sourcing this file}"
bin=/opt/llama.cpp/current/bin
model=/tmp/bench32k-q4_k_m.gguf
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
# This repository as v100.llm (collections/), and the collections carried here.
export ANSIBLE_COLLECTIONS_PATH=$PWD/collections:$PWD/.devcarry

# The model: same weights as /tmp/bench-q4_k_m.gguf, trained context 32768.
if [ -s "$model" ]; then
  echo "$model is there: not written again"
else
  start=$(date +%s)
  python3 tests/gpu/make_bench_model.py /tmp/llama-src /tmp/bench32k-f16.gguf 32768 || exit 1
  echo "model written in $(( $(date +%s) - start ))s"; start=$(date +%s)
  "$bin/llama-quantize" /tmp/bench32k-f16.gguf "$model.part" Q4_K_M "$(nproc)" > "$out/quantize-32k.log" 2>&1
  rc=$?; echo "quantize rc=$rc in $(( $(date +%s) - start ))s"
  [ "$rc" = 0 ] || exit 1
  mv "$model.part" "$model"
  rm -f /tmp/bench32k-f16.gguf  # 14 GB of the disk, not needed again
fi

# The plan through the roles, as tests/gpu/slots-bench.sh makes it.
cat > /tmp/ide-vars.yml <<VARS
models_list:
  - {name: bench32k-q4_k_m, controller_file: $model}
llama_server_instances:
  - {name: bench, model: bench32k-q4_k_m, port: 8081, gpus: [0]}
VARS
rm -f "$out/llama-server-plan.json"
start=$(date +%s)
ansible-playbook -i localhost, -c local tests/gpu/llama-server.yml --skip-tags llama_cpp_packages \
  -e @/tmp/ide-vars.yml -e llama_cpp_source_file="$PWD/.devcarry/llama.cpp-0c1e570.tar.gz" -e ansible_become=false \
  -e ansible_python_interpreter="$(command -v python3)" -e gpu_out="$out" > "$out/ide-roles.log" 2>&1
echo "roles rc=$? in $(( $(date +%s) - start ))s"; grep -E "ok=|slots x" "$out/ide-roles.log" | tail -4
[ -s "$out/llama-server-plan.json" ] || { tail -20 "$out/ide-roles.log"; exit 1; }
cp "$out/llama-server-plan.json" /tmp/ide-plan.json  # for a later run of one ide_bench.py setting

