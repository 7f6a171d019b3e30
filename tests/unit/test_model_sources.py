"""models_list -> fetch orders; stamps."""
from __future__ import annotations

import pytest

from ansible.module_utils.model_sources import fetch_plan, hf_resolve_url, models_files, split_parts, stamp_matches

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
                   "controller_file": "", "sha256": SHA, "size_bytes": None}
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
    ({"name": "x", "hf_repo": "a/b", "sha256": SHA}, "has hf_repo but no hf_file"),
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


def test_duplicate_names_and_files_are_refused():
    result = plan([{"name": "a", "url": "https://m/x.gguf", "sha256": SHA},
                   {"name": "a", "url": "https://n/x.gguf", "sha256": SHA}])
    assert "2 entries with name 'a'" in " ".join(result["errors"])
    assert "2 entries with file 'x.gguf'" in " ".join(result["errors"])


def test_not_a_list_is_refused():
    assert plan({"name": "a"})["errors"] == ["models_list must be a list of models (got {'name': 'a'})."]


def test_a_stamp_matches_only_the_same_file_with_the_same_sha256():
    stamp = {"sha256": SHA, "size": 10, "mtime_ns": 5}
    assert stamp_matches(stamp, SHA, 10, 5)
    assert not stamp_matches(stamp, "0" * 64, 10, 5)
    assert not stamp_matches(stamp, SHA, 11, 5)
    assert not stamp_matches(stamp, SHA, 10, 6)
    assert not stamp_matches(None, SHA, 10, 5)



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
    assert files["qwen"] == {"path": "/srv/models/" + PART_1, "sha256": SHA, "source": "url", "verified": True,
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
