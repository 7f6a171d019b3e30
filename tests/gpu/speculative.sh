#!/usr/bin/env bash
# Issue 38's GPU run: plain decoding against speculative types, on the role-planned llama-server with a real model,
# on the lent GPU machine, after `tests/gpu/llama-bench.sh ARCHIVE OUTDIR --build-only` (the llama_cpp role's build).
# The bench models' weights are random, so their drafts mean nothing: this run serves the demo's real
# SmolLM2-135M-Instruct Q4_1, carried in byte parts (.devcarry/smollm2.gguf.part-*, cut with split -b: a call
# carries at most 64 MiB) and checked against its sha256.
#  a. plans one instance through the roles (tests/gpu/llama-server.yml), slots sized for 6144-token prompts and
#     2048-token answers (the model's trained context is 8192);
#  b. per type (off, then each of TYPES), starts llama-server on the plan's engine.server_argv plus --spec-type, as
#     the benchmark role's runtime drop-in does (there is no systemd here), and runs playbooks/benchmark.yml's edit
#     workload at 1, 4 and 16 streams, 256 tokens a request, into OUTDIR/<type>/. Type `planned` adds the plan's
#     engine.speculative_argv instead: llama_server_speculative is {draft: smollm2}, the model drafting for itself
#     (the mechanics of a draft model on CUDA, not a real draft's gain), and its memory plan's draft terms are
#     printed beside the CUDA buffers llama-server logs;
#  c. prints each type's drafts kept, tokens/s per stream and summed, and the ratio against plain decoding.
# Usage: tests/gpu/speculative.sh OUTDIR [TYPES...]   (TYPES: ngram-mod ngram-simple ngram-map-k4v by default)
set -uo pipefail
out=${1:?output folder}
shift
types=("${@:-ngram-mod ngram-simple ngram-map-k4v}")
read -r -a types <<< "${types[*]}"
begin=$(date +%s)
model=/tmp/smollm2.gguf
cat .devcarry/smollm2.gguf.part-* > "$model"
echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $model" | sha256sum -c || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
export ANSIBLE_COLLECTIONS_PATH=$PWD/collections:$PWD/.devcarry

# a. The plan through the roles.
cat > /tmp/spec-vars.yml <<VARS
models_list:
  - {name: smollm2, controller_file: $model}
llama_server_prompt_tokens_max: 6144
llama_server_answer_tokens_max: 2048
llama_server_instances:
  - {name: bench, model: smollm2, port: 8081, gpus: [0]}
llama_server_speculative: {draft: smollm2}
VARS
ansible-playbook -i localhost, -c local tests/gpu/llama-server.yml --skip-tags llama_cpp_packages \
  -e @/tmp/spec-vars.yml -e llama_cpp_source_file="$PWD/.devcarry/llama.cpp-0c1e570.tar.gz" -e ansible_become=false \
  -e ansible_python_interpreter="$(command -v python3)" -e gpu_out="$out" > "$out/spec-roles.log" 2>&1
echo "roles rc=$?"; grep -E "ok=|slots x" "$out/spec-roles.log" | tail -3
[ -s "$out/llama-server-plan.json" ] || { tail -20 "$out/spec-roles.log"; exit 1; }
mapfile -t environment < <(python3 -c 'import json, sys
instance = json.load(open(sys.argv[1]))["instances"][0]
print("\n".join("%s=%s" % item for item in instance["environment"].items()))' "$out/llama-server-plan.json")

# b. Each type, on the planned command line.
for type in off "${types[@]}"; do
  mapfile -d '' argv < <(python3 -c 'import json, sys
engine = json.load(open(sys.argv[1]))["instances"][0]["endpoint"]["engine"]
argv = engine["server_argv"] + (engine["speculative_argv"] if sys.argv[2] == "planned"
                                else ["--spec-type", sys.argv[2]] if sys.argv[2] != "off" else [])
sys.stdout.write("".join(word + "\0" for word in argv))' "$out/llama-server-plan.json" "$type")
  env "${environment[@]}" "${argv[@]}" > "/tmp/spec-server-$type.log" 2>&1 &
  server=$!
  python3 tests/gpu/wait_health.py http://127.0.0.1:8081/health \
    || { tail -30 "/tmp/spec-server-$type.log"; kill $server; exit 1; }
  start=$(date +%s)
  ansible-playbook -i localhost, -c local playbooks/benchmark.yml --skip-tags benchmark_engine \
    -e @/tmp/spec-vars.yml -e ansible_become=false -e llama_cpp_source_file="$PWD/.devcarry/llama.cpp-0c1e570.tar.gz" \
    -e ansible_python_interpreter="$(command -v python3)" \
    -e "{\"benchmark_output_dir\": \"$out/$type\", \"benchmark_workloads\": [\"edit\"], \"benchmark_concurrency\": [1, 4, 16],
         \"benchmark_generated_tokens\": 256, \"benchmark_rounds\": 2}" > "/tmp/spec-playbook-$type.log" 2>&1
  echo "--spec-type $type: benchmark.yml rc=$? in $(( $(date +%s) - start ))s"
  kill $server; wait $server 2>/dev/null
  grep -E 'draft|speculative' "/tmp/spec-server-$type.log" | tail -3 > "$out/$type/server-tail.log" 2>/dev/null
  if [ "$type" = planned ]; then
    python3 -c 'import json, sys
memory = json.load(open(sys.argv[1]))["memory"][0]
print("memory plan: KV cache %(kv_cache_mib)s MiB, %(draft)s %(draft_mib)s MiB (KV cache %(draft_kv_cache_mib)s), "
      "compute buffer %(compute_buffer_mib)s MiB" % memory)' "$out/llama-server-plan.json"
    # The buffers llama-server allocated, for both contexts: it logs them at -lv 4 only.
    env "${environment[@]}" timeout 60 "${argv[@]}" -lv 4 > "/tmp/spec-server-buffers.log" 2>&1 &
    server=$!
    python3 tests/gpu/wait_health.py http://127.0.0.1:8081/health
    grep -E "model buffer size|KV buffer size|compute buffer size" /tmp/spec-server-buffers.log \
      | tee "$out/planned/server-buffers.log"
    kill $server; wait $server 2>/dev/null
  fi
done

# c. The comparison.
python3 - "$out" off "${types[@]}" <<'PY'
import json, pathlib, sys
out, kinds = pathlib.Path(sys.argv[1]), sys.argv[2:]
levels = {kind: {row["streams"]: row for row in json.loads(next((out / kind).glob("*.json")).read_text())["levels"]}
          for kind in kinds if list((out / kind).glob("*.json"))}
print("| --spec-type | streams | drafts kept | tokens/s per stream | x plain | tokens/s summed | x plain |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for kind, rows in levels.items():
    for streams, row in sorted(rows.items()):
        plain = levels.get("off", {}).get(streams)
        kept = "%d of %d (%.0f%%)" % (row["draft_accepted"], row["draft_tokens"], 100 * row["acceptance"]) \
            if row.get("draft_tokens") else "none drafted"
        ratio = lambda key: "%.2f" % (row[key] / plain[key]) if plain and plain[key] else "-"
        print("| %s | %d | %s | %.1f | %s | %.1f | %s |" % (kind, streams, kept, row["stream_tokens_per_s_p50"],
              ratio("stream_tokens_per_s_p50"), row["summed_tokens_per_s"], ratio("summed_tokens_per_s")))
json.dump(levels, open(out / "speculative-levels.json", "w"), indent=1)
PY
echo "speculative.sh done in $(( $(date +%s) - begin ))s"
