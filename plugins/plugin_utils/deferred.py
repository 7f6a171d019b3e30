"""A module_utils file that the filter plugins load when one of its functions is first called.

Ansible loads every filter plugin in each task's worker process (a fork of
the controller), and loading all of the module_utils there took 0.15 s, on
tasks that mostly call none of them.
"""
from __future__ import annotations

import importlib
from typing import Any


def load(name: str) -> Any:
    """plugins/module_utils/<name>.py (a dotted name: "llama.server_plan"), by its collection path."""
    try:
        return importlib.import_module("ansible_collections.v100.llm.plugins.module_utils." + name)
    except Exception as exc:
        # Not a ValueError a filter would report as bad input.
        raise RuntimeError("plugins/module_utils/%s.py did not load: %s" % (name.replace(".", "/"), exc)) from exc


class Deferred:
    """Stands for the module_utils file `name` until one of its functions is called."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(load(self.name), attribute)(*args, **kwargs)
        call.__name__ = attribute
        return call
