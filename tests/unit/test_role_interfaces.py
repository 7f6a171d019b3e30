"""Every role's documented interface matches what it really reads.

meta/argument_specs.yml is what Ansible validates input against and what the
README's table is written from (scripts/role_docs.py); defaults/main.yml is
what the role falls back to. A variable in one and not the other, or two
different defaults, is a bug a user would trip on.
"""
from __future__ import annotations

import re

import pytest
import yaml

from conftest import PROJECT_ROOT


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
    # vllm must not define vllm_server_*: the prefix names one owner (the interface tests read owners by prefix).
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
                                   "{{ vllm_dtype\n   | default('half', true) }}")
    assert found == [("vllm_dtype", "'half'")] * 3


def _defaults_by_role():
    return {role.name: _load(role / "defaults" / "main.yml") for role in ROLES}


def _owners():
    return {name: role for role, defaults in _defaults_by_role().items() for name in defaults}


def test_a_variable_read_outside_its_role_has_no_copy_of_its_default():
    """`vllm_dtype | default('half')` in preflight would be a second default that drifts: the reader imports the
    owner's defaults instead (the test below)."""
    owners = _owners()
    copies = []
    for path in _templated_files():
        parts = path.relative_to(PROJECT_ROOT).parts
        reader = parts[1] if parts[0] == "roles" else "a playbook"
        for name, fallback in DEFAULT_FILTER.findall(path.read_text()):
            if owners.get(name, reader) != reader:
                copies.append("%s: %s | default(%s)" % (path.relative_to(PROJECT_ROOT), name, fallback))
    assert copies == []


JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
CONDITIONS = {"when", "that", "failed_when", "changed_when", "until"}


def _expressions(node):
    """The Jinja a YAML file evaluates: its templated strings, and its conditions' bare expressions."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONDITIONS:
                yield from (item for item in (value if isinstance(value, list) else [value]) if isinstance(item, str))
            else:
                yield from _expressions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _expressions(item)
    elif isinstance(node, str):
        yield from JINJA.findall(node)


def _imported_defaults(node):
    """The roles whose defaults a YAML file imports (import_role, tasks_from: defaults)."""
    if isinstance(node, dict):
        found = node.get("ansible.builtin.import_role") or {}
        if found.get("tasks_from") == "defaults":
            # Public also where an ansible.cfg sets private_role_vars (import_role is public only by default).
            assert found.get("public") is True, found
            yield found["name"]
        for value in node.values():
            yield from _imported_defaults(value)
    elif isinstance(node, list):
        for item in node:
            yield from _imported_defaults(item)


def _read_elsewhere(paths, reader, owners):
    """{owner role: names} of the other roles' settings these files read."""
    read = {}
    for path in paths:
        text = path.read_text()
        expressions = JINJA.findall(text) if path.suffix == ".j2" else _expressions(yaml.safe_load(text))
        for expression in expressions:
            # Names in the expression, not in its quoted text.
            for name in re.findall(r"\b[a-z][a-z0-9_]*\b", re.sub(r"'[^']*'|\"[^\"]*\"", "", expression)):
                if owners.get(name, reader) != reader:
                    read.setdefault(owners[name], set()).add(name)
    return read


def _role_files(role):
    return [p for p in role.rglob("*") if p.suffix in (".yml", ".j2") and p.parts[-2] != "meta"]


def test_a_role_reading_another_roles_setting_imports_its_defaults():
    """Where a role reads another's setting, that role's defaults are imported, so the value read is the
    owner's default wherever the reader runs alone (a molecule scenario, the collection, a tasks_from)."""
    owners = _owners()
    missing, read_anywhere = [], set()
    for role in ROLES:
        paths = _role_files(role)
        imported = {name for p in paths if p.suffix == ".yml" for name in _imported_defaults(_load(p))}
        for owner, names in sorted(_read_elsewhere(paths, role.name, owners).items()):
            read_anywhere.add(owner)
            if owner not in imported:
                missing.append("%s reads %s without importing %s's defaults" % (role.name, sorted(names), owner))
    assert missing == []
    # The stage entry imports every role whose settings another reads.
    stage_defaults = _load(PROJECT_ROOT / "roles" / "preflight" / "tasks" / "stage-defaults.yml")
    assert set(_imported_defaults(stage_defaults)) >= read_anywhere


def test_every_playbook_reading_a_role_setting_imports_the_stage_defaults():
    """A playbook's own conditions (llama_cpp_enabled) read the roles' settings: through the stage entry
    (tasks/facts-and-preflight.yml) or the preflight role, both of which import every stage's defaults."""
    owners = _owners()
    shared = sorted((PROJECT_ROOT / "playbooks" / "tasks").glob("*.yml"))
    for path in sorted((PROJECT_ROOT / "playbooks").glob("*.yml")):
        text = path.read_text()
        if _read_elsewhere([path] + shared, "a playbook", owners):
            assert "tasks/facts-and-preflight.yml" in text or re.search(r"role: (v100\.llm\.)?preflight\b", text), path
