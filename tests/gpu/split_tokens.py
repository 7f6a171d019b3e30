#!/usr/bin/env python3
"""Does llama-server start with --split-mode tensor and a KV cache setting,
and does it then give the tokens split_mode layer gives?

For each cache setting (K type, V type, flash attention), start the built
llama-server on both GPUs in layer mode and in tensor mode, one at a time,
ask each for 48 greedy tokens of one prompt, and compare. llama.cpp's greedy
decoding is deterministic on one machine (layer and tensor gave the same
tokens for f16), so a tensor run that starts but gives other tokens than
layer with the same cache types computes something else. A server that does
not start is reported with the error lines of its log. This is the evidence
behind llama_server_plan._tensor_errors (docs/BENCHMARKS.md, "Two GPUs").
Usage: split_tokens.py LLAMA_SERVER MODEL.gguf OUTDIR
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

PORT = 8095
SETTINGS = (  # K cache, V cache, flash attention
    ("f16", "f16", "on"), ("q8_0", "q8_0", "on"), ("q5_1", "q5_1", "on"), ("q4_0", "q4_0", "on"),
    ("q8_0", "f16", "on"), ("f16", "f16", "off"),
)
ERROR_MARKS = ("SPLIT_MODE_TENSOR", "error", "GGML_ASSERT", "abort")


def greedy_tokens(server):
    """The 48 greedy tokens, or None when the server exits or never answers /health."""
    for _ in range(240):
        if server.poll() is not None:
            return None
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % PORT, timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        return None
    body = {"prompt": "The quick brown fox", "n_predict": 48, "temperature": 0, "top_k": 1, "return_tokens": True}
    request = urllib.request.Request("http://127.0.0.1:%d/completion" % PORT, data=json.dumps(body).encode())
    return json.loads(urllib.request.urlopen(request, timeout=120).read())["tokens"]


def start(binary, model, mode, cache_k, cache_v, flash, log_path):
    argv = [binary, "-m", model, "--port", str(PORT), "-ngl", "999", "-sm", mode, "-ctk", cache_k, "-ctv", cache_v,
            "-fa", flash, "-c", "8192", "-np", "1", "--fit", "off"]
    with open(log_path, "w") as log:
        server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        return greedy_tokens(server)
    finally:
        server.terminate()
        server.wait()


def main(binary, model, out):
    os.environ.update(CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES="0,1")
    results = []
    for cache_k, cache_v, flash in SETTINGS:
        tokens = {}
        for mode in ("layer", "tensor"):
            log_path = os.path.join(out, "tokens-%s-%s-%s-fa%s.log" % (mode, cache_k, cache_v, flash))
            tokens[mode] = start(binary, model, mode, cache_k, cache_v, flash, log_path)
            if tokens[mode] is None:
                errors = [line.strip() for line in open(log_path) if any(mark in line for mark in ERROR_MARKS)]
                print("-sm %s -ctk %s -ctv %s -fa %s: did not serve: %s" % (
                    mode, cache_k, cache_v, flash, " | ".join(errors[-3:])))
        same = tokens["layer"] is not None and tokens["tensor"] == tokens["layer"]
        verdict = ("both did not serve" if tokens["layer"] is None and tokens["tensor"] is None
                   else "only %s served" % ("layer" if tokens["tensor"] is None else "tensor")
                   if None in tokens.values() else "tensor gives the tokens of layer" if same
                   else "tensor does NOT give the tokens of layer")
        print("-ctk %s -ctv %s -fa %s: %s" % (cache_k, cache_v, flash, verdict))
        results.append({"cache_type_k": cache_k, "cache_type_v": cache_v, "flash_attn": flash, **tokens,
                        "tensor_equals_layer": same})
    json.dump(results, open(os.path.join(out, "split-tokens.json"), "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
