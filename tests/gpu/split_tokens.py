#!/usr/bin/env python3
"""Does llama-server start with --split-mode tensor and a KV cache setting,
and does it then give the tokens split_mode layer gives?

For each cache setting (K type, V type, flash attention, extra environment),
start the built llama-server on both GPUs in layer mode and in tensor mode,
one at a time, ask each for 48 greedy tokens of a short and of a long prompt,
and print how many leading tokens tensor shares with layer. The short prompt
(5 tokens) keeps tensor mode's cross-GPU sums in FP32; from 8 tokens of an
8B model's 4096-wide hidden state on they are sent as BF16
(ggml/src/ggml-cuda/ggml-cuda.cu, "For large tensors it's faster to compress
them to BF16", at the pinned commit), so the long prompt may part from layer
for every setting. Each server's KV cache line and flash-attention kernel
warnings and its attention-rotation lines are kept from its log (the KV
cache size line is not printed at llama-server's default verbosity). A server
that does not start is reported with the error lines of its log. The bench
model's weights are noise, so its logits are nearly flat: other tokens show
that tensor mode computes other numbers than layer mode, not how much that
changes a real model's answers. The evidence behind
llama_server_plan._tensor_errors (docs/BENCHMARKS.md, "Two GPUs").
Usage: split_tokens.py LLAMA_SERVER MODEL.gguf OUTDIR
"""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys

from slots_bench import call, stop_server, wait_healthy  # beside this file

PORT = 8095
TOKENS = 48
PROMPTS = {
    "short": "The quick brown fox",
    "long": "Write a detailed report on the history of the printing press, its inventors, the spread of movable "
            "type across Europe, and the effect it had on literacy, religion, science and politics.",
}
SETTINGS = (  # K cache, V cache, flash attention, environment
    ("f16", "f16", "on", {}), ("q8_0", "q8_0", "on", {}), ("q5_1", "q5_1", "on", {}), ("q4_0", "q4_0", "on", {}),
    ("q8_0", "f16", "on", {}), ("f16", "q8_0", "on", {}), ("q8_0", "q4_0", "on", {}), ("bf16", "f16", "on", {}),
    ("q8_0", "f16", "on", {"LLAMA_ATTN_ROT_DISABLE": "1"}), ("q8_0", "q8_0", "on", {"LLAMA_ATTN_ROT_DISABLE": "1"}),
    ("f16", "f16", "off", {}),
)
LOG_MARKS = ("attn_rot", "rotation", "FlashAttention", "SPLIT_MODE_TENSOR", "error", "GGML_ASSERT", "abort")
TIMESTAMP = re.compile(r"^\d+\.\d+\.\d+\.\d+ [A-Z] ")


def serve(binary, model, mode, cache_k, cache_v, flash, environment, log_path):
    """{prompt name: tokens}, or {"error": text} when the server does not start or answer."""
    argv = [binary, "-m", model, "--port", str(PORT), "-ngl", "999", "-sm", mode, "-ctk", cache_k, "-ctv", cache_v,
            "-fa", flash, "-c", "8192", "-np", "1", "--fit", "off"]
    with open(log_path, "w") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, **environment))
    body = {"n_predict": TOKENS, "temperature": 0, "top_k": 1, "return_tokens": True, "cache_prompt": False}
    try:
        wait_healthy(server, PORT, limit=120)
        return {name: call("/completion", dict(body, prompt=prompt), timeout=120, port=PORT)["tokens"]
                for name, prompt in PROMPTS.items()}
    except RuntimeError as error:
        return {"error": "did not start (%s)" % error}
    except (OSError, ValueError, KeyError, http.client.HTTPException) as error:
        return {"error": "did not answer: %s" % error}
    finally:
        stop_server(server)


def marked_lines(log_path):
    """The log's lines with a LOG_MARKS word, in order, once each, without their timestamps."""
    seen = []
    with open(log_path, errors="replace") as log:
        for line in log:
            line = TIMESTAMP.sub("", line.strip())
            if any(mark in line for mark in LOG_MARKS) and line not in seen:
                seen.append(line)
    return seen


def shared_prefix(one, other):
    count = 0
    for left, right in zip(one, other):
        if left != right:
            break
        count += 1
    return count


def main(binary, model, out):
    os.environ.update(CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES="0,1")
    results = []
    for cache_k, cache_v, flash, environment in SETTINGS:
        label = "-ctk %s -ctv %s -fa %s%s" % (cache_k, cache_v, flash,
                                            "".join(" %s=%s" % item for item in environment.items()))
        row = {"cache_type_k": cache_k, "cache_type_v": cache_v, "flash_attn": flash, "environment": environment}
        for mode in ("layer", "tensor"):
            log_path = os.path.join(out, "tokens-%s-%s-%s-fa%s%s.log" % (
                mode, cache_k, cache_v, flash, "-norot" if environment else ""))
            row[mode] = serve(binary, model, mode, cache_k, cache_v, flash, environment, log_path)
            row[mode + "_log"] = marked_lines(log_path)
        if "error" in row["layer"] or "error" in row["tensor"]:
            verdict = "layer: %s; tensor: %s" % (row["layer"].get("error", "served"),
                                                 row["tensor"].get("error", "served"))
        else:
            verdict = "tensor shares with layer %s" % ", ".join(
                "%d of %d tokens (%s prompt)" % (shared_prefix(row["layer"][name], row["tensor"][name]), TOKENS, name)
                for name in PROMPTS)
        row["verdict"] = verdict
        print("%s: %s" % (label, verdict))
        for mode in ("layer", "tensor"):
            for line in row[mode + "_log"]:
                print("    %s: %s" % (mode, line[:200]))
        results.append(row)
        with open(os.path.join(out, "split-tokens.json"), "w") as written:  # after each setting: a stop keeps the rest
            json.dump(results, written, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
