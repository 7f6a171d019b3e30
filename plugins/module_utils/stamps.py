"""Stamps: the JSON a role writes last into what it built, naming exactly what was built.

A power cut can leave a stamp truncated or empty; that means "not certified,
build again", never a crash that the next run repeats.
"""
from __future__ import annotations

import base64
import binascii
import json


def read_stamp(encoded: str) -> dict:
    """The JSON object of a stamp from slurp's base64 content; {} when missing, unreadable or truncated."""
    try:
        stamp = json.loads(base64.b64decode(encoded or "", validate=True).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return {}
    return stamp if isinstance(stamp, dict) else {}
