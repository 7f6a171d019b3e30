"""Preflight's check of the stages' variables before any change (action settings_check): each role's
meta/argument_specs.yml against the values a run sets. Each role checks its own again when it starts, but only
after the stages before it changed the host."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

MASK = "********"


def without_defaults(options: Mapping[str, Any]) -> Dict[str, Any]:
    """A role's argument_specs options without their defaults, at any depth: only what a run sets is checked. A
    role's defaults are checked by its interface test, and a templated one is text until the role's run renders it.
    """
    return {name: {key: (without_defaults(value) if key == "options" and isinstance(value, Mapping) else value)
                   for key, value in spec.items() if key != "default"}
            for name, spec in options.items()}


def settings_errors(options_by_role: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]) -> List[str]:
    """{role: its argument_specs main options}, {variable: rendered value} -> one refusal per bad value, each naming
    the variable (Ansible's own wording: "argument 'vllm_server_port' is of type str and we were unable to convert
    to int ..."). The values of no_log options never appear in them."""
    errors: List[str] = []
    for options in options_by_role.values():
        given = {name: values[name] for name in options if name in values}
        if not given:
            continue
        found = ArgumentSpecValidator(without_defaults(options)).validate(given, validate_role_argument_spec=True)
        secrets = [str(given[name]) for name, spec in options.items()
                   if spec.get("no_log") and name in given and str(given[name])]
        for message in found.error_messages:
            for secret in secrets:
                message = message.replace(secret, MASK)
            errors.append(message)
    return errors
