#!/usr/bin/python
"""Documentation of the endpoint_check action (plugins/action/endpoint_check.py), which runs on the controller."""
from __future__ import annotations

DOCUMENTATION = r"""
module: endpoint_check
short_description: Check OpenAI-compatible endpoints on a host's loopback with the OpenAI Python client
description:
  - Runs on the controller, with the C(openai) package of its Python (requirements-controller.txt).
  - Reaches each endpoint on the host's 127.0.0.1 through the host's own connection (C(ssh -W) over SSH, a relay
    run by C(docker exec -i) in a container, or directly with the local connection), so nothing is opened on the
    host's network.
  - "Per endpoint: C(/v1/models) lists the served name; a chat completion; a streamed one that arrives in several
    chunks, with the time to the first and the usage counts; a tool call and its result, where the model's chat
    template supports tools; a prompt of I(prompt_tokens_max) tokens; HTTP 401 without a key and with a wrong
    one; and where a llama-server instance is planned to speculate (C(engine.speculative)), that every slot
    drafts (C(/slots)): llama-server serves without drafting when it cannot use its draft."
  - Fails when any check fails, naming the endpoint, its URL and what broke. Changes nothing.
options:
  endpoints:
    description:
      - "Each: C(name), C(kind) (C(llama-server) or C(vllm)), C(url) (as shown), C(port) (on the host's loopback),
        C(model) (the served name), C(api_key) (empty for none), C(prompt_tokens_max)."
      - The roles hand these over as C(llama_server_endpoints) and C(vllm_server_endpoints).
    type: list
    elements: dict
    required: true
  timeout:
    description: Seconds one request may take (the longest prompt on a CPU takes minutes).
    type: int
    default: 600
author: v100.llm
"""

EXAMPLES = r"""
- name: Check the served endpoints with the OpenAI client
  v100.llm.endpoint_check:
    endpoints: "{{ llama_server_endpoints }}"
  no_log: false
"""

RETURN = r"""
endpoints:
  description: Per endpoint, its name, URL and checks (each C(check), C(state) ok, failed or skipped, C(detail)).
  returned: always
  type: list
  elements: dict
"""
