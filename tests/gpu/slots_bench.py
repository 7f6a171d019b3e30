#!/usr/bin/env python3
"""Concurrency sweep of llama-server slot settings, the role's planned command line first.

For each setting: start llama-server with the planned argv, its --ctx-size,
--parallel, --batch-size and --ubatch-size replaced by the setting's (the
role's own plan unchanged for "role default"), wait for /health, send N
requests at once (distinct one-line prompts, 128 generated tokens each,
ignore_eos) for each N, and print the summed generated tokens/s: all tokens
over the wall time from the first request to the last answer. While 4 are
running, /slots shows how many slots are busy at once. The server's own
buffer sizes (CUDA0 model/KV/compute) are kept from its log.
With --planned, each planned instance instead runs as planned (its own
argv, port and environment: CUDA_VISIBLE_DEVICES for its GPUs), one after
another: the two-GPU run's layer and tensor split (tests/gpu/two-gpu.sh).
Usage: slots_bench.py [--planned] PLAN.json OUTDIR
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

PORT = 8081
STREAMS = (1, 4, 16, 32)
TOKENS = 128
# Hand-tuned settings from ../shared/notes/llama-server-slots-h200.md, and the role's old default.
HAND_TUNED = {
    "-c 8192 -np 1 (the old default)": {"--ctx-size": "8192", "--parallel": "1"},
    "-c 131072 -np 16": {"--ctx-size": "131072", "--parallel": "16"},
    "-c 131072 -np 16 -b 4096 -ub 1024": {"--ctx-size": "131072", "--parallel": "16", "--batch-size": "4096",
                                          "--ubatch-size": "1024"},
    "-c 131072 -np 32": {"--ctx-size": "131072", "--parallel": "32"},
}
LOG_MARKS = ("model buffer size", "KV buffer size", "compute buffer size", "llama_kv_cache: size", "n_ctx_seq",
             "n_slots", "NCCL", "split_mode")


def call(path, body=None, timeout=600, port=PORT):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read().decode())


def wait_healthy(server, port, limit=300):
    deadline = time.time() + limit
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError("llama-server exited with %s" % server.returncode)
        try:
            if call("/health", timeout=5, port=port).get("status") == "ok":
                return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError("no /health in %d s" % limit)


def stop_server(server):
    """SIGTERM, then SIGKILL after a minute."""
    server.terminate()
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def sweep(streams, port):
    results, busy = [], []

    def one(index):
        answer = call("/completion", {"prompt": "Request %d of %d: write a short story about the number %d." % (
            index, streams, index * 7919), "n_predict": TOKENS, "ignore_eos": True, "cache_prompt": False},
            port=port)
        results.append(answer["tokens_predicted"])

    threads = [threading.Thread(target=one, args=(index,)) for index in range(streams)]
    start = time.time()
    for thread in threads:
        thread.start()
    if streams == 4:
        time.sleep(0.5)
        busy.append(sum(1 for slot in call("/slots", port=port) if slot.get("is_processing")))
    for thread in threads:
        thread.join()
    wall = time.time() - start
    return sum(results) / wall, len(results), busy


def run(name, argv, out, plan_line, port=PORT, environment=None):
    log_path = os.path.join(out, "server-%s.log" % "".join(c if c.isalnum() else "_" for c in name)[:40])
    with open(log_path, "w") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                  env=dict(os.environ, **(environment or {})))
    try:
        wait_healthy(server, port)
        sweep(2, port)  # warm-up
        row = {}
        for streams in STREAMS:
            rate, done, busy = sweep(streams, port)
            row[streams] = rate
            if busy:
                row["busy_at_4"] = busy[0]
            if done != streams:
                raise RuntimeError("%d of %d requests answered" % (done, streams))
    finally:
        stop_server(server)
    marks = [line.strip() for line in open(log_path) if any(mark in line for mark in LOG_MARKS)]
    print("%-42s %s  busy slots with 4 running: %s" % (
        name, "  ".join("%4d: %7.1f" % (streams, row[streams]) for streams in STREAMS), row.get("busy_at_4")))
    for line in marks[:12]:
        print("    " + line)
    if plan_line:
        print("    plan: " + plan_line)
    return row


def replaced(argv, changes):
    argv = list(argv)
    for flag, value in changes.items():
        argv[argv.index(flag) + 1] = value
    return argv


def main(plan_path, out):
    plan = json.load(open(plan_path))
    instance = plan["instances"][0]
    memory = plan["memory"][0]
    planned = instance["argv"]
    print("role default: -c %s -np %s -b %s -ub %s; %s" % (
        instance["ctx_size"], instance["parallel"], planned[planned.index("--batch-size") + 1],
        planned[planned.index("--ubatch-size") + 1], instance["slot_choice"]))
    print("streams x %d tokens, summed generated tokens/s" % TOKENS)
    rows = {"role default (auto)": run("role default (auto)", planned, out, memory.get("message", ""))}
    for name, changes in HAND_TUNED.items():
        rows[name] = run(name, replaced(planned, changes), out, "")
    best = max((row[16], name) for name, row in rows.items() if name != "role default (auto)")
    share = rows["role default (auto)"][16] / best[0]
    print("at 16 streams: role default %.1f, best hand-tuned %.1f (%s): %.0f %%" % (
        rows["role default (auto)"][16], best[0], best[1], 100 * share))
    json.dump(rows, open(os.path.join(out, "slots-bench.json"), "w"), indent=1)


def main_planned(plan_path, out):
    plan = json.load(open(plan_path))
    print("streams x %d tokens, summed generated tokens/s, each instance as planned" % TOKENS)
    rows = {}
    for instance, memory in zip(plan["instances"], plan["memory"]):
        print("%s: %s (%s)" % (instance["name"], " ".join(instance["argv"]), " ".join(
            "%s=%s" % item for item in sorted(instance["environment"].items()))))
        try:
            rows[instance["name"]] = run(instance["name"], instance["argv"], out, memory.get("message", ""),
                                         instance["port"], instance["environment"])
        except (RuntimeError, OSError) as error:  # the next instance still runs
            print("    FAILED: %s" % error)
    json.dump(rows, open(os.path.join(out, "split-bench.json"), "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--planned":
        main_planned(*sys.argv[2:4])
    else:
        main(*sys.argv[1:3])
