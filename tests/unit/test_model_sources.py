"""models_list -> fetch orders; stamps."""
from __future__ import annotations

import pytest

from ansible.module_utils.model_sources import fetch_plan, hf_resolve_url, stamp_matches

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
    assert url == {"name": "smol", "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
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

