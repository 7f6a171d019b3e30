"""Every role's documented interface matches what it really reads.

meta/argument_specs.yml is what Ansible validates input against and what the
README repeats; defaults/main.yml is what the role falls back to. A variable in
one and not the other, or two different defaults, is a bug a user would trip on.
"""
from __future__ import annotations

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


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_readme_documents_every_variable(role):
    readme = (role / "README.md").read_text()
    missing = [n for n in _load(role / "defaults" / "main.yml") if f"`{n}`" not in readme]
    assert missing == []
