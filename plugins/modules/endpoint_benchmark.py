#!/usr/bin/python
"""Documentation of the endpoint_benchmark action (plugins/action/endpoint_benchmark.py), which runs on the
controller."""
from __future__ import annotations

DOCUMENTATION = r"""
module: endpoint_benchmark
short_description: Load OpenAI-compatible endpoints on a host's loopback and report what a client measures
description:
  - Runs on the controller, with the C(openai) and C(matplotlib) packages of its Python
    (requirements-controller.txt), and downloads nothing (no tokenizer, no dataset).
  - Reaches each endpoint as M(v100.llm.endpoint_check) does, through the host's own connection.
  - "Per endpoint, the levels of three workloads: C(chat) (short chat prompts at each concurrency), C(prompt) (one
    stream, each prompt length: time to first token against length) and C(ide) (prompts of the longer half of the
    lengths, up to the endpoint's planned maximum, at each concurrency). Each request streams a fixed number of
    tokens (C(ignore_eos))."
  - Per level it reports time to first token and inter-token latency (p50, p90), tokens/s per stream and summed,
    goodput against the workload's targets, and failed requests by kind (context exceeded, 4xx, 5xx, timeout,
    connection, short answer), which count as misses, never left out of the figures.
  - Writes, per endpoint, C(<host>-<endpoint>-<time>.json), C(.md) and PNG plots into I(output_dir) on the
    controller. Changes nothing on the host. Fails only when no request reached a server.
options:
  endpoints:
    description:
      - As M(v100.llm.endpoint_check) takes them; a llama-server endpoint's C(engine) is not read here.
      - C(speculative), where set, names the C(--spec-type) the server was started with, for the report.
    type: list
    elements: dict
    required: true
  settings:
    description:
      - "C(workloads), C(concurrency), C(prompt_tokens), C(generated_tokens), C(rounds) (requests per stream and
        level) and C(targets) (per workload, C(ttft_s) and C(itl_s)): the benchmark role's variables."
    type: dict
    required: true
  memory_bandwidth_gbps:
    description: The GPUs' memory bandwidth, for the one-stream decoding limit; null when not known.
    type: float
  engine:
    description: Per endpoint name, llama-bench's C(argv) and C(json) output, or why it was C(skipped).
    type: dict
  output_dir:
    description: Where on the controller the reports go (made if missing; relative to the working directory).
    type: path
    required: true
  timeout:
    description: Seconds one request may take.
    type: int
    default: 900
  baseline:
    description:
      - The C(levels) of an earlier call against the same server (plain decoding, in a comparison of
        speculative decoding types); each level of the same workload and streams gets its C(speedup) against it.
    type: list
    elements: dict
    default: []
author: v100.llm
"""

EXAMPLES = r"""
- name: Load the served endpoints and write the reports
  v100.llm.endpoint_benchmark:
    endpoints: "{{ llama_server_endpoints }}"
    settings:
      workloads: [chat, prompt]
      concurrency: [1, 4]
      prompt_tokens: [512, 2048]
      generated_tokens: 64
      rounds: 1
      targets: {chat: {ttft_s: 2, itl_s: 0.1}, prompt: {ttft_s: 30, itl_s: 0.1}, ide: {ttft_s: 30, itl_s: 0.1}}
    output_dir: benchmarks
"""

RETURN = r"""
files:
  description: The paths written on the controller.
  returned: always
  type: list
  elements: str
summary:
  description: The Markdown reports' lines, to print.
  returned: always
  type: list
  elements: str
levels:
  description: Per endpoint name, its measured levels as in the JSON report (with C(speedup) against O(baseline)).
  returned: always
  type: dict
"""
