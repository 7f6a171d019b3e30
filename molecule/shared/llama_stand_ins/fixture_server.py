#!/usr/bin/env python3
"""HTTP server for the llama_server scenario (tests only), on the container's 127.0.0.1.

Serves a folder (GET and HEAD, with Content-Length; a GET with "Range: bytes=N-"
gets 206 and the rest of the file, as Hugging Face's CDN answers, so that an
interrupted model download continues). Paths under /hf/ STAND IN
for Hugging Face (HF_ENDPOINT=http://127.0.0.1:PORT/hf, files at
/hf/<owner>/<repo>/resolve/<revision>/<file>) and answer 401 unless the request
carries "Authorization: Bearer TOKEN", as a gated repository does. A file
with a sibling <file>.next is answered with "Link: <URL in it>; rel=next", as
the Hub pages a repository's file listing (hf_model_folder.py). A path with a
sibling <path>.redirect is answered with a 307 to the location in it, as the Hub
answers /resolve/ of a small file with /api/resolve-cache/ on its own host
(huggingface/swift-transformers pull request 209 shows the real answer).

    fixture_server.py FOLDER PORT TOKEN [BYTES_PER_SECOND]

BYTES_PER_SECOND slows every GET body down to that rate (the kill harness,
tests/kill, kills a model download halfway).
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import sys
import time


class Handler(http.server.SimpleHTTPRequestHandler):
    token = ""
    rate = 0

    def copyfile(self, source, outputfile):
        if not self.rate:
            shutil.copyfileobj(source, outputfile)
            return
        block = max(1, self.rate // 10)
        for chunk in iter(lambda: source.read(block), b""):
            outputfile.write(chunk)
            time.sleep(0.1)

    def _allowed(self) -> bool:
        if not self.path.startswith("/hf/"):
            return True
        if self.headers.get("Authorization") == "Bearer " + self.token:
            return True
        self.send_error(401, "gated repository: a valid token is required")
        return False

    def end_headers(self):
        following = self.translate_path(self.path) + ".next"
        if os.path.isfile(following):
            with open(following) as handle:
                self.send_header("Link", '<%s>; rel="next"' % handle.read().strip())
        super().end_headers()

    def _redirected(self) -> bool:
        target = self.translate_path(self.path) + ".redirect"
        if not os.path.isfile(target):
            return False
        with open(target) as handle:
            location = handle.read().strip()
        self.send_response(307)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def do_GET(self):  # noqa: N802 (http.server's name)
        if not self._allowed() or self._redirected():
            return
        wanted = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        path = self.translate_path(self.path)
        if not wanted or not os.path.isfile(path):
            super().do_GET()
            return
        size, start = os.path.getsize(path), int(wanted.group(1))
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        with open(path, "rb") as handle:
            handle.seek(start)
            self.copyfile(handle, self.wfile)

    def do_HEAD(self):  # noqa: N802
        if self._allowed() and not self._redirected():
            super().do_HEAD()


def main() -> None:
    folder, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rate = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    handler = functools.partial(type("TokenHandler", (Handler,), {"token": token, "rate": rate}), directory=folder)
    http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()


if __name__ == "__main__":
    main()
