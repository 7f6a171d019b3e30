"""models_list -> fetch orders; stamps."""
from __future__ import annotations

import re

import pytest

from ansible_collections.v100.llm.plugins.module_utils.models.sources import (fetch_plan, file_digest, folder_orders, hf_resolve_url, models_files,
                                                planned_files, split_parts, stamp_matches)

SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def plan(models, endpoint="https://huggingface.co"):
    return fetch_plan(models, "/srv/models", endpoint)


def test_the_three_sources():
    result = plan([
        {"name": "smol", "url": "https://mirror.example/m/SmolLM2-135M-Instruct.Q4_1.gguf?download=1", "sha256": SHA},
        {"name": "hf", "hf_repo": "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "hf_revision": "refs/pr/1",
         "hf_file": "sub dir/smol.gguf", "sha256": SHA, "size_bytes": 98362432},
        {"name": "mine", "controller_file": "/data/mine.gguf", "file": "renamed.gguf"},
    ], endpoint="https://hf-mirror.com/")
    assert result["errors"] == []
    url, hf, controller = result["models"]
    assert url == {"name": "smol", "model": "smol", "part": 1, "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
                   "path": "/srv/models/SmolLM2-135M-Instruct.Q4_1.gguf", "source": "url",
                   "url": "https://mirror.example/m/SmolLM2-135M-Instruct.Q4_1.gguf?download=1",
                   "controller_file": "", "sha256": SHA, "git_sha1": "", "size_bytes": None}
    assert hf["url"] == ("https://hf-mirror.com/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/resolve/"
                         "refs%2Fpr%2F1/sub%20dir/smol.gguf")
    assert hf["file"] == "smol.gguf" and hf["size_bytes"] == 98362432
    assert controller["source"] == "controller" and controller["sha256"] == ""
    assert controller["path"] == "/srv/models/renamed.gguf"


def test_hf_revision_defaults_to_main():
    assert hf_resolve_url("https://huggingface.co", "a/b", "main", "c.gguf") == \
        "https://huggingface.co/a/b/resolve/main/c.gguf"
    assert plan([{"name": "x", "hf_repo": "a/b", "hf_file": "c.gguf", "sha256": SHA}])["models"][0]["url"] == \
        "https://huggingface.co/a/b/resolve/main/c.gguf"


@pytest.mark.parametrize(("entry", "expected"), [
    ({"name": "x", "url": "https://m/x.gguf"}, "has no sha256: a download without a checksum is never done"),
    ({"name": "x", "url": "https://m/x.gguf", "sha256": "ABC"}, "is not a sha256"),
    ({"name": "x", "hf_repo": "a/b", "hf_file": "x.gguf"}, "has no sha256"),
    ({"name": "x", "hf_repo": "nope", "hf_file": "x.gguf", "sha256": SHA}, "is not a Hugging Face repository"),
    ({"name": "x", "hf_repo": "a/b", "sha256": SHA}, "model folder (hf_repo without hf_file) with sha256"),
    ({"name": "x", "hf_repo": "a/b", "hf_include": "*.json"}, "hf_include='*.json' must be a list"),
    ({"name": "x", "hf_repo": "a/b", "hf_include": ["original/*"]}, "top level"),
    ({"name": "x", "hf_repo": "a/b", "hf_revision": 0}, "hf_revision=0 is not a branch, tag or commit id: quote it"),
    ({"name": "x", "hf_repo": "a/b", "hf_revision": "<the commit id on the repository's Files page>"},
     "is not a branch, tag or commit id (git refuses spaces"),
    ({"name": "x", "hf_repo": "a/b", "hf_revision": "v1..v2"}, "is not a branch, tag or commit id (git refuses"),
    ({"name": "x", "url": "https://m/x.gguf", "sha256": SHA, "hf_include": ["*"]}, "hf_include without being"),
    ({"name": "x", "url": "https://m/x.gguf", "controller_file": "/x", "sha256": SHA}, "names url and controller_file"),
    ({"name": "x"}, "names no source"),
    ({"name": "x", "url": "ftp://m/x.gguf", "sha256": SHA}, "is not an http(s) URL"),
    ({"name": "x y", "url": "https://m/x.gguf", "sha256": SHA}, "is not a model name"),
    ({"name": "x", "url": "https://m/x.gguf", "sha256": SHA, "file": "../x"}, "plain file name"),
    ({"name": "x", "url": "https://m/", "sha256": SHA}, "plain file name"),
    ({"name": "x", "url": "https://m/x.gguf", "sha256": SHA, "size_bytes": -1}, "size_bytes=-1"),
    ({"name": "x", "url": "https://m/x.gguf", "sha256": SHA, "checksum": "y"}, "unknown keys checksum"),
])
def test_bad_entries_are_refused_with_what_to_set(entry, expected):
    result = plan([entry])
    assert result["models"] == []
    assert any(expected in error for error in result["errors"]), result["errors"]


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/1", "7cd0121f2530b00e42c4df952d4cad4418c0b3c1"])
def test_branches_tags_and_commit_ids_are_revisions(revision):
    assert plan([{"name": "x", "hf_repo": "a/b", "hf_revision": revision}])["errors"] == []


def test_duplicate_names_and_files_are_refused():
    result = plan([{"name": "a", "url": "https://m/x.gguf", "sha256": SHA},
                   {"name": "a", "url": "https://n/x.gguf", "sha256": SHA}])
    assert "2 entries with name 'a'" in " ".join(result["errors"])
    assert "2 entries with file 'x.gguf'" in " ".join(result["errors"])


def test_not_a_list_is_refused():
    assert plan({"name": "a"})["errors"] == ["models_list must be a list of models (got {'name': 'a'})."]


def test_a_stamp_matches_only_the_same_file_with_the_same_digest():
    stamp = {"sha256": SHA, "size": 10, "mtime_ns": 5}
    assert stamp_matches(stamp, "sha256", SHA, 10, 5)
    assert not stamp_matches(stamp, "sha256", "0" * 64, 10, 5)
    assert not stamp_matches(stamp, "sha256", SHA, 11, 5)
    assert not stamp_matches(stamp, "sha256", SHA, 10, 6)
    assert not stamp_matches(None, "sha256", SHA, 10, 5)
    assert not stamp_matches(stamp, "git_sha1", SHA, 10, 5)


def test_the_git_blob_id_is_gits(tmp_path):
    """`git hash-object` of the same bytes (git 2.39 here): e69de29... is git's id of the empty blob."""
    empty, hello = tmp_path / "empty", tmp_path / "hello"
    empty.write_bytes(b"")
    hello.write_bytes(b"hello\n")
    assert file_digest(str(empty), "git_sha1") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert file_digest(str(hello), "git_sha1") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert file_digest(str(hello)) == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"


# The tree API's items as huggingface_hub 0.24's list_repo_tree reads them (hf_api.py RepoFile: path, size,
# oid, lfs {oid = sha256, size, pointerSize}); sizes of Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4's files.
LFS_SHA = "9" * 64
LISTING = [
    {"type": "file", "oid": "a" * 40, "size": 1519, "path": ".gitattributes"},
    {"type": "file", "oid": "b" * 40, "size": 1080, "path": "config.json"},
    {"type": "file", "oid": "c" * 40, "size": 6000, "path": "README.md"},
    {"type": "file", "oid": "d" * 40, "size": 3987241000, "path": "model-00001-of-00003.safetensors",
     "lfs": {"oid": LFS_SHA, "size": 3987241000, "pointerSize": 135}},
    {"type": "file", "oid": "e" * 40, "size": 7031645, "path": "tokenizer.json",
     "lfs": {"oid": "8" * 64, "size": 7031645, "pointerSize": 133}},
    {"type": "directory", "oid": "f" * 40, "size": 0, "path": "original"},
    {"type": "file", "oid": "1" * 40, "size": 9, "path": "original/consolidated.pth",
     "lfs": {"oid": "7" * 64, "size": 9, "pointerSize": 128}},
]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_a_model_folder_becomes_one_order_per_file_vllm_reads():
    result = plan([{"name": "qwen-gptq", "hf_repo": "Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4", "hf_revision": COMMIT}],
                  endpoint="https://hf-mirror.com")
    assert result["errors"] == [] and result["models"] == []
    folder, = result["folders"]
    assert folder["path"] == "/srv/models/qwen-gptq" and folder["pinned"]
    assert folder["listing_url"] == ("https://hf-mirror.com/api/models/Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4/tree/"
                                     + COMMIT)
    orders = folder_orders(result["folders"], {"qwen-gptq": LISTING}, "https://hf-mirror.com")
    assert orders["errors"] == []
    assert [order["file"] for order in orders["models"]] == [
        "config.json", "model-00001-of-00003.safetensors", "tokenizer.json"]
    config, weights, _ = orders["models"]
    assert (config["git_sha1"], config["sha256"], config["size_bytes"]) == ("b" * 40, "", 1080)
    assert (weights["git_sha1"], weights["sha256"]) == ("", LFS_SHA)
    assert weights["path"] == "/srv/models/qwen-gptq/model-00001-of-00003.safetensors"
    assert weights["url"] == ("https://hf-mirror.com/Qwen/Qwen2.5-14B-Instruct-GPTQ-Int4/resolve/" + COMMIT
                              + "/model-00001-of-00003.safetensors")
    assert weights["name"] == "qwen-gptq/model-00001-of-00003.safetensors" and weights["model"] == "qwen-gptq"
    files = models_files(orders["models"], [{"name": order["name"], "up_to_date": True, "size": order["size_bytes"]}
                                            for order in orders["models"]])
    assert files["qwen-gptq"]["path"] == "/srv/models/qwen-gptq" and files["qwen-gptq"]["folder"]
    assert files["qwen-gptq"]["verified"] and files["qwen-gptq"]["size"] == 1080 + 3987241000 + 7031645
    assert len(files["qwen-gptq"]["parts"]) == 3


def test_mistrals_consolidated_copy_of_the_shards_is_not_fetched():
    listing = [{"type": "file", "oid": "b" * 40, "size": 5, "path": "config.json"}] + [
        {"type": "file", "oid": "c" * 40, "size": 9, "path": name, "lfs": {"oid": LFS_SHA, "size": 9, "pointerSize": 1}}
        for name in ("consolidated.safetensors", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")]
    orders = folder_orders(plan([{"name": "m", "hf_repo": "a/b"}])["folders"], {"m": listing}, "https://huggingface.co")
    assert [order["file"] for order in orders["models"]] == [
        "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def test_a_branch_is_listed_every_run():
    folder, = plan([{"name": "q", "hf_repo": "a/b"}])["folders"]
    assert folder["revision"] == "main" and not folder["pinned"]


@pytest.mark.parametrize("listing, include, expect", [
    ([item for item in LISTING if item["path"] != "config.json"], None, "has no config.json"),
    (LISTING, ["*.json"], "selects no weights"),
    ([{"type": "file", "oid": "b" * 40, "size": 5, "path": "config.json"},
      {"type": "file", "size": 5, "path": "w.safetensors"}], None, "is not a Hugging Face endpoint"),
    (LISTING + [{"type": "file", "oid": "b" * 40, "size": 5, "path": "added tokens.json"}], None,
     "has a name the role does not store"),
])
def test_a_folder_vllm_could_not_load_is_refused(listing, include, expect):
    entry = {"name": "q", "hf_repo": "a/b"}
    if include:
        entry["hf_include"] = include
    result = folder_orders(plan([entry])["folders"], {"q": listing}, "https://huggingface.co")
    assert result["models"] == [] and re.search(expect, " ".join(result["errors"]))


def test_a_folder_and_a_file_cannot_share_a_name():
    result = plan([{"name": "q", "hf_repo": "a/b"}, {"name": "q", "url": "https://m/q.gguf", "sha256": SHA}])
    assert "2 entries with name 'q'" in " ".join(result["errors"])



SHA2, SHA3 = "2" * 64, "3" * 64
PART_1 = "Qwen3-32B-Q4_K_M-00001-of-00003.gguf"


def test_a_split_set_is_one_entry_with_one_order_per_part():
    result = plan([{"name": "qwen", "hf_repo": "a/b", "hf_revision": "v1", "hf_file": "Q4_K_M/" + PART_1,
                    "sha256": [SHA, SHA2, SHA3]}])
    assert result["errors"] == []
    orders = result["models"]
    assert [order["name"] for order in orders] == ["qwen (part %d of 3)" % part for part in (1, 2, 3)]
    assert {order["model"] for order in orders} == {"qwen"} and [order["part"] for order in orders] == [1, 2, 3]
    assert [order["file"] for order in orders] == split_parts(PART_1) == [
        "Qwen3-32B-Q4_K_M-0000%d-of-00003.gguf" % part for part in (1, 2, 3)]
    assert orders[2]["url"] == "https://huggingface.co/a/b/resolve/v1/Q4_K_M/Qwen3-32B-Q4_K_M-00003-of-00003.gguf"
    assert [order["sha256"] for order in orders] == [SHA, SHA2, SHA3]
    assert orders[1]["path"] == "/srv/models/Qwen3-32B-Q4_K_M-00002-of-00003.gguf"


def test_each_part_of_a_split_url_or_controller_set_sits_next_to_part_1():
    url = plan([{"name": "q", "url": "https://m.example/x/" + PART_1 + "?download=1", "sha256": [SHA, SHA2, SHA3]}])
    assert url["models"][1]["url"] == "https://m.example/x/Qwen3-32B-Q4_K_M-00002-of-00003.gguf?download=1"
    mine = plan([{"name": "q", "controller_file": "/data/" + PART_1}])
    assert mine["errors"] == [] and [order["sha256"] for order in mine["models"]] == ["", "", ""]
    assert mine["models"][2]["controller_file"] == "/data/Qwen3-32B-Q4_K_M-00003-of-00003.gguf"


@pytest.mark.parametrize("entry, expected", [
    ({"url": "https://m.example/" + PART_1, "sha256": SHA},
     "models_list[0] (q) is a split GGUF set of 3 parts: set sha256 to a list of 3 sha256s"),
    ({"url": "https://m.example/" + PART_1, "sha256": [SHA, SHA2]}, "a list of 3 sha256s"),
    ({"url": "https://m.example/Qwen3-32B-Q4_K_M-00002-of-00003.gguf", "sha256": [SHA, SHA2, SHA3]},
     "names part 2 of a split GGUF set: name part 1 (Qwen3-32B-Q4_K_M-00001-of-00003.gguf)"),
    ({"url": "https://m.example/x-00004-of-00003.gguf", "sha256": [SHA] * 3}, "is not a part of a split GGUF set"),
    ({"controller_file": "/data/" + PART_1, "file": "q.gguf"}, "leave file out"),
    ({"controller_file": "/data/" + PART_1, "size_bytes": 10}, "split GGUF set with size_bytes: leave it out"),
])
def test_a_bad_split_entry_is_refused_with_the_fix(entry, expected):
    result = plan([dict(entry, name="q")])
    assert result["models"] == [] and any(expected in error for error in result["errors"]), result["errors"]


def test_a_one_part_set_is_a_single_file():
    result = plan([{"name": "q", "url": "https://m.example/x-00001-of-00001.gguf", "sha256": SHA}])
    assert result["errors"] == [] and result["models"][0]["name"] == "q"
    assert "has no sha256" in plan([{"name": "q", "url": "https://m.example/x-00001-of-00001.gguf"}])["errors"][0]


def test_models_files_hands_a_split_set_on_as_one_model():
    orders = plan([{"name": "qwen", "url": "https://m.example/" + PART_1, "sha256": [SHA, SHA2, SHA3]},
                   {"name": "smol", "url": "https://m.example/s.gguf", "sha256": SHA}])["models"]
    results = [{"name": order["name"], "up_to_date": True, "size": 10 * order["part"],
                "gguf": {"architecture": "qwen3"} if order["part"] == 1 else None} for order in orders]
    files = models_files(orders, results)
    assert files["qwen"] == {"path": "/srv/models/" + PART_1, "sha256": SHA, "source": "url", "folder": False,
                             "verified": True,
                             "size": 60, "gguf": {"architecture": "qwen3"},
                             "parts": ["/srv/models/Qwen3-32B-Q4_K_M-0000%d-of-00003.gguf" % n for n in (1, 2, 3)]}
    assert files["smol"]["parts"] == ["/srv/models/s.gguf"] and files["smol"]["size"] == 10


def test_a_split_set_with_a_part_missing_is_not_verified_and_has_no_size():
    orders = plan([{"name": "qwen", "url": "https://m.example/" + PART_1, "sha256": [SHA, SHA2, SHA3]}])["models"]
    results = [{"name": orders[0]["name"], "up_to_date": True, "size": 5, "gguf": {}},
               {"name": orders[1]["name"], "up_to_date": False, "size": None, "gguf": None}]
    assert models_files(orders, results)["qwen"]["verified"] is False
    assert models_files(orders, results)["qwen"]["size"] is None
    assert models_files(orders, [])["qwen"]["verified"] is False


def test_planned_files_name_every_entry_before_anything_is_fetched():
    files = planned_files(plan([{"name": "smol", "url": "https://m.example/s.gguf", "sha256": SHA},
                                {"name": "qwen-awq", "hf_repo": "Qwen/Qwen2.5-32B-Instruct-AWQ",
                                 "hf_revision": "a" * 40}]))
    assert files["smol"]["path"] == "/srv/models/s.gguf" and files["smol"]["verified"] is False
    assert files["smol"]["folder"] is False
    assert files["qwen-awq"] == {"path": "/srv/models/qwen-awq", "sha256": "", "source": "hf", "folder": True,
                                 "verified": False, "size": None, "gguf": None, "parts": []}


@pytest.mark.parametrize("models_dir", ["/srv/models ", "srv/models", " /srv/models"])
def test_a_models_dir_with_spaces_around_or_relative_is_refused(models_dir):
    result = fetch_plan([], models_dir, "https://huggingface.co")
    assert result["errors"] == ["models_dir=%r must be an absolute path without leading or trailing spaces." % models_dir]
