"""How to continue a download from the bytes a killed run left (HTTP Range, RFC 9110 section 14).

A 16-20 GB model file killed halfway is continued, not fetched again: the
partial file is kept under <models_dir>/.partial, the request asks for the
rest (Range: bytes=N-), and the sha256 is taken over the whole file before it
is moved in place.
"""
from __future__ import annotations

import re
from typing import Dict, Optional


def range_header(part_size: int) -> Dict[str, str]:
    """The request header that asks for what is missing (none for a fresh download)."""
    return {"Range": "bytes=%d-" % part_size} if part_size > 0 else {}


def continuation(part_size: int, status: int, content_range: Optional[str]) -> str:
    """What the answer to a ranged request means for the partial file.

    "append": 206 starting exactly at part_size; "restart": 200 (the server
    ignores Range) or a 206 that starts elsewhere: write from byte 0;
    "complete": 416 for a range starting at the end of the file;
    "error": anything else.
    """
    if status == 206 and content_range:
        match = re.match(r"bytes (\d+)-\d+/(\d+|\*)$", content_range.strip())
        return "append" if match and int(match.group(1)) == part_size else "restart"
    if status == 200:
        return "restart"
    if status == 416 and part_size > 0:
        # "bytes */SIZE": nothing is left past SIZE.
        match = re.match(r"bytes \*/(\d+)$", (content_range or "").strip())
        return "complete" if match is None or int(match.group(1)) == part_size else "restart"
    return "error"
