#!/usr/bin/python
"""Ansible module: download one model file, continuing what a killed run left, sha256 over the whole file."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_download
short_description: Download a file, resuming a partial one with HTTP Range, and move it in place once its digest matches
description:
  - A I(dest) whose sha256 already matches is left alone (hashed, not downloaded again).
  - Otherwise the bytes go to I(partial_dir)/<name of dest>.part. A partial file from an earlier, interrupted run is
    continued with C(Range) (plugins/module_utils/models/download.py); a server that answers 200 instead of 206
    is read from the start. The sha256 is taken over the whole file, which is then synced and renamed to I(dest)
    (same file system) and stamped (C(<dir of dest>/.stamps/<name>.json), as the models role's model_files
    writes it, so it is not hashed again). A mismatch removes the partial file and fails.
  - Holds the host's run lock (C(/run/lock/v100-llm.lock)) while it downloads, so that a run started while a
    killed run's download still goes on waits for it (role host_guard).
options:
  url:
    description: Where the file is.
    type: str
    required: true
  dest:
    description: The file's final path.
    type: path
    required: true
  sha256:
    description: Its sha256 (64 hex digits).
    type: str
  git_sha1:
    description:
      - Instead of I(sha256), its git blob id (40 hex digits), what a Hugging Face listing gives a small file
        kept in git rather than Git LFS.
    type: str
  partial_dir:
    description: Folder for partial files, on the same file system as I(dest).
    type: path
    required: true
extends_documentation_fragment:
  - v100.llm.model_http
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Download a model
  v100.llm.model_download:
    url: https://huggingface.co/org/repo/resolve/main/model.gguf
    dest: /srv/models/model.gguf
    sha256: "{{ sha }}"
    partial_dir: /srv/models/.partial
"""

RETURN = r"""
resumed_from:
  description: Bytes the earlier run had left, continued from (0 for a fresh download).
  returned: always
  type: int
size:
  description: Size of the file in place.
  returned: always
  type: int
"""

import fcntl
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.models.http_get import REQUEST_ARGUMENT_SPEC, get_keeping_token_home
from ansible_collections.v100.llm.plugins.module_utils.models.sources import file_digest, wanted_digest
from ansible_collections.v100.llm.plugins.module_utils.host.stamps import fsync_path, write_stamp
from ansible_collections.v100.llm.plugins.module_utils.models.download import continuation, range_header
from ansible_collections.v100.llm.plugins.module_utils.host.run_lock import RUN_LOCK

CHUNK = 4 * 1024 * 1024


def _open(module, url, headers):
    """GET url (the token stays with its host: models/http_get.py). Returns (answer, status, Content-Range); answer is
    None for an error status."""
    params = module.params
    try:
        answer, status, answer_headers = get_keeping_token_home(url, headers, params["timeout"],
                                                                params["validate_certs"])
    except ValueError as refused:
        module.fail_json(msg=str(refused))
    if status == -1:
        module.fail_json(msg="%s: more than 10 redirects" % params["url"])
    return answer, status, answer_headers.get("Content-Range")


def _fetch(module, part):
    """Bring part up to the whole file; returns the bytes it started from."""
    size = os.path.getsize(part) if os.path.exists(part) else 0
    headers = dict(module.params["headers"])
    answer, status, content_range = _open(module, module.params["url"], dict(headers, **range_header(size)))
    how = continuation(size, status, content_range)
    if how == "complete":
        return size
    if how == "restart" and status != 200:
        # The partial file is not a prefix of this file: ask for all of it.
        answer, status, content_range = _open(module, module.params["url"], headers)
        how = "restart" if status == 200 else "error"
    if how == "error":
        gated = (" The repository is gated or private: set models_hf_token (in a vault) to a token that may read it."
                 if status in (401, 403) else "")
        module.fail_json(msg="%s answered HTTP %s to %s.%s" % (
            module.params["url"], status, "a request for bytes %d-" % size if size else "the download", gated))
    with open(part, "ab" if how == "append" else "wb") as handle:
        for block in iter(lambda: answer.read(CHUNK), b""):
            handle.write(block)
        handle.flush()
        os.fsync(handle.fileno())
    return size if how == "append" else 0


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "dest": {"type": "path", "required": True},
            "sha256": {"type": "str"},
            "git_sha1": {"type": "str"},
            "partial_dir": {"type": "path", "required": True},
            **REQUEST_ARGUMENT_SPEC,
        },
        required_one_of=[("sha256", "git_sha1")],
        mutually_exclusive=[("sha256", "git_sha1")],
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    algorithm, wanted = wanted_digest(module.params)
    wanted = wanted.lower()
    if os.path.exists(dest) and file_digest(dest, algorithm) == wanted:
        module.exit_json(changed=False, resumed_from=0, size=os.path.getsize(dest))
    if module.check_mode:
        module.exit_json(changed=True, resumed_from=0, size=0)
    part = os.path.join(module.params["partial_dir"], os.path.basename(dest) + ".part")
    with open(RUN_LOCK, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        resumed = _fetch(module, part)
        before_hash = os.stat(part)
        got = file_digest(part, algorithm)
        if got != wanted:
            os.remove(part)
            module.fail_json(msg="%s has %s %s, not %s: removed the partial file; the next attempt downloads it "
                                 "again." % (module.params["url"], algorithm, got, wanted), resumed_from=resumed)
        os.chmod(part, 0o644)
        os.rename(part, dest)
        fsync_path(os.path.dirname(dest))
        # Stamped at once: a run that dies before the models role's verify step leaves no unstamped download (it
        # would be hashed again, and after a revision change not known as the role's own to remove).
        write_stamp(dest, algorithm, got, before_hash)
    module.exit_json(changed=True, resumed_from=resumed, size=os.path.getsize(dest))


if __name__ == "__main__":
    main()
