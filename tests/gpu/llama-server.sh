#!/usr/bin/env bash
# Run on the lent GPU machine after tests/gpu/llama-bench.sh (which built
# llama.cpp through the role and wrote /tmp/bench-q4_k_m.gguf). No systemd
# there: tests/gpu/llama-server.yml runs the llama_cpp, models and
# llama_server roles' real steps up to the plan, then this script starts the
# planned llama-server command line in the foreground, as its unit would,
# asks it for a chat completion with and without the key, and runs llama-bench
# with the same GPU flags.
# Usage: tests/gpu/llama-server.sh OUTDIR
set -uo pipefail
out=${1:?output folder}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
# This repository as v100.llm (collections/), and the collections carried here.
export ANSIBLE_COLLECTIONS_PATH=$PWD/collections:$PWD/.devcarry
key=gpu-test-key-not-a-secret
cat > /tmp/gpu-vars.yml <<VARS
models_list:
  - {name: bench-8b-q4_k_m, controller_file: /tmp/bench-q4_k_m.gguf}
llama_server_api_key: $key
# Two slots of 4096 tokens: short test prompts, not the IDE default.
llama_server_prompt_tokens_max: 3000
llama_server_answer_tokens_max: 1024
llama_server_instances:
  - {name: bench, model: bench-8b-q4_k_m, port: 8081, gpus: [0], ctx_size: 8192, parallel: 2}
VARS
start=$(date +%s)
roles() { ansible-playbook -i localhost, -c local tests/gpu/llama-server.yml --skip-tags llama_cpp_packages \
  -e @/tmp/gpu-vars.yml -e llama_cpp_source_file="$PWD/.devcarry/llama.cpp-0c1e570.tar.gz" -e ansible_become=false \
  -e ansible_python_interpreter="$(command -v python3)" "$@"; }
roles -e gpu_out="$out" > "$out/llama-server-roles.log" 2>&1
echo "roles rc=$? in $(( $(date +%s) - start ))s"; grep -E "ok=|fits|Memory plan|changed:" "$out/llama-server-roles.log" | tail -8
start=$(date +%s)
roles -e gpu_out=/tmp > "$out/llama-server-roles-2.log" 2>&1
echo "second run rc=$? in $(( $(date +%s) - start ))s: $(grep -E 'ok=' "$out/llama-server-roles-2.log")"
mapfile -t argv < <(python3 -c 'import json,sys; [print(a) for a in json.load(open(sys.argv[1]))["instances"][0]["argv"]]' "$out/llama-server-plan.json")
echo "planned: ${argv[*]}"
mkdir -p /etc/llama-server && printf '%s\n' "$key" > /etc/llama-server/bench.key && chmod 0400 /etc/llama-server/bench.key
export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0
"${argv[@]}" > "$out/llama-server.log" 2>&1 &
server=$!
python3 roles/server_systemd/files/service-health wait http://127.0.0.1:8081/health --timeout 180
python3 - "$key" <<'PY'
import json, sys, urllib.error, urllib.request
def ask(path, key=None, body=None):
    request = urllib.request.Request("http://127.0.0.1:8081" + path, data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json", **({"Authorization": "Bearer " + key} if key else {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
chat = {"max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]}
status, text = ask("/v1/chat/completions", sys.argv[1], chat)
answer = json.loads(text)
print("chat with key:", status, answer["model"], answer["usage"], "%.1f tok/s" % answer["timings"]["predicted_per_second"])
print("chat without key:", ask("/v1/chat/completions", None, chat)[0])
status, text = ask("/metrics", sys.argv[1])
print("metrics with key:", status, len([l for l in text.splitlines() if l.startswith("llamacpp:")]), "series")
PY
kill "$server"; wait "$server"
grep -E "CUDA0 (model|KV|compute) buffer size|llama_kv_cache: .*size|flash_attn|n_ctx_seq|CUDA0.*total" "$out/llama-server.log" | head -12
bin=$(dirname "${argv[0]}")
"$bin/llama-bench" -m /srv/models/bench-q4_k_m.gguf -ngl 999 -fa 1 -ctk f16 -ctv f16 -p 512 -n 128 -r 3 -o json \
  > "$out/llama-bench-planned-flags.json" 2> "$out/llama-bench-planned-flags.err"
python3 - "$out/llama-bench-planned-flags.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"{r['model_type']:<28} pp{r['n_prompt']} tg{r['n_gen']} fa={r['flash_attn']} ngl={r['n_gpu_layers']} "
          f"{r['avg_ts']:8.1f} ± {r['stddev_ts']:.1f} t/s")
PY
