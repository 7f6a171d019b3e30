#!/usr/bin/python
"""Documentation of the llama_server_plan action (plugins/action/llama_server_plan.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: llama_server_plan
short_description: Plan llama-server's instances, size their memory and write their command lines, in one step
description:
  - Plans each instance on the controller with C(plan_instances) (plugins/module_utils/llama/server_plan.py),
    giving it its model file, GPUs, environment, unit, key file, restart time, health probes and llama-server
    settings, and refuses what cannot serve (names, ports, keys, schedules, slot settings, GPU indexes,
    models), naming the variable.
  - Then, with O(size), sizes every instance on the host with M(gpu_memory_plan) (each model's GGUF header is
    read there) and writes each command line with its sizes (C(instance_commands)); an C(auto) instance gets the
    slots and tokens per slot its memory plan chose.
  - Fails with every refusal at once, ending with "Nothing on the host was changed.". Changes nothing.
options:
  instances:
    description: C(llama_server_instances).
    type: list
    elements: dict
    required: true
  settings:
    description:
      - The role's settings as C(plan_instances) reads them (the role's C(__llama_server_settings)), with
        C(server_bin), C(backend) (C(cuda) or C(cpu)), C(gpu_count) and C(serving_gpus) from the host.
    type: dict
    required: true
  models:
    description: Model name -> the models role's file (C(path), C(sha256), C(verified), its parts).
    type: dict
    default: {}
  gpus:
    description: The GPU facts to size against (C(nvidia_gpus)); empty sizes nothing against GPUs.
    type: list
    elements: dict
    default: []
  size:
    description:
      - Size the instances and write their command lines. False checks the inventory alone (preflight, before
        the model files exist); the instances then have no C(argv).
    type: bool
    default: true
  models_on_host:
    description: Refuse an instance whose model file is not on the host as its stamp says (false in check mode).
    type: bool
    default: true
author: v100.llm
"""

EXAMPLES = r"""
- name: Plan the instances, size them and write their command lines
  v100.llm.llama_server_plan:
    instances: "{{ llama_server_instances }}"
    settings: "{{ __llama_server_settings | combine(__llama_server_host_settings) }}"
    models: "{{ llama_server_models }}"
    gpus: "{{ nvidia_gpus }}"
  register: __llama_server_plan
"""

RETURN = r"""
instances:
  description: One plan per instance (C(name), C(unit), C(argv), C(environment), C(ctx_size), C(parallel),
    C(slot_choice), C(endpoint), ...); empty when refused.
  returned: always
  type: list
  elements: dict
endpoints:
  description: Each instance's C(endpoint), what playbooks/verify.yml and benchmark.yml are handed.
  returned: always
  type: list
  elements: dict
memory_plans:
  description: M(gpu_memory_plan)'s sized plans, one per instance; empty without O(size).
  returned: always
  type: list
  elements: dict
errors:
  description: The refusals.
  returned: always
  type: list
  elements: str
"""
