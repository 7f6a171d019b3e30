"""A killed download continues from its partial file (HTTP Range), against the molecule stand-in server."""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time

import pytest
from conftest import PROJECT_ROOT

from ansible_collections.v100.llm.plugins.module_utils.models.download import continuation, range_header

SERVER = PROJECT_ROOT / "molecule" / "shared" / "llama_stand_ins" / "fixture_server.py"


def test_the_answer_decides_how_the_partial_file_goes_on():
    assert range_header(0) == {} and range_header(1024) == {"Range": "bytes=1024-"}
    assert continuation(1024, 206, "bytes 1024-4095/4096") == "append"
    # A 206 for another range, or a server that ignores Range, starts over.
    assert continuation(1024, 206, "bytes 0-4095/4096") == "restart"
    assert continuation(1024, 200, None) == "restart"
    assert continuation(4096, 416, "bytes */4096") == "complete"
    assert continuation(5000, 416, "bytes */4096") == "restart"
    assert continuation(0, 404, None) == "error"


@pytest.fixture(name="server")
def fixture_server(tmp_path):
    served = tmp_path / "served"
    (served / "models").mkdir(parents=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(SERVER), str(served), str(port), "token"])
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield served, "http://127.0.0.1:%d" % port
    process.kill()
    process.wait()


def run_module(**args):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(PROJECT_ROOT / "collections"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    # Only the JSON on stdout: scripts/test turns on profile_tasks, which prints there too.
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    done = subprocess.run([ansible, "localhost", "-c", "local", "-m", "v100.llm.model_download", "-a", json.dumps(args)],
                          env=env, capture_output=True, text=True, check=False)
    return json.loads(done.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def download_after(server, folder, size, partial):
    """Serve SIZE random bytes, leave PARTIAL (bytes, or a function of the file's bytes) as a killed run would,
    and run the module; returns (the file's bytes, the module's arguments, its result)."""
    served, url = server
    data = os.urandom(size)
    (served / "models" / "m.gguf").write_bytes(data)
    (folder / ".partial").mkdir(parents=True)
    (folder / ".partial" / "m.gguf.part").write_bytes(partial(data) if callable(partial) else partial)
    args = dict(url=url + "/models/m.gguf", dest=str(folder / "m.gguf"), sha256=hashlib.sha256(data).hexdigest(),
                partial_dir=str(folder / ".partial"))
    return data, args, run_module(**args)


def test_a_half_downloaded_file_is_continued_and_hashed_whole(server, tmp_path):
    data, args, result = download_after(server, tmp_path, 3 * 1024 * 1024 + 17, lambda data: data[: len(data) // 2])
    assert result["changed"] and result["resumed_from"] == len(data) // 2, result
    assert (tmp_path / "m.gguf").read_bytes() == data
    assert not (tmp_path / ".partial" / "m.gguf.part").exists()
    # Complete: hashed, not fetched again.
    assert run_module(**args)["changed"] is False


def test_a_partial_file_that_does_not_hash_is_dropped(server, tmp_path):
    # A torn write: the first half is not the file's.
    _, _, result = download_after(server, tmp_path, 1024 * 1024, b"\0" * (512 * 1024))
    assert result.get("failed") and "removed the partial file" in result["msg"], result
    assert not (tmp_path / ".partial" / "m.gguf.part").exists() and not (tmp_path / "m.gguf").exists()


def test_a_partial_file_longer_than_the_file_is_started_over(server, tmp_path):
    # The server answers 416 "bytes */SIZE": the partial file is not a prefix of this file.
    data, _, result = download_after(server, tmp_path, 512 * 1024, os.urandom(512 * 1024 + 100))
    assert result["changed"] and result["resumed_from"] == 0, result
    assert (tmp_path / "m.gguf").read_bytes() == data


def test_a_finished_download_is_stamped_at_once(server, tmp_path):
    data, args, _ = download_after(server, tmp_path, 256 * 1024, b"")
    stamp = json.loads((tmp_path / ".stamps" / "m.gguf.json").read_text())
    stat = (tmp_path / "m.gguf").stat()
    assert stamp == {"sha256": args["sha256"], "size": len(data), "mtime_ns": stat.st_mtime_ns}
