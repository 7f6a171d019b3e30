"""llama_server settings as the role's plan.yml passes them, and the two planning steps."""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import instance_commands, plan_instances


def llama_server_settings(**changes):
    base = dict(
        server_bin="/opt/llama.cpp/b1-abc/bin/llama-server", backend="cuda", gpu_count=2, host="127.0.0.1",
        api_key_set=False, ctx_size=8192, parallel=1, slots_max=16, prompt_tokens_max=6144, answer_tokens_max=2048,
        slot_context_max=32768,
        kv_unified=False, batch_size=2048, ubatch_size=512, kv_cache_type="f16", prompt_cache_mib=0, speculative="off",
        gpu_layers=999,
        flash_attention=True, metrics=True, webui=False, extra_args=[], config_dir="/etc/llama-server",
        restart_schedule="*-*-* 04:00:00", restart_stagger_minutes=15,
    )
    base.update(changes)
    return base


def planned(instances, settings, models=None, sized=()):
    """plan_instances, then instance_commands with the host's sized memory plans."""
    return instance_commands(plan_instances(instances, settings, models), list(sized))
