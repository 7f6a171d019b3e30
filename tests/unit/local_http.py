"""A throwaway HTTP server on 127.0.0.1 for the modules that GET (tests only).

`answer(path)` returns (status, headers, body); every request is recorded as (Host, path, Authorization), so a test
can see where a token went. "%d" in a header value is replaced with the server's port (a link to "localhost:%d"
is the same server under another host name).
"""
from __future__ import annotations

import contextlib
import http.server
import json
import threading
from typing import Callable, Dict, Iterator, List, Tuple

import pytest
from ansible.module_utils.testing import patch_module_args

Answer = Tuple[int, Dict[str, str], bytes]


@contextlib.contextmanager
def serving(answer: Callable[[str], Answer]) -> Iterator[Tuple[str, List[tuple]]]:
    """Yields the server's base URL (http://127.0.0.1:PORT) and the list of requests it saw."""
    seen: List[tuple] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append((self.headers.get("Host"), self.path, self.headers.get("Authorization")))
            status, headers, body = answer(self.path)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value.replace("%d", str(self.server.server_port)))
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_HEAD = do_GET  # noqa: N815 (http.server's name)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield "http://127.0.0.1:%d" % httpd.server_port, seen
    finally:
        httpd.shutdown()


def run_module(capsys, main: Callable[[], None], args: dict) -> dict:
    """A module's result, as Ansible would read it."""
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            main()
    return json.loads(capsys.readouterr().out)


def serving_fixture(answers: Dict[str, Answer]):
    """A module-scoped fixture named server: serving() answering from answers by path, 404 for any other."""
    @pytest.fixture(scope="module", name="server")
    def server_fixture():
        with serving(lambda path: answers.get(path, (404, {}, b""))) as served:
            yield served
    return server_fixture
