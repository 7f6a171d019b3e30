#!/usr/bin/python
"""Ansible module: a file's size from its server (HEAD), the token staying with its host across redirects."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: http_head
short_description: Ask an HTTP(S) server whether it gives a file, and its size, without sending the token elsewhere
author:
  - V100 LLM host toolkit
extends_documentation_fragment:
  - v100.llm.model_http
description:
  - Sends a HEAD request for I(url). Redirects are followed, the C(Authorization) header in I(headers) going to
    I(url)'s host only, and a redirect from https to http or to another scheme is refused
    (plugins/module_utils/models/http_get.py).
  - A redirect carrying C(X-Linked-Size) is the answer, as huggingface_hub's C(get_hf_file_metadata) reads it.
    The Hugging Face Hub answers a C(/resolve/) URL of a Git LFS file with a redirect to its CDN carrying the
    file's size there, so the CDN is not asked.
  - Changes nothing on the host.
options:
  url:
    description: The file's URL (a Hugging Face C(/resolve/) URL, a mirror's, or any server's).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Ask how large a model file is
  v100.llm.http_head:
    url: https://huggingface.co/bartowski/google_gemma-3-27b-it-GGUF/resolve/main/google_gemma-3-27b-it-Q4_K_M.gguf
    headers:
      Authorization: "Bearer {{ models_hf_token }}"
  register: head
"""

RETURN = r"""
found:
  description: Whether the server gives the file (HTTP 200, or a redirect carrying X-Linked-Size).
  returned: always
  type: bool
status:
  description: HTTP status of the last answer (-1 when the server was not reached or redirected too often).
  returned: always
  type: int
size:
  description: The file's size in bytes (X-Linked-Size, else Content-Length); 0 when the server does not say.
  returned: always
  type: int
msg:
  description: Why the file was not found, when it was not.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.models.http_get import NOT_ANSWERED, REDIRECTS, REQUEST_ARGUMENT_SPEC, get_keeping_token_home

LINKED_SIZE = "X-Linked-Size"


def main():
    module = AnsibleModule(
        argument_spec={"url": {"type": "str", "required": True}, **REQUEST_ARGUMENT_SPEC},
        supports_check_mode=True,
    )
    url = module.params["url"]
    try:
        _, status, headers = get_keeping_token_home(url, dict(module.params["headers"]), module.params["timeout"],
                                                    module.params["validate_certs"], method="HEAD",
                                                    redirect_answers_with=LINKED_SIZE)
    except NOT_ANSWERED as error:
        module.exit_json(changed=False, found=False, status=-1, size=0, msg="%s was not reached: %s" % (url, error))
    found = status == 200 or (status in REDIRECTS and bool(headers.get(LINKED_SIZE)))
    size = (headers.get(LINKED_SIZE) or headers.get("Content-Length") or "0") if found else "0"
    module.exit_json(changed=False, found=found, status=status, size=int(size) if size.isdigit() else 0,
                     msg="" if found else "%s answered HTTP %s" % (url, status) if status > 0
                     else "%s: too many redirects" % url)


if __name__ == "__main__":
    main()
