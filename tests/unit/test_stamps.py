"""A torn stamp means "build again", not a crash."""
from __future__ import annotations

import base64

from ansible_collections.v100.llm.plugins.module_utils.host.stamps import read_slurped_stamp


def encode(text):
    return base64.b64encode(text.encode()).decode()


def test_a_whole_stamp_is_read():
    assert read_slurped_stamp(encode('{"backend": "cuda", "hash": "abc"}\n')) == {"backend": "cuda", "hash": "abc"}


def test_truncated_empty_or_foreign_stamps_certify_nothing():
    whole = '{"backend": "cuda", "hash": "abc"}\n'
    for torn in (whole[:17], "", "\0\0\0\0", "[1, 2]", "null"):
        assert read_slurped_stamp(encode(torn)) == {}, torn
    assert read_slurped_stamp("") == {} and read_slurped_stamp(None) == {} and read_slurped_stamp("not base64!") == {}
