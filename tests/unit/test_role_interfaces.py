"""Every role's documented interface matches what it really reads.

meta/argument_specs.yml is what Ansible validates input against and what the
README repeats; defaults/main.yml is what the role falls back to. A variable in
one and not the other, or two different defaults, is a bug a user would trip on.
"""
from __future__ import annotations

import re
import sys

import pytest
import yaml

from conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "plugins" / "filter"))

from v100_llm import FilterModule  # noqa: E402

ROLES = sorted(p for p in (PROJECT_ROOT / "roles").iterdir() if (p / "tasks").is_dir())


def _load(path):
    return yaml.safe_load(path.read_text()) or {}


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_argument_specs_and_defaults_agree(role):
    defaults = _load(role / "defaults" / "main.yml")
    options = _load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(options)
    for name, spec in options.items():
        assert spec.get("default") == defaults[name], name
        assert spec.get("description"), f"{name} has no description"


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_variables_carry_the_role_prefix(role):
    defaults = _load(role / "defaults" / "main.yml")
    assert [n for n in defaults if not n.startswith(role.name + "_")] == []


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_readme_documents_every_variable(role):
    readme = (role / "README.md").read_text()
    missing = [n for n in _load(role / "defaults" / "main.yml") if f"`{n}`" not in readme]
    assert missing == []


def _defaults_by_role():
    return {role.name: _load(role / "defaults" / "main.yml") for role in ROLES}


def test_a_variable_read_outside_its_role_has_no_copy_of_its_default():
    """`vllm_dtype | default('half')` in preflight would be a second default that drifts: use role_default."""
    owners = {name: role for role, defaults in _defaults_by_role().items() for name in defaults}
    copies = []
    files = sorted((PROJECT_ROOT / "roles").glob("*/*/*.yml")) + sorted((PROJECT_ROOT / "playbooks").glob("*.yml"))
    for path in files:
        reader = path.parts[-3] if "roles" in path.parts else "a playbook"
        for name, fallback in re.findall(r"\b([a-z][a-z0-9_]*) \| default\(([^()]*)\)", path.read_text()):
            if owners.get(name, reader) != reader and fallback != "'%s' | role_default" % name:
                copies.append("%s: %s | default(%s)" % (path.relative_to(PROJECT_ROOT), name, fallback))
    assert copies == []


def test_role_default_reads_the_owner_of_the_prefix():
    role_default = FilterModule().filters()["role_default"]
    assert role_default("vllm_dtype") == "half"
    assert role_default("vllm_server_port") == _defaults_by_role()["vllm_server"]["vllm_server_port"]
    assert role_default("nvidia_driver_branch") == _defaults_by_role()["nvidia_driver"]["nvidia_driver_branch"]
    with pytest.raises(KeyError, match="vllm_no_such_setting"):
        role_default("vllm_no_such_setting")


def test_every_role_default_names_a_default():
    role_default = FilterModule().filters()["role_default"]
    files = sorted((PROJECT_ROOT / "roles").glob("*/*/*.yml")) + sorted((PROJECT_ROOT / "playbooks").glob("*.yml"))
    names = {name for path in files for name in re.findall(r"'([a-z0-9_]+)' \| role_default", path.read_text())}
    assert names
    for name in sorted(names):
        role_default(name)
