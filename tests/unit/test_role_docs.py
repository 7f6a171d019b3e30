"""The README variables tables are written from meta/argument_specs.yml (scripts/role_docs.py)."""
from __future__ import annotations

import sys

import pytest

from conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "scripts"))

import role_docs  # noqa: E402


@pytest.mark.parametrize(("readme", "options"), [pytest.param(readme, options, id=readme.parent.name)
                                                  for readme, options in sorted(role_docs.role_readmes().items())])
def test_a_role_readme_s_variables_table_is_its_spec_s(readme, options):
    text = readme.read_text()
    assert role_docs.written(text, options) == text, (
        "%s's variables table differs from its meta/argument_specs.yml: run scripts/role_docs.py" % readme)


def test_the_spec_markup_becomes_markdown_in_one_cell():
    assert role_docs.plain(["C(a|b) runs I(once),", "C(f(x)) too"]) == "`a\\|b` runs *once*, `f(x)` too"
    assert role_docs.shown_default("") == '`""`' and role_docs.shown_default(["a"]) == '`["a"]`'
    assert role_docs.meaning({"description": "Key.", "choices": ["x", ""], "no_log": True}) == \
        'Key. One of `x`, `""`. Never logged (`no_log`).'


def test_a_readme_without_the_markers_is_refused():
    with pytest.raises(ValueError):
        role_docs.written("# role\n| variable |\n", {})
