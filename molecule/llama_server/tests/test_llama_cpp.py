"""What a host relies on after the llama_cpp role.

The source is the real llama.cpp tree at commit 0c1e57098 (vendored by the
llama-cpp-python 0.3.36 sdist on PyPI), packed by prepare.yml into an archive
that STANDS IN for GitHub's archive of that commit and served on the
container's 127.0.0.1:8767. The build is real, CPU backend (no GPU here).
"""
import json

import pytest

PREFIX = "/opt/llama.cpp"
CURRENT = PREFIX + "/current"
COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
TARGETS = ["llama-server", "llama-cli", "llama-bench", "llama-quantize", "llama-gguf-split"]


def _stamp(host):
    return json.loads(host.file(CURRENT + "/build-stamp.json").content_string)


def test_current_is_a_symlink_to_the_versioned_install(host):
    current = host.file(CURRENT)
    assert current.is_symlink
    target = current.linked_to
    stamp = _stamp(host)
    assert target.startswith(PREFIX + "/b0c1e570-")
    assert len(target.rsplit("-", 1)[1]) == 10
    assert host.file(target).is_directory
    assert stamp["version"] == "b0c1e570"


@pytest.mark.parametrize("name", TARGETS)
def test_the_binaries_are_installed_and_stand_alone(host, name):
    binary = host.file(f"{CURRENT}/bin/{name}")
    assert binary.is_file and binary.mode == 0o755 and binary.user == "root"
    # Static libraries: no RUNPATH into the (removed) build folder, nothing missing.
    linked = host.run(f"ldd {CURRENT}/bin/{name}")
    assert linked.rc == 0, linked.stderr
    assert "not found" not in linked.stdout
    assert "/var/cache/llama.cpp" not in linked.stdout
    assert "libllama" not in linked.stdout and "libggml" not in linked.stdout
    dynamic = host.check_output(f"readelf -d {CURRENT}/bin/{name}")
    assert "RUNPATH" not in dynamic and "RPATH" not in dynamic


def test_llama_server_reports_the_commit(host):
    shown = host.run(f"{CURRENT}/bin/llama-server --version")
    assert shown.rc == 0, shown.stderr
    output = shown.stdout + shown.stderr
    assert "version: " in output
    assert COMMIT[:7] in output
    assert "built with" in output


@pytest.mark.parametrize(("name", "args", "rc"), [
    ("llama-cli", "--version", 0),
    ("llama-bench", "--help", 0),
    # llama-quantize prints its usage and exits 1 on --help (as with no arguments).
    ("llama-quantize", "--help", 1),
    ("llama-gguf-split", "--help", 0),
])
def test_the_other_tools_run(host, name, args, rc):
    shown = host.run(f"{CURRENT}/bin/{name} {args}")
    output = shown.stdout + shown.stderr
    assert shown.rc == rc, output
    if name != "llama-cli":
        assert "usage:" in output


def test_the_stamp_records_the_build(host):
    stamp = _stamp(host)
    served = host.file("/opt/llama-cpp-fixture/llama.cpp-0c1e570.tar.gz.sha256").content_string.split()[0]
    assert stamp["source_sha256"] == served
    assert stamp["commit"] == COMMIT
    assert stamp["backend"] == "cpu"
    assert stamp["cuda_architectures"] == "" and stamp["nvcc"] == ""
    assert stamp["compiler"].startswith("c++ (Debian 12")
    assert "-DGGML_CUDA=OFF" in stamp["cmake_args"]
    assert "-DGGML_NATIVE=OFF" in stamp["cmake_args"]
    assert "-DBUILD_SHARED_LIBS=OFF" in stamp["cmake_args"]
    assert "-DLLAMA_BUILD_COMMIT=" + COMMIT in stamp["cmake_args"]
    assert stamp["targets"] == sorted(TARGETS)
    stamp_file = host.file(CURRENT + "/build-stamp.json")
    assert stamp_file.user == "root" and stamp_file.mode == 0o644


def test_the_download_was_checked_and_the_temporary_folders_removed(host):
    stamp = _stamp(host)
    archive = f"/var/cache/llama.cpp/downloads/llama.cpp-{stamp['source_sha256']}.archive"
    assert host.file(archive).is_file
    assert host.check_output(f"sha256sum {archive}").split()[0] == stamp["source_sha256"]
    left = host.run("ls -d /var/cache/llama.cpp/*src* /var/cache/llama.cpp/*build* /var/cache/llama.cpp/*tree* 2>/dev/null")
    assert left.stdout.strip() == ""


def test_ccache_was_used(host):
    """This host's ccache log (prepare.yml; the cache itself is shared with other jobs) names the sources of the
    role's build folder: the build went through ccache."""
    assert host.file("/usr/bin/ccache").exists
    compiled = [line for line in host.file("/var/log/ccache-stats.log").content_string.splitlines()
                if line.startswith("# /var/cache/llama.cpp/llama.cpp-tree/")]
    assert len(compiled) > 20, compiled
