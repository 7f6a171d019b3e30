"""Preflight's check of the stages' variables (plugins/plugin_utils/settings_check.py, action settings_check)."""
from __future__ import annotations

import pytest
import yaml

from conftest import PROJECT_ROOT

from ansible_collections.v100.llm.plugins.plugin_utils.settings_check import MASK, settings_errors, without_defaults

ROLES = sorted(p for p in (PROJECT_ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())


def _options(role):
    return yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_each_default_set_by_hand_passes(role):
    """A default copied into an inventory passes the check (a templated one is rendered by the role's run)."""
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    plain = {name: value for name, value in defaults.items() if not (isinstance(value, str) and "{{" in value)}
    assert settings_errors({role.name: _options(role)}, plain) == []


def test_defaults_are_left_out_at_every_depth():
    options = {"a": {"type": "dict", "default": {}, "options": {"b": {"type": "int", "default": 1}}},
               "c": {"type": "list", "elements": "int", "default": "{{ [0] }}"}}
    assert without_defaults(options) == {"a": {"type": "dict", "options": {"b": {"type": "int"}}},
                                         "c": {"type": "list", "elements": "int"}}
    # The templated default is not taken for a value: nothing set, nothing refused.
    assert settings_errors({"x": options}, {}) == []


def test_a_wrong_value_is_refused_by_its_name_and_every_role_is_checked():
    options = {role.name: _options(role) for role in ROLES}
    errors = settings_errors(options, {"vllm_server_port": "http", "nvidia_driver_branch": 560,
                                       "benchmark_concurrency": ["a"]})
    assert len(errors) == 3
    assert any("'vllm_server_port'" in error and "convert to int" in error for error in errors)
    assert any("nvidia_driver_branch must be one of: 535, 550, 570, 575, 580, got: 560" in error for error in errors)
    assert any("'benchmark_concurrency'" in error for error in errors)


def test_a_secret_never_shows_in_a_refusal():
    options = {"key": {"type": "str", "no_log": True, "choices": ["a"]}}
    # Ansible's validator itself would print it: "value of key must be one of: a, got: hunter2-secret".
    assert settings_errors({"x": options}, {"key": "hunter2-secret"}) == ["value of key must be one of: a, got: %s"
                                                                         % MASK]


def test_preflight_checks_every_stage_role():
    """The roles preflight checks (its vars/main.yml) are every role but the benchmark (playbooks/benchmark.yml
    only) and preflight itself (Ansible checks its arguments as it starts)."""
    listed = yaml.safe_load((PROJECT_ROOT / "roles" / "preflight" / "vars" / "main.yml").read_text())
    checked = {role for roles in listed["__preflight_settings_roles"].values() for role in roles}
    assert checked == {role.name for role in ROLES} - {"benchmark", "preflight"}
