#!/usr/bin/env bash
# Issue 37's GPU acceptance: playbooks/benchmark.yml against the role-planned llama-server with the 8B-shaped
# bench model, on the lent GPU machine (no systemd there). Run after
# `tests/gpu/llama-bench.sh ARCHIVE OUTDIR --build-only` (the llama_cpp role's build). It:
#  a, b. writes the bench model with a 32768-token trained context and plans one instance through the roles,
#        every slot setting at its default (tests/gpu/bench32k-plan.sh, as ide-bench.sh does);
#  c. runs the engine alone as the benchmark role does, from the plan's endpoint (its `engine`: argv and
#     environment) with -p 512 -n 128 -r 3, before the server starts (the role stops the unit instead);
#  d. starts llama-server on the planned command line, in the background;
#  e. runs playbooks/benchmark.yml with -c local and --skip-tags benchmark_engine (that step stops a systemd
#     unit), c's figures handed in as benchmark_engine_results, every other benchmark setting at its default
#     but 256 generated tokens and one round: OUTDIR/localhost-bench-*.json and .md (no matplotlib here: the
#     plots are drawn from the JSON on the controller, benchmark_report.plots).
# Usage: tests/gpu/benchmark.sh OUTDIR
set -uo pipefail
out=${1:?output folder}
begin=$(date +%s)
. tests/gpu/bench32k-plan.sh

# c. The engine alone, with the argv and environment the role would run.
start=$(date +%s)
python3 - "$out/llama-server-plan.json" /tmp/bench-engine.json <<'PY'
import json, os, subprocess, sys
instance = json.load(open(sys.argv[1]))["instances"][0]
engine = instance["endpoint"]["engine"]
argv = engine["argv"] + ["-p", "512", "-n", "128", "-r", "3", "-o", "json"]
done = subprocess.run(argv, env=dict(os.environ, **engine["environment"]), capture_output=True, text=True)
result = {"argv": argv, "json": done.stdout} if done.returncode == 0 else \
    {"skipped": "llama-bench failed (rc %d): %s" % (done.returncode, done.stderr[-300:])}
json.dump({"benchmark_engine_results": {instance["name"]: result}}, open(sys.argv[2], "w"))
print("engine:", " ".join(argv), "rc", done.returncode)
PY
echo "llama-bench in $(( $(date +%s) - start ))s"

# d. llama-server as the unit would start it.
mapfile -d '' argv < <(python3 -c 'import json, sys
instance = json.load(open(sys.argv[1]))["instances"][0]
sys.stdout.write("".join(word + "\0" for word in instance["argv"]))' "$out/llama-server-plan.json")
mapfile -t environment < <(python3 -c 'import json, sys
instance = json.load(open(sys.argv[1]))["instances"][0]
print("\n".join("%s=%s" % item for item in instance["environment"].items()))' "$out/llama-server-plan.json")
start=$(date +%s)
env "${environment[@]}" "${argv[@]}" > /tmp/bench-server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
python3 tests/gpu/wait_health.py http://127.0.0.1:8081/health || { tail -30 /tmp/bench-server.log; exit 1; }
echo "llama-server up in $(( $(date +%s) - start ))s: ${argv[*]}"

# e. The benchmark playbook.
start=$(date +%s)
ansible-playbook -i localhost, -c local playbooks/benchmark.yml --skip-tags benchmark_engine \
  -e @/tmp/ide-vars.yml -e @/tmp/bench-engine.json -e ansible_become=false \
  -e llama_cpp_source_file="$PWD/.devcarry/llama.cpp-0c1e570.tar.gz" \
  -e ansible_python_interpreter="$(command -v python3)" \
  -e "{\"benchmark_output_dir\": \"$out\", \"benchmark_generated_tokens\": 256, \"benchmark_rounds\": 1}" \
  > /tmp/benchmark-playbook.log 2>&1
echo "benchmark.yml rc=$? in $(( $(date +%s) - start ))s"
grep -E 'ok=|no plots' /tmp/benchmark-playbook.log | tail -3
tail -n 80 /tmp/benchmark-playbook.log > "$out/benchmark-playbook-tail.log"
grep -E 'slots|n_ctx|error' /tmp/bench-server.log | tail -20 > "$out/bench-server.log"
cat "$out"/localhost-bench-*.md 2>/dev/null
echo "benchmark.sh done in $(( $(date +%s) - begin ))s"
