#!/usr/bin/python
"""Ansible module: whether model files on the host are the ones asked for; stamp them once verified."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_files
short_description: Check model files against their sha256 through stamps, stamp verified files, read GGUF metadata
description:
  - For each model, looks for its file and its stamp (C(<dir>/.stamps/<file>.json) holding the sha256, size and mtime
    written after the file hashed to its sha256). A file whose stamp matches is up to date without being hashed again.
  - With I(record=true), hashes every file whose stamp does not match and writes its stamp; a file whose sha256
    differs from the one asked for fails the module (nothing is stamped for it).
  - Reads the GGUF header (architecture, layers, heads, context length, quantization) of up-to-date C(.gguf) files
    (part 1 only of a split set).
  - Also reports the free space of the file system the first model's folder is (or will be) on.
options:
  models:
    description:
      - The files, as the models role plans them. Each needs C(name) and C(path) (absolute); C(sha256) is the
        sha256 the file must have (empty takes the file's own); C(git_sha1), instead, its git blob id (a
        Hugging Face folder's small files); C(part) is the file's part number in a split GGUF
        set (1 when absent; only part 1 has metadata to read); C(folder), the model folder the file belongs to.
        Other keys are ignored.
    type: list
    elements: dict
    required: true
  record:
    description: Hash files whose stamp does not match and stamp them; fail on a sha256 mismatch.
    type: bool
    default: false
author:
  - V100 LLM host toolkit
"""

EXAMPLES = r"""
- name: Which model files need fetching
  v100.llm.model_files:
    models:
      - name: smollm2
        path: /srv/models/SmolLM2-135M-Instruct.Q4_1.gguf
        sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  register: models_state
"""

RETURN = r"""
models:
  description: One entry per model, in order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The model's name.
      type: str
    path:
      description: The file.
      type: str
    exists:
      description: Whether the file exists.
      type: bool
    up_to_date:
      description: Whether the file is verified (its stamp matches, or it was hashed and stamped now).
      type: bool
    size:
      description: Size in bytes, null when absent.
      type: int
    sha256:
      description: The verified sha256, null until verified (and for a file checked by its git blob id).
      type: str
    git_sha1:
      description: The verified git blob id of a file checked by it (C(git_sha1) given), else null.
      type: str
    gguf:
      description:
        - GGUF summary of an up-to-date C(.gguf) file (architecture, block_count, head_count, head_count_kv,
          context_length, quantization and more), else null.
      type: dict
    partial_bytes:
      description: Bytes an interrupted download left in C(.partial/<file>.part), which model_download continues.
      type: int
free_bytes:
  description: Free bytes on the file system holding the first model's folder.
  returned: always
  type: int
leftover_partials:
  description: Files in the models' C(.partial) folders that no listed model's download continues.
  returned: always
  type: list
leftover_files:
  description:
    - Stamped top-level files of model folders (models with C(folder)) that no model names now, and their stamps,
      that is what another revision of the folder left. Files without a stamp (the owner's) are not listed.
  returned: always
  type: list
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.v100.llm.plugins.module_utils.models.gguf import GGUFError, model_summary, read_gguf_metadata
from ansible_collections.v100.llm.plugins.module_utils.models.sources import file_digest, stamp_matches, wanted_digest
from ansible_collections.v100.llm.plugins.module_utils.host.stamps import read_file_stamp, stamp_path, write_stamp

def partial_path(path):
    """Where model_download keeps the bytes of an unfinished download of path."""
    return os.path.join(os.path.dirname(path), ".partial", os.path.basename(path) + ".part")


def leftover_partials(specs, results):
    """Files in the models' .partial folders that no pending download continues (an up-to-date model's too)."""
    continued = {partial_path(spec["path"]) for spec, result in zip(specs, results) if not result["up_to_date"]}
    leftovers = []
    for folder in sorted({os.path.join(os.path.dirname(spec["path"]), ".partial") for spec in specs}):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        leftovers += [os.path.join(folder, name) for name in sorted(names) if os.path.join(folder, name) not in continued]
    return leftovers


def leftover_files(specs):
    """Files an earlier revision of a model folder left: stamped (so this role fetched them) and named by none of
    its orders now (another revision's weights, which vLLM's *.safetensors glob would load), with their stamps.
    What the role did not fetch (a file or folder of the owner's) is not touched."""
    wanted = {spec["path"] for spec in specs}
    leftovers = []
    for folder in sorted({spec["folder"] for spec in specs if spec["folder"]}):
        try:
            stamps = os.listdir(os.path.join(folder, ".stamps"))
        except OSError:
            continue
        for stamp in sorted(stamps):
            path = os.path.join(folder, stamp[:-len(".json")])
            if stamp.endswith(".json") and not stamp.startswith(".") and path not in wanted:
                leftovers += [path, stamp_path(path)] if os.path.isfile(path) else [stamp_path(path)]
    return leftovers


def free_bytes(folder):
    while not os.path.exists(folder):
        folder = os.path.dirname(folder) or "/"
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize


def gguf_summary(module, path):
    try:
        return model_summary(read_gguf_metadata(path, max_array_items=0))
    except (GGUFError, OSError) as error:
        module.fail_json(msg="%s is not a readable GGUF model: %s. Check the source gives the .gguf file "
                             "itself (not a page or an archive)." % (path, error))


def check_one(module, spec, record):
    """-> (result dict, whether a stamp was (or in check mode would be) written)."""
    path = spec["path"]
    algorithm, wanted = wanted_digest(spec)
    result = dict(name=spec["name"], path=path, exists=False, up_to_date=False, size=None, sha256=None, git_sha1=None,
                  gguf=None,
                  partial_bytes=os.path.getsize(partial_path(path)) if os.path.isfile(partial_path(path)) else 0)
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        if record:
            module.fail_json(msg="%s (model %s) is missing after the fetch." % (path, spec["name"]))
        return result, False
    result.update(exists=True, size=stat.st_size)
    stamp = read_file_stamp(path)
    stamped = stamp_matches(stamp, algorithm, wanted or (stamp or {}).get(algorithm, ""), stat.st_size,
                            stat.st_mtime_ns)
    wrote = False
    if stamped:
        result[algorithm] = stamp[algorithm]
    elif record:
        actual = file_digest(path, algorithm)
        if wanted and actual != wanted:
            module.fail_json(msg="%s (model %s) has %s %s, not the %s asked for: the file is corrupt or "
                                 "another one. It is not used; remove it or correct the %s." % (
                                     path, spec["name"], algorithm, actual, wanted, algorithm))
        if not module.check_mode:
            write_stamp(path, algorithm, actual, stat)
        result[algorithm], stamped, wrote = actual, True, True
    result["up_to_date"] = stamped
    if stamped:
        # Nothing continues it: model_files reports it as a leftover.
        result["partial_bytes"] = 0
    # Parts 2..N of a split set carry tensors only; llama.cpp reads the metadata from part 1.
    if stamped and path.endswith(".gguf") and spec["part"] == 1:
        result["gguf"] = gguf_summary(module, path)
    return result, wrote


def main():
    module = AnsibleModule(
        argument_spec=dict(
            # The models role's fetch orders, other keys ignored.
            models=dict(type="list", elements="dict", required=True),
            record=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    specs = []
    for index, model in enumerate(module.params["models"]):
        if not model.get("name") or not str(model.get("path", "")).startswith("/"):
            module.fail_json(msg="models[%d] needs a name and an absolute path (got %r)." % (index, model))
        specs.append(dict(name=str(model["name"]), path=str(model["path"]), sha256=str(model.get("sha256") or ""),
                          git_sha1=str(model.get("git_sha1") or ""), part=int(model.get("part") or 1),
                          folder=str(model.get("folder") or "")))
    results, changed = [], False
    for spec in specs:
        result, wrote = check_one(module, spec, module.params["record"])
        results.append(result)
        changed = changed or wrote
    folder = os.path.dirname(specs[0]["path"]) if specs else "/"
    module.exit_json(changed=changed, models=results, free_bytes=free_bytes(folder),
                     leftover_partials=leftover_partials(specs, results), leftover_files=leftover_files(specs))


if __name__ == "__main__":
    main()
