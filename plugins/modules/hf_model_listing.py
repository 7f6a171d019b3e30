#!/usr/bin/python
"""Ansible module: the files of a Hugging Face model repository at a revision, with their sizes and digests."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_model_listing
short_description: List a Hugging Face model repository's files (size, sha256 or git blob id) at a revision
description:
  - Asks I(url), the tree API huggingface_hub's C(list_repo_tree) uses
    (C({endpoint}/api/models/{repo}/tree/{revision})), and follows its pages (C(Link) headers with C(rel="next");
    a page on another host, as a mirror may link to the Hub's, is asked of I(url)'s endpoint). Each file comes
    with its path, size, git blob id (C(oid)) and, for a Git LFS file, C(lfs.oid), its sha256.
  - With I(kept) set, a listing an earlier run kept there (a JSON object with C(url) and C(files); the models role
    keeps that of a revision that is a commit) for the same I(url) is read instead of the network, so a folder
    pinned to a commit re-runs offline. Changes nothing on the host.
  - The token in I(headers) goes to I(url)'s host only, also across redirects.
options:
  url:
    description: The listing's URL.
    type: str
    required: true
  kept:
    description: A listing kept by an earlier run ("" asks the server).
    type: path
    default: ""
extends_documentation_fragment:
  - v100.llm.model_http
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: List a model folder's files
  v100.llm.hf_model_listing:
    url: https://huggingface.co/api/models/Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4/tree/main
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
from ansible_collections.v100.llm.plugins.module_utils.models.http_get import REQUEST_ARGUMENT_SPEC, get_keeping_token_home, without_authorization
from ansible.module_utils.six.moves.urllib.parse import urljoin, urlparse

NEXT_PAGE = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
MAX_PAGES = 100


def next_page(url, link):
    """The next page's URL on url's endpoint: a mirror may answer with the Hub's own host
    (https://huggingface.co/api/models/...; hf-mirror-site issue 65), which a filtered network cannot reach, so a
    link to another host is asked of url's endpoint (the part before /api/models/) instead."""
    following = NEXT_PAGE.search(link or "")
    if not following:
        return ""
    target = urljoin(url, following.group(1))
    if urlparse(target).netloc != urlparse(url).netloc and "/api/models/" in target:
        target = url[:url.index("/api/models/")] + target[target.index("/api/models/"):]
    return target


def _kept(path, url):
    try:
        with open(path) as handle:
            kept = json.load(handle)
    except (OSError, ValueError):
        return None
    return kept.get("files") if isinstance(kept, dict) and kept.get("url") == url else None


def _pages(module, url, headers):
    files, asked, home = [], set(), urlparse(url).netloc
    while url:
        if url in asked or len(asked) >= MAX_PAGES:
            module.fail_json(msg="%s: the listing's pages do not end (%d asked)" % (module.params["url"], len(asked)),
                             status=200)
        asked.add(url)
        # A page on another host than the one the token was given for goes without it.
        sent = headers if urlparse(url).netloc == home else without_authorization(headers)
        try:
            answer, status, answer_headers = get_keeping_token_home(url, sent, module.params["timeout"],
                                                                    module.params["validate_certs"])
        except (OSError, ValueError) as error:
            module.fail_json(msg="%s was not reached: %s" % (url, error), status=-1)
        if answer is None:
            module.fail_json(msg="%s answered HTTP %s" % (url, status), status=status)
        try:
            page = json.loads(answer.read())
        except ValueError:
            module.fail_json(msg="%s did not answer a JSON listing" % url, status=200)
        if not isinstance(page, list):
            module.fail_json(msg="%s did not answer a list of files" % url, status=200)
        files += page
        url = next_page(url, answer_headers.get("Link"))
    return files


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "kept": {"type": "path", "default": ""},
            **REQUEST_ARGUMENT_SPEC,
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
