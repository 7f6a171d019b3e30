"""http_head against a local server answering as the Hugging Face Hub does for a Git LFS file's /resolve/ URL."""
from __future__ import annotations

import socket
import threading

from ansible_collections.v100.llm.plugins.modules import http_head
from local_http import run_module, serving_fixture

TOKEN = "Bearer hf_test"
ANSWERS = {
    # The Hub: a redirect to its CDN carrying the file's size (huggingface_hub's get_hf_file_metadata reads it).
    "/o/m/resolve/main/m.gguf": (302, {"Location": "http://localhost:%d/cdn/m.gguf", "X-Linked-Size": "17000000000"},
                                 b""),
    # A mirror: a redirect to another host without the size, which then answers.
    "/o/mirror/resolve/main/m.gguf": (302, {"Location": "http://localhost:%d/cdn/m.gguf"}, b""),
    "/cdn/m.gguf": (200, {"Content-Length": "1234"}, b""),
    "/o/gated/resolve/main/m.gguf": (401, {}, b""),
    "/o/down/resolve/main/m.gguf": (302, {"Location": "ftp://localhost/m.gguf"}, b""),
}


server = serving_fixture(ANSWERS)


def test_the_hubs_redirect_with_the_linked_size_is_the_answer_and_the_cdn_is_not_asked(server, capsys):
    base, seen = server
    result = run_module(capsys, http_head.main,
                        {"url": base + "/o/m/resolve/main/m.gguf", "headers": {"Authorization": TOKEN}})
    assert result["found"] and result["status"] == 302 and result["size"] == 17000000000
    assert seen[-1] == ("127.0.0.1:%s" % base.rsplit(":", 1)[1], "/o/m/resolve/main/m.gguf", TOKEN)
    assert not result["changed"]


def test_a_redirect_to_another_host_goes_without_the_token(server, capsys):
    base, seen = server
    result = run_module(capsys, http_head.main,
                        {"url": base + "/o/mirror/resolve/main/m.gguf", "headers": {"Authorization": TOKEN}})
    assert result["found"] and result["status"] == 200 and result["size"] == 1234
    assert seen[-1][0].startswith("localhost:") and seen[-1][2] is None


def test_what_is_not_given_is_not_found_with_the_reason(server, capsys):
    base, _ = server
    gated = run_module(capsys, http_head.main, {"url": base + "/o/gated/resolve/main/m.gguf"})
    assert not gated["found"] and gated["status"] == 401 and "answered HTTP 401" in gated["msg"]
    assert gated["size"] == 0 and not gated.get("failed")
    other = run_module(capsys, http_head.main, {"url": base + "/o/down/resolve/main/m.gguf"})
    assert not other["found"] and other["status"] == -1 and "only http and https are followed" in other["msg"]
    unreachable = run_module(capsys, http_head.main, {"url": "http://127.0.0.1:9/m.gguf", "timeout": 2})
    assert not unreachable["found"] and unreachable["status"] == -1


def test_a_garbled_answer_is_not_found_with_the_reason(capsys):
    """Not HTTP at all (a captive portal or filtering proxy can answer so): http.client's BadStatusLine."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        def answer_garbage():
            connection, _ = listener.accept()
            with connection:
                connection.recv(4096)
                connection.sendall(b"garbage\r\n\r\n")
        thread = threading.Thread(target=answer_garbage)
        thread.start()
        garbled = run_module(capsys, http_head.main,
                             {"url": "http://127.0.0.1:%d/m.gguf" % listener.getsockname()[1], "timeout": 5})
        thread.join()
    assert not garbled["found"] and garbled["status"] == -1 and "was not reached" in garbled["msg"]
