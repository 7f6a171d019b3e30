"""Action plugin for settings_check: on the controller, the stages' variables against their roles' specs."""
from __future__ import annotations

from pathlib import Path

import yaml
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.v100.llm.plugins.plugin_utils.settings_check import settings_errors


class ActionModule(ActionBase):
    """Checks what a run sets against each listed role's meta/argument_specs.yml (settings_check's documentation)."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(("roles", "roles_dir"))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        roles_dir = Path(self._task.args["roles_dir"])
        options_by_role, values, unchecked = {}, {}, []
        for role in self._task.args["roles"]:
            specs = yaml.safe_load((roles_dir / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
            options_by_role[role] = specs["argument_specs"]["main"]["options"]
            for name, spec in options_by_role[role].items():
                if name not in task_vars:
                    continue
                # One value at a time: one that cannot be rendered yet (a vaulted key without the vault's password,
                # which even comparing decrypts; a template naming what a later stage sets) is left to its role,
                # and does not hide the others.
                try:
                    # The role's own default, which the plays read from its role (valid by the interface test; a
                    # templated one is rendered in its role's run): only what a run sets is checked here.
                    if task_vars[name] == spec.get("default"):
                        continue
                    values[name] = self._templar.template(task_vars[name])
                except AnsibleError as error:
                    unchecked.append("%s (%s)" % (name, str(error).splitlines()[0][:120]))
        if unchecked:
            Display().warning("Not checked before the run, left to their roles: %s" % "; ".join(unchecked))
        errors = settings_errors(options_by_role, values)
        result.update(changed=False, checked=sorted(values), unchecked=unchecked, errors=errors)
        if errors:
            result.update(failed=True, msg="%s. Each role's README lists its variables, their types and choices. "
                                           "Nothing on the host was changed." % "; ".join(errors))
        return result
