"""An exported llama.cpp build (plugins/module_utils/llama/artifact.py and
llama_cpp_build.artifact_plan): the archive is reproducible and safe to
unpack as root, and a host installs it only where it carries machine code for
that host's GPUs. The `ldd -r` outputs are a real sm_70 llama-server's, built
by molecule/debian13 (tests/fixtures/debian13/SOURCES.md).
"""
from __future__ import annotations

import io
import json
import os
import tarfile

import pytest
from ansible_collections.v100.llm.plugins.module_utils.llama.artifact import (
    STAMP_FILE,
    is_current,
    leftovers,
    library_problems,
    member_errors,
    os_release,
    read_archive,
    write_archive,
)
from ansible_collections.v100.llm.plugins.module_utils.llama.build import artifact_plan, build_plan
from ansible_collections.v100.llm.plugins.module_utils.models.sources import file_digest

from conftest import FIXTURES

V100 = {"index": 0, "compute_capability": "7.0"}
RTX4090 = {"index": 1, "compute_capability": "8.9"}
TRIXIE = {"id": "debian", "version_id": "13"}


def _plan(archs="70"):
    return build_plan({"requested_architectures": archs, "source_sha256": "ab" * 32, "version": "b0c1e570",
                       "commit": "0c1e57098bba43ac29e6e3b677cdceebdd22334f", "targets": ["llama-server"],
                       "compiler": "c++ (Debian 14.2.0-19) 14.2.0", "nvcc": "release 12.4, V12.4.131",
                       "prefix": "/opt/llama.cpp"})


def _install(root, plan):
    folder = root / plan["name"]
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "llama-server").write_bytes(b"\x7fELF not really")
    (folder / "bin" / "llama-server").chmod(0o755)
    (folder / "LICENSE").write_text("MIT\n")
    (folder / STAMP_FILE).write_text(json.dumps(plan["stamp"], sort_keys=True, indent=2) + "\n")
    return folder


def test_an_export_reads_back_with_its_folder_and_stamp_and_fits_a_v100_host(tmp_path):
    plan = _plan()
    folder = _install(tmp_path / "prefix", plan)
    dest = tmp_path / "artifacts" / (plan["name"] + ".tar.gz")
    dest.parent.mkdir()
    assert write_archive(str(folder), str(dest), TRIXIE) == []
    read = read_archive(str(dest))
    assert read["error"] == "" and read["folder"] == plan["name"] and read["stamp"] == plan["stamp"]
    assert read["sha256"] == file_digest(str(dest)) and read["built_on"] == TRIXIE
    installed = artifact_plan(read["stamp"], read["folder"], "/srv/llama", gpus=[V100], built_on=read["built_on"],
                              host_release=TRIXIE)
    assert installed["error"] == ""
    assert installed["install_dir"] == "/srv/llama/" + plan["name"] and installed["cuda_architectures"] == "70"
    assert installed["stamp"] == plan["stamp"] and installed["hash"] == plan["hash"]


def test_the_same_install_exports_the_same_bytes_and_is_written_once(tmp_path):
    plan = _plan()
    folder = _install(tmp_path / "prefix", plan)
    first, second = tmp_path / "a" / "x.tar.gz", tmp_path / "b" / "x.tar.gz"
    for dest in (first, second):
        dest.parent.mkdir()
        write_archive(str(folder), str(dest), TRIXIE)
    assert file_digest(str(first)) == file_digest(str(second))
    assert is_current(str(folder), str(first))
    # A new install of that name (a rebuild after its stamp was withdrawn) is written again.
    os.utime(folder / STAMP_FILE, (os.stat(first).st_mtime + 10,) * 2)
    assert not is_current(str(folder), str(first))
    with tarfile.open(first) as archive:
        names = [member.name for member in archive]
        assert names[:-1] == sorted(names[:-1]) and names[-1] == plan["name"] + "/built-on.json"
        assert {(member.uid, member.gid, member.uname) for member in archive} == {(0, 0, "root")}
    assert os.stat(first).st_mode & 0o777 == 0o644


def test_a_host_that_installed_an_export_exports_it_again_with_its_own_record(tmp_path):
    plan = _plan()
    first = tmp_path / "first.tar.gz"
    write_archive(str(_install(tmp_path / "build-host", plan)), str(first), TRIXIE)
    with tarfile.open(first) as archive:
        archive.extractall(tmp_path / "fleet-host", filter="data")
    again = tmp_path / "again.tar.gz"
    assert write_archive(str(tmp_path / "fleet-host" / plan["name"]), str(again), TRIXIE) == []
    assert read_archive(str(again))["error"] == ""


def test_earlier_exports_and_killed_writes_are_leftovers(tmp_path):
    for name in ("old-1234567890.tar.gz", "new-abcdef0123.tar.gz.partial", "new-abcdef0123.tar.gz", "notes"):
        (tmp_path / name).write_text("")
    assert leftovers(str(tmp_path / "new-abcdef0123.tar.gz")) == [
        str(tmp_path / "new-abcdef0123.tar.gz.partial"), str(tmp_path / "old-1234567890.tar.gz")]
    assert leftovers(str(tmp_path / "missing" / "x.tar.gz")) == []


@pytest.mark.parametrize("members, wanted", [
    ([("b-1/bin", "dir", 0o755), ("b-2/bin/llama-server", "file", 0o755)], "at its top level, not one install folder"),
    ([("b-1", "dir", 0o755), ("b-1/bin/llama-server", "symbolic link", 0o777), ("b-1/build-stamp.json", "file", 0o644)],
     "b-1/bin/llama-server is a symbolic link"),
    ([("b-1", "dir", 0o755), ("b-1/../../etc/cron.d/x", "file", 0o644)], "leaves the install folder"),
    ([("b-1", "dir", 0o755), ("b-1/./build-stamp.json", "file", 0o644)], "b-1/./build-stamp.json is not a normal path"),
    ([("b-1", "dir", 0o755), ("b-1/bin", "dir", 0o755), ("b-1/bin", "dir", 0o755)], "b-1/bin is named twice"),
    ([("b-1", "dir", 0o755), ("b-1/bin/llama-server", "file", 0o777)], "b-1/bin/llama-server has mode 0777"),
    ([("b-1", "dir", 0o755), ("b-1/bin/llama-server", "file", 0o4755)], "has mode 4755"),
    ([("b-1", "dir", 0o755), ("b-1/bin/llama-server", "file", 0o755)], "it has no b-1/build-stamp.json"),
    ([("b-1", "dir", 0o755), ("b-1/build-stamp.json", "file", 0o644)], "it has no b-1/bin/llama-server"),
    ([], "at its top level, not one install folder"),
])
def test_an_archive_unsafe_or_incomplete_to_unpack_is_refused(members, wanted):
    assert any(wanted in error for error in member_errors(members)), member_errors(members)


def _crafted(path, extra):
    """A real archive: a complete install folder, plus one crafted member."""
    plan = _plan()
    with tarfile.open(path, "w:gz") as archive:
        for name, data, mode in (("bin/llama-server", b"x", 0o755), (STAMP_FILE, json.dumps(plan["stamp"]).encode(), 0o644)):
            info = tarfile.TarInfo("%s/%s" % (plan["name"], name))
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
        extra(archive, plan["name"])


@pytest.mark.parametrize("extra, wanted", [
    (lambda archive, top: archive.addfile(_link(top + "/bin/evil", tarfile.SYMTYPE, "/etc/shadow")), "symbolic link"),
    (lambda archive, top: archive.addfile(_link(top + "/bin/hard", tarfile.LNKTYPE, "/etc/shadow")), "hard link"),
    (lambda archive, top: archive.addfile(_link(top + "/dev", tarfile.CHRTYPE, "")), "special file"),
    (lambda archive, top: archive.addfile(_data(top + "/./build-stamp.json", 0o644)), "not a normal path"),
    (lambda archive, top: archive.addfile(_data(top + "/bin/open", 0o777)), "has mode 0777"),
    (lambda archive, top: archive.addfile(_data("/" + top + "/x", 0o644)), "at its top level"),
])
def test_a_crafted_archive_is_refused_when_read(tmp_path, extra, wanted):
    path = tmp_path / "crafted.tar.gz"
    _crafted(path, extra)
    assert wanted in read_archive(str(path))["error"], read_archive(str(path))["error"]


def test_an_install_with_a_link_or_an_open_file_is_not_exported(tmp_path):
    folder = _install(tmp_path / "prefix", _plan())
    (folder / "bin" / "libggml.so").symlink_to("libggml.so.0")
    os.link(folder / "bin" / "llama-server", folder / "bin" / "llama-cli")
    (folder / "LICENSE").chmod(0o666)
    dest = tmp_path / "out.tar.gz"
    errors = write_archive(str(folder), str(dest), TRIXIE)
    assert any("libggml.so is a symbolic link" in error for error in errors), errors
    assert any("llama-cli is a hard link" in error for error in errors), errors
    assert any("LICENSE has mode 0666" in error for error in errors), errors
    assert not dest.exists() and not (tmp_path / "out.tar.gz.partial").exists()


def _link(name, kind, target):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, target, 0o755
    return info


def _data(name, mode):
    info = tarfile.TarInfo(name)
    info.mode = mode
    return info


def test_os_release_gives_the_distribution_release():
    assert os_release('PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nVERSION_ID="13"\nID=debian\n') == TRIXIE
    assert os_release('ID=ubuntu\nVERSION_ID="22.04"\n') == {"id": "ubuntu", "version_id": "22.04"}


def test_a_build_from_another_distribution_release_is_refused():
    plan = _plan()
    result = artifact_plan(plan["stamp"], plan["name"], "/opt/llama.cpp", gpus=[V100], built_on=TRIXIE,
                           host_release={"id": "ubuntu", "version_id": "22.04"})
    assert "it was built on debian 13, and this host runs ubuntu 22.04" in result["error"]
    assert "no built-on.json" in artifact_plan(plan["stamp"], plan["name"], "/opt/llama.cpp", gpus=[V100],
                                               host_release=TRIXIE)["error"]


def test_a_corrupt_archive_is_an_error_not_a_crash(tmp_path):
    broken = tmp_path / "b.tar.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00 truncated")
    assert "cannot be read" in read_archive(str(broken))["error"]


def test_a_folder_renamed_or_a_stamp_edited_after_the_export_is_refused():
    plan = _plan()
    assert "not named after its stamp" in artifact_plan(plan["stamp"], "b0c1e570-0000000000", "/opt/llama.cpp",
                                                        gpus=[V100], built_on=TRIXIE, host_release=TRIXIE)["error"]
    edited = dict(plan["stamp"], cuda_architectures="70;89")
    assert "not named after its stamp" in artifact_plan(edited, plan["name"], "/opt/llama.cpp", gpus=[V100],
                                                        built_on=TRIXIE, host_release=TRIXIE)["error"]
    assert "not a build stamp" in artifact_plan({"format": 99}, plan["name"], "/opt/llama.cpp")["error"]


@pytest.mark.parametrize("built_for, requested, gpus, wanted", [
    ("70", "", [V100], ""),
    ("70;89", "", [V100], ""),
    ("70", "", [V100, RTX4090], 'not for 89, which this host needs (for 70;89): build for "70;89"'),
    ("70-virtual", "", [V100], "not for 70"),
    ("", "", [V100], "it is a CPU build, and this host builds for CUDA 70"),
    ("70", "", [], 'no serving GPU: set llama_cpp_cuda_architectures: "70"'),
    ("70", "70", [], ""),
    ("", "", [], ""),
    ("all", "", [V100], ""),
    ("70", "all-major", [V100], ""),
])
def test_a_host_installs_a_build_only_with_machine_code_for_its_gpus(built_for, requested, gpus, wanted):
    plan = _plan(built_for)
    result = artifact_plan(plan["stamp"], plan["name"], "/opt/llama.cpp", requested, None, gpus, TRIXIE, TRIXIE)
    assert (wanted in result["error"]) if wanted else result["error"] == "", result["error"]


def test_what_ldd_finds_missing_names_who_gives_it():
    # The sm_70 llama-server in a bare Debian 13: no CUDA libraries, no OpenMP runtime (it came with gcc).
    missing = (FIXTURES / "debian13" / "ldd-r_llama-server_sm70_bare_trixie.txt").read_text()
    problems = library_problems(missing)
    assert [problem.split(" ", 1)[0] for problem in problems] == [
        "libgomp.so.1", "libcudart.so.12", "libcublas.so.12", "libcuda.so.1"]
    assert problems[0] == "libgomp.so.1 not found (GCC's OpenMP runtime: libgomp1, which this role installs for an " \
                          "exported build)"
    assert problems[1].startswith("libcudart.so.12 not found (the CUDA runtime: role cuda_toolkit")
    assert problems[3] == "libcuda.so.1 not found (the driver's CUDA library: role nvidia_driver)"
    found = (FIXTURES / "debian13" / "ldd-r_llama-server_sm70_runtime_trixie.txt").read_text()
    assert library_problems(found) == []


def test_an_older_library_without_the_builds_symbols_is_named_with_a_few_of_them():
    output = "\tlibcublas.so.12 => /usr/lib/x86_64-linux-gnu/libcublas.so.12 (0x00007f)\n" + "".join(
        "undefined symbol: cublasFunction%d, version libcublas.so.12\t(/opt/llama.cpp/x/bin/llama-server)\n" % number
        for number in range(7)) + "undefined symbol: cuMemMap\t(/opt/llama.cpp/x/bin/llama-server)\n"
    assert library_problems(output) == [
        "cublasFunction0, cublasFunction1, cublasFunction2, cublasFunction3, cublasFunction4, ... undefined "
        "(from libcublas.so.12: an older one is installed than the build's)",
        "cuMemMap undefined"]
