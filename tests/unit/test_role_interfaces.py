"""Every role's documented interface matches what it really reads.

meta/argument_specs.yml is what Ansible validates input against and what the
README's table is written from (scripts/role_docs.py); defaults/main.yml is
what the role falls back to. A variable in one and not the other, or two
different defaults, is a bug a user would trip on.
"""
from __future__ import annotations

import re
import sys

import pytest
import yaml

from conftest import PROJECT_ROOT


from ansible_collections.v100.llm.plugins.filter.host import FilterModule  # noqa: E402

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
    # vllm must not define vllm_server_*: the prefix names one owner (role_default relies on it).
    longer = [r.name for r in ROLES if r.name.startswith(role.name + "_")]
    assert [n for n in defaults if any(n.startswith(other + "_") for other in longer)] == []


# `name | default(x)`, `name|d(x)`, across a line break, with or without `, true`.
DEFAULT_FILTER = re.compile(r"\b([a-z][a-z0-9_]*)\s*\|\s*(?:default|d)\(\s*([^()]*?)\s*(?:,\s*(?:true|True)\s*)?\)")


def _templated_files():
    """Every file Ansible templates: roles' YAML and Jinja files at any depth, the playbooks, site.yml."""
    roles = [p for p in (PROJECT_ROOT / "roles").rglob("*") if p.suffix in (".yml", ".j2")]
    return sorted(roles) + sorted((PROJECT_ROOT / "playbooks").glob("*.yml")) + [PROJECT_ROOT / "site.yml"]


def test_the_copy_finder_sees_the_usual_spellings():
    found = DEFAULT_FILTER.findall("{{ vllm_dtype|default('half') }} {{ vllm_dtype | d('half') }}\n"
                                   "{{ vllm_dtype\n   | default('half', true) }} {{ a | default('a' | v100.llm.role_default) }}")
    assert found == [("vllm_dtype", "'half'")] * 3 + [("a", "'a' | v100.llm.role_default")]


def _defaults_by_role():
    return {role.name: _load(role / "defaults" / "main.yml") for role in ROLES}


def test_a_variable_read_outside_its_role_has_no_copy_of_its_default():
    """`vllm_dtype | default('half')` in preflight would be a second default that drifts: use role_default."""
    owners = {name: role for role, defaults in _defaults_by_role().items() for name in defaults}
    copies = []
    for path in _templated_files():
        parts = path.relative_to(PROJECT_ROOT).parts
        reader = parts[1] if parts[0] == "roles" else "a playbook"
        for name, fallback in DEFAULT_FILTER.findall(path.read_text()):
            if owners.get(name, reader) != reader and fallback != "'%s' | v100.llm.role_default" % name:
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
    names = {name for path in _templated_files()
             for name in re.findall(r"'([a-z0-9_]+)' \| v100\.llm\.role_default", path.read_text())}
    assert names
    for name in sorted(names):
        role_default(name)


def test_role_default_refuses_a_templated_default():
    role_default = FilterModule().filters()["role_default"]
    templated = [n for n, v in _defaults_by_role()["llama_server"].items() if isinstance(v, str) and "{{" in v]
    with pytest.raises(ValueError, match="is a template"):
        role_default(templated[0])
