#!/usr/bin/env python3
"""HTTP server for the llama_server scenario (tests only), on the container's 127.0.0.1.

Serves a folder (GET and HEAD, with Content-Length). Paths under /hf/ STAND IN
for Hugging Face (HF_ENDPOINT=http://127.0.0.1:PORT/hf, files at
/hf/<owner>/<repo>/resolve/<revision>/<file>) and answer 401 unless the request
carries "Authorization: Bearer TOKEN", as a gated repository does.

    fixture_server.py FOLDER PORT TOKEN
"""
from __future__ import annotations

import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    token = ""

    def _allowed(self) -> bool:
        if not self.path.startswith("/hf/"):
            return True
        if self.headers.get("Authorization") == "Bearer " + self.token:
            return True
        self.send_error(401, "gated repository: a valid token is required")
        return False

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self._allowed():
            super().do_GET()

    def do_HEAD(self):  # noqa: N802
        if self._allowed():
            super().do_HEAD()


def main() -> None:
    folder, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    handler = functools.partial(type("TokenHandler", (Handler,), {"token": token}), directory=folder)
    http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


if __name__ == "__main__":
    main()
