"""Action plugin for config_files: fills each entry's content on the controller, then runs the module once."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

SOURCES = ("content", "template", "src")


class ActionModule(ActionBase):
    """Render C(template) entries (the role's templates/) and read C(src) ones (its files/)."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("files",))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp  # unused since Ansible 2.5
        entries = self._task.args.get("files")
        if not isinstance(entries, list):
            raise AnsibleActionFail("config_files: files must be a list of entries, got %r" % (entries,))
        filled = [self._filled(entry, task_vars) for entry in entries]
        result.update(self._execute_module(module_name="v100.llm.config_files", module_args={"files": filled},
                                           task_vars=task_vars))
        return result

    def _filled(self, entry: dict, task_vars: dict) -> dict:
        given = [key for key in SOURCES if entry.get(key) is not None]
        if entry.get("state", "file") == "file" and len(given) != 1:
            raise AnsibleActionFail("config_files: %s: give exactly one of content, template or src (got %s)"
                                    % (entry.get("path"), ", ".join(given) or "none"))
        filled = {key: value for key, value in entry.items() if key not in ("template", "src", "vars")}
        if entry.get("template") is not None:
            # The template lookup renders as the template action does (trim_blocks, ansible_managed).
            lookup = self._shared_loader_obj.lookup_loader.get("ansible.builtin.template", loader=self._loader,
                                                               templar=self._templar)
            filled["content"] = lookup.run([entry["template"]], variables=task_vars,
                                           template_vars=entry.get("vars") or {})[0]
        elif entry.get("src") is not None:
            filled["content"] = to_text(self._loader.get_text_file_contents(self._find_needle("files", entry["src"])))
        return filled
