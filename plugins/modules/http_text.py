#!/usr/bin/python
"""Ansible module: GET a small text file (a model's config.json), the token staying with its host across redirects."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: http_text
short_description: Read a small text file over HTTP(S), following redirects without sending the token elsewhere
description:
  - GETs I(url) and returns its text. Redirects are followed (the Hugging Face Hub answers a C(/resolve/) URL of a
    small file with a 307 to C(/api/resolve-cache/) on its own host, and a large one with a redirect to its CDN);
    the C(Authorization) header in I(headers) goes to I(url)'s host only, and a redirect from https to http or to
    another scheme is refused (plugins/module_utils/models/http_get.py).
  - Changes nothing on the host.
options:
  url:
    description: The file's URL.
    type: str
    required: true
  max_bytes:
    description: Longest answer read; a longer one fails.
    type: int
    default: 4194304
extends_documentation_fragment:
  - v100.llm.model_http
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Read a repository's config.json
  v100.llm.http_text:
    url: https://huggingface.co/Qwen/Qwen2.5-14B-Instruct-AWQ/resolve/main/config.json
  register: config
"""

RETURN = r"""
content:
  description: The answer's text (UTF-8).
  returned: success
  type: str
status:
  description: HTTP status of the last answer (-1 when the server was not reached or redirected too often).
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.models.http_get import NOT_ANSWERED, REQUEST_ARGUMENT_SPEC, get_keeping_token_home


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "max_bytes": {"type": "int", "default": 4 * 1024 * 1024},
            **REQUEST_ARGUMENT_SPEC,
        },
        supports_check_mode=True,
    )
    url, limit = module.params["url"], module.params["max_bytes"]
    try:
        answer, status, _ = get_keeping_token_home(url, dict(module.params["headers"]), module.params["timeout"],
                                                   module.params["validate_certs"])
    except NOT_ANSWERED as error:
        module.fail_json(msg="%s was not read: %s" % (url, error), status=-1)
    if answer is None:
        module.fail_json(msg="%s answered HTTP %s" % (url, status) if status > 0 else "%s: too many redirects" % url,
                         status=status)
    body = answer.read(limit + 1)
    if len(body) > limit:
        module.fail_json(msg="%s is longer than %d bytes" % (url, limit), status=status)
    module.exit_json(changed=False, content=body.decode("utf-8", errors="replace"), status=status)


if __name__ == "__main__":
    main()
