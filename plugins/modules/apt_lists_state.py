#!/usr/bin/python
"""Ansible module: which configured Debian suites apt has not read the package lists of."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_lists_state
short_description: Tell which suites need C(apt-get update) before their components can be installed from
description:
  - Lists the package indexes every source configures for the host's architecture (C(apt-get indextargets)),
    and returns the suites with an index of I(components) that apt has not read. An index is unread when its file
    is not in apt's lists folder (C(/var/lib/apt/lists) by default) and the suite's Release file there offers it
    with content (plugins/module_utils/driver/debian_sources.py).
  - An index the archive publishes empty (bookworm-updates' non-free after a point release) gets no file, so
    the absence of a file alone would call for a refresh on every run.
  - State-based, so a run that died between writing a source and refreshing is repaired by the next one.
  - Changes nothing.
options:
  suites:
    description: The suites to look at (C(bookworm), C(bookworm-updates)).
    type: list
    elements: str
    required: true
  components:
    description: The components to look at.
    type: list
    elements: str
    default: [contrib, non-free, non-free-firmware]
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Ask which suites apt has not read
  v100.llm.apt_lists_state:
    suites: [bookworm, bookworm-updates, bookworm-security]
  register: lists_state
"""

RETURN = r"""
unread:
  description: The suites with an unread index, in the order of the sources.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.driver.debian_sources import COMPONENTS, unread_suites

DEFAULT_LISTS = "/var/lib/apt/lists"


def main():
    module = AnsibleModule(
        argument_spec={"suites": {"type": "list", "elements": "str", "required": True},
                       "components": {"type": "list", "elements": "str", "default": list(COMPONENTS)}},
        supports_check_mode=True,
    )
    architecture = module.run_command(["dpkg", "--print-architecture"], check_rc=True)[1].strip()
    out = module.run_command(["apt-get", "indextargets", "--no-release-info", "--format",
                              "$(RELEASE)\t$(COMPONENT)\t$(FILENAME)\t$(METAKEY)",
                              "Created-By: Packages", "Architecture: " + architecture],
                             check_rc=True, environ_update={"LANG": "C"})[1]
    targets = [tuple(line.split("\t")) for line in out.splitlines() if line.count("\t") == 3]
    # apt's Dir::State::Lists, as its own file names say.
    folder = os.path.dirname(targets[0][2]) if targets else DEFAULT_LISTS
    lists = os.listdir(folder) if os.path.isdir(folder) else []
    releases = {}
    for name in lists:
        if name.endswith("Release"):
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                releases[name] = handle.read()
    module.exit_json(changed=False, unread=unread_suites(targets, lists, releases, module.params["suites"],
                                                         module.params["components"]))


if __name__ == "__main__":
    main()
