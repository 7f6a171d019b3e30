"""model_files on real GGUF bytes (the SmolLM2 header prefix, tests/fixtures/models)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil

from ansible_collections.v100.llm.plugins.modules import model_files
import pytest
from ansible.module_utils.testing import patch_module_args
from conftest import FIXTURES
from test_gguf_metadata import build_gguf, split_kvs

PREFIX = FIXTURES / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf-metadata-prefix"
PREFIX_SHA = "cd2d87a25589b59f222688858608478fd7ed55b0cefdc3e96076591029713ce4"


def run(capsys, args, check_mode=False, expect_failure=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            model_files.main()
    result = json.loads(capsys.readouterr().out)
    assert (exit_info.value.code != 0) == expect_failure, result
    return result


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "models" / "smol.gguf"
    path.parent.mkdir()
    shutil.copy(PREFIX, path)
    return path


def test_an_unstamped_file_is_not_up_to_date_until_recorded(model, capsys):
    spec = {"models": [{"name": "smol", "path": str(model), "sha256": PREFIX_SHA}]}
    before = run(capsys, spec)
    assert before["changed"] is False
    assert before["models"][0]["exists"] and not before["models"][0]["up_to_date"]
    assert before["models"][0]["gguf"] is None
    assert before["free_bytes"] > 0

    recorded = run(capsys, dict(spec, record=True))
    assert recorded["changed"] is True
    entry = recorded["models"][0]
    assert entry["up_to_date"] and entry["sha256"] == PREFIX_SHA and entry["size"] == 1785664
    assert entry["gguf"]["architecture"] == "llama"
    assert entry["gguf"]["block_count"] == 30
    assert entry["gguf"]["head_count"] == 9 and entry["gguf"]["head_count_kv"] == 3
    assert entry["gguf"]["context_length"] == 8192
    assert entry["gguf"]["quantization"] == "Q4_1"
    stamp = json.loads((model.parent / ".stamps" / "smol.gguf.json").read_text())
    assert stamp == {"sha256": PREFIX_SHA, "size": 1785664, "mtime_ns": os.stat(model).st_mtime_ns}

    again = run(capsys, dict(spec, record=True))
    assert again["changed"] is False and again["models"][0]["up_to_date"]


def test_a_touched_file_is_hashed_again(model, capsys):
    spec = {"models": [{"name": "smol", "path": str(model), "sha256": PREFIX_SHA}], "record": True}
    run(capsys, spec)
    os.utime(model, ns=(1, 1))
    assert run(capsys, dict(spec, record=False))["models"][0]["up_to_date"] is False
    assert run(capsys, spec)["changed"] is True


def test_a_corrupt_file_fails_and_is_not_stamped(model, capsys):
    with open(model, "r+b") as handle:
        handle.seek(1000)
        handle.write(b"X")
    failed = run(capsys, {"models": [{"name": "smol", "path": str(model), "sha256": PREFIX_SHA}], "record": True},
                 expect_failure=True)
    assert "is corrupt or another one" in failed["msg"] and PREFIX_SHA in failed["msg"]
    assert not (model.parent / ".stamps" / "smol.gguf.json").exists()


def test_check_mode_writes_no_stamp(model, capsys):
    result = run(capsys, {"models": [{"name": "smol", "path": str(model), "sha256": PREFIX_SHA}], "record": True},
                 check_mode=True)
    assert result["changed"] is True
    assert not (model.parent / ".stamps").exists()


def test_a_missing_file_is_reported_and_fails_a_record(tmp_path, capsys):
    spec = {"models": [{"name": "x", "path": str(tmp_path / "nope" / "x.gguf"), "sha256": PREFIX_SHA}]}
    assert run(capsys, spec)["models"][0]["exists"] is False
    failed = run(capsys, dict(spec, record=True), expect_failure=True)
    assert "is missing after the fetch" in failed["msg"]


def test_a_file_that_is_not_gguf_fails_once_verified(tmp_path, capsys):
    page = tmp_path / "x.gguf"
    page.write_bytes(b"<html>Access denied</html>")
    sha = hashlib.sha256(page.read_bytes()).hexdigest()
    failed = run(capsys, {"models": [{"name": "x", "path": str(page), "sha256": sha}], "record": True},
                 expect_failure=True)
    assert "is not a readable GGUF model" in failed["msg"]


def test_other_files_are_verified_without_metadata(tmp_path, capsys):
    other = tmp_path / "config.json"
    other.write_text("{}")
    result = run(capsys, {"models": [{"name": "cfg", "path": str(other)}], "record": True})
    assert result["models"][0]["sha256"] == hashlib.sha256(b"{}").hexdigest()
    assert result["models"][0]["gguf"] is None


def test_parts_after_the_first_of_a_split_set_are_verified_without_metadata(tmp_path, capsys):
    # Part 2 of a split set made by llama-gguf-split carries only split.* keys: no general.architecture.
    part_2 = tmp_path / "Q-00002-of-00002.gguf"
    part_2.write_bytes(build_gguf(split_kvs(1, 2)))
    result = run(capsys, {"models": [{"name": "q (part 2 of 2)", "path": str(part_2), "part": 2}], "record": True})
    assert result["models"][0]["up_to_date"] is True and result["models"][0]["gguf"] is None
    failed = run(capsys, {"models": [{"name": "q", "path": str(part_2)}], "record": True}, expect_failure=True)
    assert "no general.architecture" in failed["msg"]


def test_a_folder_file_is_checked_by_its_git_blob_id_and_other_revisions_files_are_leftovers(tmp_path, capsys):
    """A model folder's small files carry the git blob id of the Hub's listing (`git hash-object` of the bytes);
    a stamped file no order names (another revision's shard, which vLLM's *.safetensors glob would load) is a
    leftover, with its stamp; what the owner put there without a stamp is not."""
    folder = tmp_path / "models" / "smol-folder"
    (folder / ".stamps").mkdir(parents=True)
    (folder / "config.json").write_bytes(b"hello\n")
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"old")
    (folder / ".stamps" / "model-00002-of-00002.safetensors.json").write_text("{}")
    (folder / "lora").mkdir()  # the owner's: no stamp, not touched
    (folder / "my_template.jinja").write_text("{{ messages }}")
    spec = {"models": [{"name": "smol-folder/config.json", "path": str(folder / "config.json"), "sha256": "",
                        "git_sha1": "ce013625030ba8dba906f756967f9e9ca394464a", "folder": str(folder)}],
            "record": True}
    recorded = run(capsys, spec)
    assert recorded["models"][0]["up_to_date"] and recorded["models"][0]["git_sha1"] == spec["models"][0]["git_sha1"]
    assert json.loads((folder / ".stamps" / "config.json.json").read_text())["git_sha1"] == spec["models"][0]["git_sha1"]
    assert recorded["leftover_files"] == [str(folder / "model-00002-of-00002.safetensors"),
                                          str(folder / ".stamps" / "model-00002-of-00002.safetensors.json")]

    (folder / "config.json").write_bytes(b"HELLO\n")
    changed = run(capsys, spec, expect_failure=True)
    assert "has git_sha1 " in changed["msg"] and "not the ce013625" in changed["msg"]
