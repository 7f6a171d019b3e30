"""hf_model_listing against a local server answering as the Hub's tree API does (Link: <...>; rel="next")."""
from __future__ import annotations

import http.server
import json
import threading

import hf_model_listing
import pytest
from ansible.module_utils.testing import patch_module_args

TOKEN = "Bearer hf_test"
PAGES = {
    "/hf/api/models/o/m/tree/main": ([{"type": "file", "oid": "b" * 40, "size": 2, "path": "config.json"}],
                                     # As hf-mirror.com links its next page: on the Hub's own host.
                                     "https://huggingface.co/api/models/o/m/tree/main?cursor=2"),
    "/hf/api/models/o/m/tree/main?cursor=2": ([{"type": "directory", "oid": "0" * 40, "size": 0, "path": "onnx"}],
                                              None),
    "/hf/api/models/o/loop/tree/main": ([], "/hf/api/models/o/loop/tree/main"),
    "/hf/api/models/o/moved/tree/main": (None, "http://localhost:%d/hf/api/models/o/m/tree/main"),
}


@pytest.fixture(scope="module")
def server():
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append((self.headers.get("Host"), self.path, self.headers.get("Authorization")))
            page, link = PAGES.get(self.path, (None, None))
            if page is None and link:
                self.send_response(307)
                self.send_header("Location", link % self.server.server_port)
                self.end_headers()
                return
            if page is None:
                self.send_error(404)
                return
            body = json.dumps(page).encode()
            self.send_response(200)
            if link:
                self.send_header("Link", '<%s>; rel="next"' % link)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d/hf" % httpd.server_port, seen
    httpd.shutdown()


def run(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            hf_model_listing.main()
    return json.loads(capsys.readouterr().out)


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
