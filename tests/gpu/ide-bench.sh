#!/usr/bin/env bash
# Issue 35's acceptance on the lent GPU machine: the llama_server role's slot and prompt-cache defaults
# under an IDE-like load. Run after `tests/gpu/llama-bench.sh ARCHIVE OUTDIR --no-bench` (which built
# llama.cpp through the role and extracted its source to /tmp/llama-src). It:
#  a. writes the 8B-shaped random model again with a trained context of 32768
#     (tests/gpu/make_bench_model.py), so that the role's slots hold 16384 + 4096 tokens and can grow,
#     and quantizes it to /tmp/bench32k-q4_k_m.gguf (a second run keeps that file);
#  b. plans one instance through the roles as tests/gpu/slots-bench.sh does, every slot setting at the
#     role's default: $out/llama-server-plan.json;
#  c. runs llama-bench with a q8_0 KV cache and with f16 (prompt and decode speed at depth 0 and 16384:
#     what q8_0 costs on a GQA model);
#  d. runs tests/gpu/ide_bench.py: the planned command line, the same with llama-server's own prompt
#     cache (--cache-ram 8192) and -c 122880 -np 6, under a burst of 16 long prompts, short requests right
#     after it and re-sent prompts ($out/ide-bench.txt, $out/ide-bench.json, $out/server-*.log).
# Time on an H100: about 1.5 min for the model, 1-1.5 min for the roles and llama-bench, 3.5-5 min for
# ide_bench.py. Once IDE_BENCH_BUDGET_S (400 s by default) have passed since this script started,
# ide_bench.py starts no setting and ends its re-send phase (so at most about 7.5 min in all); a setting
# left out runs alone afterwards (in the same OUTDIR it keeps the others' figures in ide-bench.json):
#   CUDA_VISIBLE_DEVICES=0 python3 tests/gpu/ide_bench.py /tmp/ide-plan.json OUTDIR np6
# Usage: tests/gpu/ide-bench.sh OUTDIR [SETTING ...]   (SETTING: default, cache, np6; all by default)
set -uo pipefail
out=${1:?output folder}; shift
begin=$(date +%s)
export IDE_BENCH_DEADLINE=$(( begin + ${IDE_BENCH_BUDGET_S:-400} ))
bin=/opt/llama.cpp/current/bin
model=/tmp/bench32k-q4_k_m.gguf
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
# This repository as v100.llm (collections/), and the collections carried here.
export ANSIBLE_COLLECTIONS_PATH=$PWD/collections:$PWD/.devcarry

# a. The model: same weights as /tmp/bench-q4_k_m.gguf, trained context 32768.
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

# b. The plan through the roles, as tests/gpu/slots-bench.sh makes it.
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
cp "$out/llama-server-plan.json" /tmp/ide-plan.json  # for a later run of one setting (below)

# c. What a q8_0 KV cache costs against f16: prompt (pp512) and decode (tg128) at depth 0 and 16384.
export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1
for kv in f16 q8_0; do
  start=$(date +%s)
  "$bin/llama-bench" -m "$model" -ngl 99 -fa 1 -ctk $kv -ctv $kv -p 512 -n 128 -d 0,16384 -r 2 -o json \
    > "$out/ide-llama-bench-$kv.json" 2> "$out/ide-llama-bench-$kv.err"
  echo "llama-bench KV $kv rc=$? in $(( $(date +%s) - start ))s"
done
python3 - "$out/ide-llama-bench-f16.json" "$out/ide-llama-bench-q8_0.json" <<'PY' | tee "$out/ide-llama-bench.txt"
import json, sys
rows = {}
for path in sys.argv[1:]:
    try:
        records = json.load(open(path))
    except (OSError, ValueError) as error:
        print("%s: no figures (%s)" % (path, error))
        continue
    for r in records:
        test = "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]
        rows[test, r["n_depth"], r["type_k"]] = r["avg_ts"], r["stddev_ts"]
print("%-6s %6s %18s %18s %9s" % ("test", "depth", "f16 KV t/s", "q8_0 KV t/s", "q8_0/f16"))
def cell(value):
    return "%9.1f ± %6.1f" % value if value else "%18s" % "-"
for test, depth in sorted({key[:2] for key in rows}):
    f16, q8 = rows.get((test, depth, "f16")), rows.get((test, depth, "q8_0"))
    print("%-6s %6d %s %s %8s" % (test, depth, cell(f16), cell(q8),
                                  "%.1f %%" % (100 * q8[0] / f16[0]) if f16 and q8 else "-"))
PY

# d. The IDE load on three settings.
python3 tests/gpu/ide_bench.py "$out/llama-server-plan.json" "$out" "$@" 2>&1 | tee "$out/ide-bench.txt"
echo "ide-bench.sh done in $(( $(date +%s) - begin ))s"
