#!/usr/bin/env python3
"""Each role's README variables table, generated from its meta/argument_specs.yml.

A variable is documented once, in its role's argument_specs (what Ansible
checks input against); the README's table between the markers below is
written from it, and tests/unit/test_role_docs.py fails when it is stale.

    scripts/role_docs.py          # rewrite the tables
    scripts/role_docs.py --check  # name the READMEs whose table differs, exit 1
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping

import yaml

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- variables: written by scripts/role_docs.py from meta/argument_specs.yml; edit the spec -->"
END = "<!-- end of the written variables -->"
# Ansible's documentation markup, as the specs use it: C(code) and I(italic).
MARKUP = {"C": "`%s`", "I": "*%s*"}
MARKED = re.compile(r"\b([CI])\(((?:[^()]|\([^()]*\))*)\)")


def plain(text: Any) -> str:
    """A spec description (a string or a list of them) as one Markdown table cell."""
    text = " ".join(text) if isinstance(text, list) else str(text)
    text = MARKED.sub(lambda match: MARKUP[match.group(1)] % match.group(2), " ".join(text.split()))
    return text.replace("|", "\\|")


def shown_default(value: Any) -> str:
    if isinstance(value, bool):
        return "`%s`" % str(value).lower()
    if isinstance(value, str):
        return "`%s`" % value if value else '`""`'
    return ("`%s`" % json.dumps(value)).replace("|", "\\|")


def shown_type(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type", "str")
    return "list of %s" % spec["elements"] if kind == "list" and spec.get("elements") else kind


def meaning(spec: Mapping[str, Any]) -> str:
    words = plain(spec["description"])
    if spec.get("choices"):
        words += " One of %s." % ", ".join(shown_default(choice) for choice in spec["choices"])
    if spec.get("no_log"):
        words += " Never logged (`no_log`)."
    return words


def table(options: Mapping[str, Mapping[str, Any]]) -> List[str]:
    rows = ["| variable | type | default | meaning |", "| --- | --- | --- | --- |"]
    rows += ["| `%s` | %s | %s | %s |" % (name, shown_type(spec), shown_default(spec.get("default")), meaning(spec))
             for name, spec in options.items()]
    return rows


def written(readme: str, options: Mapping[str, Mapping[str, Any]]) -> str:
    """The README with its variables table (between BEGIN and END) written from the options."""
    lines = readme.split("\n")
    if BEGIN not in lines or END not in lines:
        raise ValueError("no %r ... %r block" % (BEGIN, END))
    start, end = lines.index(BEGIN), lines.index(END)
    return "\n".join(lines[:start + 1] + table(options) + lines[end:])


def role_readmes() -> Dict[Path, Dict[str, Any]]:
    found = {}
    for spec_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = spec_file.parents[1]
        found[role / "README.md"] = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"]["options"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say which tables are stale")
    arguments = parser.parse_args()
    stale = []
    for readme, options in role_readmes().items():
        before = readme.read_text()
        after = written(before, options)
        if after != before:
            stale.append(str(readme.relative_to(ROOT)))
            if not arguments.check:
                readme.write_text(after)
    if arguments.check and stale:
        print("stale variables tables (run scripts/role_docs.py): %s" % ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
