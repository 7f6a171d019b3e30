#!/usr/bin/env python3
"""Start llama-server with a packed slot plan, fill every slot at once, and
compare the GPU memory CUDA really used with the plan.

Reads the plan gpu_memory_plan returned (ansible's minimal callback), starts
llama-server with its -c/-np and the role's other flags (-lv 4 for the buffer
lines), sends one long prompt per slot at once (about 7/8 of a slot, sized
with /tokenize, 64 generated tokens each), and samples nvidia-smi's used
memory every 0.2 s from before the start to the end. Prints the plan's terms,
llama-server's own CUDA buffer sizes, the idle and peak used memory, and the
peak's increase beside the plan's required memory without its safety margin.
Usage: fill_check.py PLAN.json LLAMA_SERVER OUTDIR
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

from slots_bench import PORT, call, stop_server, wait_healthy  # beside this file

MODEL = "/tmp/bench-q4_k_m.gguf"


def used_mib():
    return int(subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits",
                                        "-i", "0"]).split()[0])


def main(plan_path, server_bin, out):
    text = open(plan_path).read()  # ansible's minimal callback: "localhost | SUCCESS => {...}"
    plan = json.loads(text[text.index("{"):])["memory_plans"][0]
    slots, context = plan["chosen_slots"], plan["chosen_context_per_slot"]
    print("plan: " + plan["message"])
    idle = used_mib()
    peak = [idle]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak.append(used_mib())
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    argv = [server_bin, "--model", MODEL, "--host", "127.0.0.1", "--port", str(PORT), "--ctx-size",
            str(slots * context), "--parallel", str(slots), "--no-kv-unified", "--batch-size", "2048",
            "--ubatch-size", "512", "--cache-type-k", "f16", "--cache-type-v", "f16", "--flash-attn", "on",
            "--fit", "off", "--gpu-layers", "999", "--no-webui", "-lv", "4"]
    log_path = os.path.join(out, "fill-server.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(server)
        loaded = max(peak)
        chunk = "The quick brown fox jumps over the lazy dog while the server fills every slot. "
        per_chunk = len(call("/tokenize", {"content": chunk})["tokens"])
        repeats = context * 7 // 8 // per_chunk
        answers = []

        def one(index):
            prompt = "Request %d. " % index + chunk * repeats
            answers.append(call("/completion", {"prompt": prompt, "n_predict": 64, "ignore_eos": True,
                                                "cache_prompt": False}))

        start = time.time()
        threads = [threading.Thread(target=one, args=(index,)) for index in range(slots)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.time() - start
    finally:
        stop_server(server)
        done.set()
        sampler.join()
    prompt_tokens = sum(answer["tokens_evaluated"] for answer in answers)
    print("%d of %d slots answered at once: %d prompt tokens (%d a slot of %d) and %d generated in %.1f s" % (
        len(answers), slots, prompt_tokens, prompt_tokens // max(1, len(answers)), context,
        sum(answer["tokens_predicted"] for answer in answers), wall))
    for line in open(log_path):
        if "CUDA0" in line and "buffer size" in line or "llama_kv_cache: size" in line:
            print("    " + line.strip())
    required = plan["required_mib"] - plan["safety_margin_mib"]
    print("nvidia-smi used: idle %d MiB, loaded %d MiB, peak %d MiB; the server's peak increase %d MiB "
          "beside the plan's %d MiB without its %d MiB safety margin (%d MiB to spare), of a %d MiB budget" % (
              idle, loaded, max(peak), max(peak) - idle, required, plan["safety_margin_mib"],
              required - (max(peak) - idle), plan["gpu_memory_mib"]))


if __name__ == "__main__":
    main(*sys.argv[1:4])
