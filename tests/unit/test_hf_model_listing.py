"""hf_model_listing against a local server answering as the Hub's tree API does (Link: <...>; rel="next")."""
from __future__ import annotations

import json

from ansible_collections.v100.llm.plugins.modules import hf_model_listing
import pytest
from local_http import run_module, serving

TOKEN = "Bearer hf_test"
PAGES = {
    "/hf/api/models/o/m/tree/main": ([{"type": "file", "oid": "b" * 40, "size": 2, "path": "config.json"}],
                                     # As hf-mirror.com links its next page: on the Hub's own host.
                                     "https://huggingface.co/api/models/o/m/tree/main?cursor=2"),
    "/hf/api/models/o/m/tree/main?cursor=2": ([{"type": "directory", "oid": "0" * 40, "size": 0, "path": "onnx"}],
                                              None),
    "/hf/api/models/o/loop/tree/main": ([], "/hf/api/models/o/loop/tree/main"),
    "/hf/api/models/o/moved/tree/main": (None, "http://localhost:%d/hf/api/models/o/m/tree/main"),
    # A next page on another host that is not the Hub's API: asked there, without the token.
    "/hf/api/models/o/far/tree/main": ([{"type": "file", "oid": "c" * 40, "size": 2, "path": "a.json"}],
                                       "http://localhost:%d/pages/2"),
    "/pages/2": ([{"type": "file", "oid": "d" * 40, "size": 2, "path": "b.json"}], None),
}


def answer(path):
    page, link = PAGES.get(path, (None, None))
    if page is None and link:
        return 307, {"Location": link}, b""
    if page is None:
        return 404, {}, b""
    return 200, {"Link": '<%s>; rel="next"' % link} if link else {}, json.dumps(page).encode()


@pytest.fixture(scope="module")
def server():
    with serving(answer) as (base, seen):
        yield base + "/hf", seen


def run(capsys, args):
    return run_module(capsys, hf_model_listing.main, args)


def test_pages_are_followed_on_the_endpoint_even_when_linked_to_the_hub(server, capsys):
    endpoint, seen = server
    result = run(capsys, {"url": endpoint + "/api/models/o/m/tree/main", "headers": {"Authorization": TOKEN}})
    assert [item["path"] for item in result["files"]] == ["config.json", "onnx"] and not result["from_kept"]
    assert seen[-1][1:] == ("/hf/api/models/o/m/tree/main?cursor=2", TOKEN)


def test_a_redirect_to_another_host_does_not_carry_the_token(server, capsys):
    endpoint, seen = server
    result = run(capsys, {"url": endpoint + "/api/models/o/moved/tree/main", "headers": {"Authorization": TOKEN}})
    assert [item["path"] for item in result["files"]] == ["config.json", "onnx"]
    assert seen[-2][0].startswith("localhost:") and seen[-2][2] is None


def test_a_next_page_on_another_host_goes_without_the_token(server, capsys):
    endpoint, seen = server
    result = run(capsys, {"url": endpoint + "/api/models/o/far/tree/main", "headers": {"Authorization": TOKEN}})
    assert [item["path"] for item in result["files"]] == ["a.json", "b.json"]
    assert seen[-2][1:] == ("/hf/api/models/o/far/tree/main", TOKEN)
    assert seen[-1][0].startswith("localhost:") and seen[-1][1:] == ("/pages/2", None)


def test_pages_that_never_end_and_missing_revisions_fail(server, capsys):
    endpoint, _ = server
    looping = run(capsys, {"url": endpoint + "/api/models/o/loop/tree/main"})
    assert looping["failed"] and "pages do not end" in looping["msg"]
    missing = run(capsys, {"url": endpoint + "/api/models/o/none/tree/main"})
    assert missing["failed"] and missing["status"] == 404


def test_a_kept_listing_of_the_same_url_is_read_without_the_network(tmp_path, capsys):
    kept = tmp_path / ".listing.json"
    kept.write_text(json.dumps({"url": "http://127.0.0.1:9/api/models/o/m/tree/" + "a" * 40, "files": [{"path": "x"}]}))
    result = run(capsys, {"url": "http://127.0.0.1:9/api/models/o/m/tree/" + "a" * 40, "kept": str(kept)})
    assert result["from_kept"] and result["files"] == [{"path": "x"}]
