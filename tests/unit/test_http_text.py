"""http_text against a local server answering as the Hugging Face Hub does for a small file's /resolve/ URL."""
from __future__ import annotations

import json

from ansible_collections.v100.llm.plugins.modules import http_text
import pytest
from ansible_collections.v100.llm.plugins.module_utils.models.http_get import redirect_refused
from local_http import run_module, serving_fixture

TOKEN = "Bearer hf_test"
CONFIG = json.dumps({"architectures": ["Qwen3ForCausalLM"]}).encode()
ANSWERS = {
    # The Hub's answer (huggingface/swift-transformers pull request 209): a relative 307 on its own host.
    "/o/m/resolve/main/config.json": (307, {"Location": "/api/resolve-cache/models/o/m/" + "b" * 40
                                                        + "/config.json?etag=x"}, b""),
    "/api/resolve-cache/models/o/m/" + "b" * 40 + "/config.json?etag=x": (200, {}, CONFIG),
    "/o/cdn/resolve/main/config.json": (302, {"Location": "http://localhost:%d/api/resolve-cache/models/o/m/"
                                                          + "b" * 40 + "/config.json?etag=x"}, b""),
    "/o/ftp/resolve/main/config.json": (302, {"Location": "file:///etc/passwd"}, b""),
    "/o/big/resolve/main/config.json": (200, {}, b"x" * 100),
}


server = serving_fixture(ANSWERS)


def run(capsys, args):
    return run_module(capsys, http_text.main, args)


def test_the_hubs_same_host_redirect_is_followed_with_the_token(server, capsys):
    base, seen = server
    result = run(capsys, {"url": base + "/o/m/resolve/main/config.json", "headers": {"Authorization": TOKEN}})
    assert result["status"] == 200 and json.loads(result["content"]) == {"architectures": ["Qwen3ForCausalLM"]}
    assert [auth for _, _, auth in seen[-2:]] == [TOKEN, TOKEN]


def test_a_redirect_to_another_host_goes_without_the_token(server, capsys):
    base, seen = server
    result = run(capsys, {"url": base + "/o/cdn/resolve/main/config.json", "headers": {"Authorization": TOKEN}})
    assert result["status"] == 200 and seen[-1][0].startswith("localhost:") and seen[-1][2] is None


def test_missing_files_other_schemes_and_long_answers_fail_with_the_reason(server, capsys):
    base, _ = server
    missing = run(capsys, {"url": base + "/o/none/resolve/main/config.json"})
    assert missing["failed"] and missing["status"] == 404 and "answered HTTP 404" in missing["msg"]
    other = run(capsys, {"url": base + "/o/ftp/resolve/main/config.json"})
    assert other["failed"] and other["status"] == -1 and "only http and https are followed" in other["msg"]
    long = run(capsys, {"url": base + "/o/big/resolve/main/config.json", "max_bytes": 10})
    assert long["failed"] and "longer than 10 bytes" in long["msg"]


def test_an_unreachable_server_is_status_minus_one(capsys):
    result = run(capsys, {"url": "http://127.0.0.1:9/o/m/resolve/main/config.json", "timeout": 2})
    assert result["failed"] and result["status"] == -1


@pytest.mark.parametrize("url, target, refused", [
    ("https://huggingface.co/o/m/resolve/main/config.json", "https://cdn-lfs.hf.co/x", ""),
    ("http://mirror.lan/o/m/resolve/main/config.json", "https://mirror.lan/x", ""),
    ("https://huggingface.co/o/m/resolve/main/config.json", "http://cdn-lfs.hf.co/x", "from https down to plain http"),
    ("https://huggingface.co/o/m/resolve/main/config.json", "file:///etc/passwd", "only http and https"),
])
def test_redirects_go_to_http_or_https_and_never_down_from_https(url, target, refused):
    reason = redirect_refused(url, target)
    assert (refused in reason) if refused else reason == ""
