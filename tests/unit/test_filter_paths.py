from __future__ import annotations

import sys

from conftest import PROJECT_ROOT


from ansible_collections.v100.llm.plugins.filter.host import nearest_mount  # noqa: E402

MOUNTS = [
    {"mount": "/", "size_available": 10},
    {"mount": "/opt", "size_available": 20},
    {"mount": "/opt/models", "size_available": 30},
    {"mount": "/optional", "size_available": 40},
]


def test_longest_prefix_wins():
    assert nearest_mount(MOUNTS, "/opt/models/qwen")["size_available"] == 30


def test_a_path_that_does_not_exist_yet_maps_to_its_file_system():
    assert nearest_mount(MOUNTS, "/opt/llama.cpp/builds")["size_available"] == 20


def test_a_sibling_with_a_common_prefix_is_not_a_parent():
    assert nearest_mount(MOUNTS, "/opt2/x")["size_available"] == 10


def test_trailing_slashes_are_ignored():
    assert nearest_mount(MOUNTS, "/opt/models/")["size_available"] == 30


def test_no_mounts_gives_none():
    assert nearest_mount([], "/opt") is None
