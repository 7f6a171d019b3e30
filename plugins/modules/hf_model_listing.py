#!/usr/bin/python
"""Ansible module: the files of a Hugging Face model repository at a revision, with their sizes and digests."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_model_listing
short_description: List a Hugging Face model repository's files (size, sha256 or git blob id) at a revision
description:
  - Asks I(url), the tree API huggingface_hub's C(list_repo_tree) uses (C({endpoint}/api/models/{repo}/tree/{revision}?recursive=true)),
    and follows its C(Link: <...>; rel="next") pages. Each file comes with its path, size, git blob id (C(oid)) and,
    for a Git LFS file, C(lfs.oid), its sha256.
  - With I(kept) set, a listing an earlier run kept there (JSON C({"url": ..., "files": [...]}), the models role
    keeps that of a revision that is a commit) for the same I(url) is read instead of the network: a folder
    pinned to a commit re-runs offline. Changes nothing on the host.
  - The token in I(headers) goes to I(url)'s host only.
options:
  url:
    description: The listing's URL.
    type: str
    required: true
  kept:
    description: A listing kept by an earlier run ("" asks the server).
    type: path
    default: ""
  headers:
    description: Request headers (an C(Authorization) token).
    type: dict
    default: {}
  timeout:
    description: Seconds a connection or read may stall.
    type: int
    default: 60
  validate_certs:
    description: Check the server's TLS certificate.
    type: bool
    default: true
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: List a model folder's files
  hf_model_listing:
    url: https://huggingface.co/api/models/Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4/tree/main?recursive=true
  register: listing
"""

RETURN = r"""
files:
  description: The tree API's items (type, path, size, oid and, for Git LFS files, lfs).
  returned: success
  type: list
  elements: dict
from_kept:
  description: Whether the listing was read from I(kept).
  returned: success
  type: bool
status:
  description: HTTP status of a failed request (-1 when the server was not reached), else 200.
  returned: always
  type: int
"""

import json
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urljoin, urlparse
from ansible.module_utils.urls import open_url

NEXT_PAGE = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def _kept(path, url):
    try:
        with open(path) as handle:
            kept = json.load(handle)
    except (OSError, ValueError):
        return None
    return kept.get("files") if isinstance(kept, dict) and kept.get("url") == url else None


def _pages(module, url, headers):
    files = []
    while url:
        try:
            answer = open_url(url, headers=headers, timeout=module.params["timeout"],
                              validate_certs=module.params["validate_certs"])
        except HTTPError as error:
            module.fail_json(msg="%s answered HTTP %s" % (url, error.code), status=error.code)
        except (URLError, OSError) as error:
            module.fail_json(msg="%s was not reached: %s" % (url, error), status=-1)
        try:
            page = json.loads(answer.read())
        except ValueError:
            module.fail_json(msg="%s did not answer a JSON listing" % url, status=200)
        if not isinstance(page, list):
            module.fail_json(msg="%s did not answer a list of files" % url, status=200)
        files += page
        following = NEXT_PAGE.search(answer.headers.get("Link") or "")
        target = urljoin(url, following.group(1)) if following else ""
        if target and urlparse(target).netloc != urlparse(url).netloc:
            headers = {name: value for name, value in headers.items() if name.lower() != "authorization"}
        url = target
    return files


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "kept": {"type": "path", "default": ""},
            "headers": {"type": "dict", "default": {}, "no_log": True},
            "timeout": {"type": "int", "default": 60},
            "validate_certs": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    url, kept = module.params["url"], module.params["kept"]
    files = _kept(kept, url) if kept else None
    if files is not None:
        module.exit_json(changed=False, files=files, from_kept=True, status=200)
    module.exit_json(changed=False, files=_pages(module, url, dict(module.params["headers"])), from_kept=False,
                     status=200)


if __name__ == "__main__":
    main()
