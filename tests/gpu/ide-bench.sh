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
# a, b. The model and the roles' plan.
. tests/gpu/bench32k-plan.sh

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
