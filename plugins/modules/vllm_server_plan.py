#!/usr/bin/python
"""Documentation of the vllm_server_plan action (plugins/action/vllm_server_plan.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: vllm_server_plan
short_description: Read the vLLM server's model, size it, check it and write its command line, in one step
description:
  - Reads the model on the host. For a model folder, its C(config.json) and the sizes of its C(*.safetensors)
    (else C(*.bin)). For a repository, its C(config.json) from the endpoint vLLM downloads from, unless
    offline; unread, a warning says the rules use C(vllm_model_architecture) and C(vllm_quantization).
  - Plans on the controller with C(plan_on_model) (plugins/module_utils/vllm/server_plan.py). The model's
    C(config.json) gives its quantization and maximum length. A folder's memory is planned against the smallest
    of the server's GPUs, which also settles C(vllm_server_max_model_len=auto).
  - Checks the model against the stack's vLLM rules with M(nvidia_stack_check) on the host.
  - Fails with every refusal at once, ending with "Nothing on the host was changed.". Changes nothing.
options:
  settings:
    description:
      - The role's settings as C(plan_server) reads them (the role's C(__vllm_server_settings)). C(max_model_len)
        is as set (C(auto) or a number) and C(quantization) is C(vllm_quantization); the model's C(config.json),
        where read, says its own.
    type: dict
    required: true
  gpus:
    description: The GPU facts (C(nvidia_gpus)); empty plans no memory.
    type: list
    elements: dict
    default: []
  stack:
    description:
      - M(nvidia_stack_check)'s options for the stack the model runs on (C(distribution), C(nvidia_driver_branch),
        C(cuda_toolkit_version), C(vllm_version), ...). C(vllm_model_architecture) stands in where the
        model's C(config.json) was not read.
    type: dict
    default: {}
  folder_on_host:
    description: False for a models_list folder that check mode has yet to fetch; nothing is read or sized.
    type: bool
    default: true
  hf_token:
    description: The token sent to the endpoint for a repository's C(config.json).
    type: str
    default: ""
author: v100.llm
"""

EXAMPLES = r"""
- name: Read the model, size it, check it and write the command line
  v100.llm.vllm_server_plan:
    settings: "{{ __vllm_server_settings }}"
    gpus: "{{ nvidia_gpus }}"
    stack: {distribution: Ubuntu, distribution_version: "24.04", vllm_version: 0.5.4}
  register: __vllm_server_plan
"""

RETURN = r"""
argv:
  description: The command line (absent when refused).
  returned: success
  type: list
  elements: str
environment:
  description: The unit's environment.
  returned: success
  type: dict
endpoint:
  description: What playbooks/verify.yml and benchmark.yml are handed.
  returned: success
  type: dict
shape:
  description: The model's shape from its C(config.json); empty when not read.
  returned: always
  type: dict
memory:
  description: The memory plan, with its C(verdict); empty when not planned (a repository, or no GPU facts).
  returned: always
  type: dict
quantization:
  description: The quantization vLLM is given (the model's own, where its C(config.json) was read).
  returned: always
  type: str
errors:
  description: The server's refusals (the stack's are in C(msg) too).
  returned: always
  type: list
  elements: str
"""
