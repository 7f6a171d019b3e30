"""The signed fixture apt repo that stands in for NVIDIA's CUDA repo in molecule.

build_repo.py (molecule/shared/fixture_cuda_repo/) is test infrastructure, but
the molecule scenarios trust it: if its Release hashes or signatures were
wrong, apt would refuse the repo for a reason the roles have nothing to do with,
and if --tamper did not break it, the "apt refuses a tampered mirror" check
would prove nothing. These tests build it for real with dpkg-deb and gpg.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT, RECORDED

BUILDER = PROJECT_ROOT / "molecule" / "shared" / "fixture_cuda_repo" / "build_repo.py"
MISSING = [tool for tool in ("gpg", "gpgconf", "dpkg-deb") if shutil.which(tool) is None]

pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"building the fixture apt repo needs {', '.join(MISSING)} (Debian packages gnupg and dpkg)",
)

DRIVER_VERSIONS = ["535.261.03-1", "550.163.01-1", "550.54.15-1", "580.95.05-1"]
# Unversioned names, one of each per driver version, as in NVIDIA's debian12 repo.
DRIVER_NAMES = ["firmware-nvidia-gsp", "libcuda1", "libnvidia-ml1", "nvidia-alternative", "nvidia-driver-cuda",
                "nvidia-kernel-dkms", "nvidia-kernel-open-dkms", "nvidia-modprobe", "nvidia-persistenced",
                "nvidia-smi"]
EXPECTED = {
    "cuda-drivers-535": ["535.261.03-1"],
    "cuda-drivers-550": ["550.163.01-1", "550.54.15-1"],
    "cuda-drivers-580": ["580.95.05-1"],
    "cuda-toolkit-12-1": ["12.1.1-1"],
    "cuda-toolkit-12-4": ["12.4.1-1"],
    **{name: DRIVER_VERSIONS for name in DRIVER_NAMES},
    # NVIDIA builds each NCCL release for several CUDA releases (pkg/debian/changelog.in).
    **{name: ["2.20.5-1+cuda12.4", "2.21.5-1+cuda12.4", "2.23.4-1+cuda12.6"] for name in ("libnccl2", "libnccl-dev")},
}


def _build(out: Path, *extra: str) -> Path:
    subprocess.run([sys.executable, str(BUILDER), "--out", str(out), *extra], check=True,
                   capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def tampered(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("tampered"), "--tamper")


def _stanzas(repo: Path) -> list[dict[str, str]]:
    out = []
    for block in repo.joinpath("Packages").read_text().strip().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if not line.startswith(" "):
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        out.append(fields)
    return out


def _release_hashes(text: str, section: str) -> dict[str, tuple[str, int]]:
    body = text.split(f"\n{section}:\n", 1)[1]
    hashes = {}
    for line in body.splitlines():
        if not line.startswith(" "):
            break
        digest, size, name = line.split()
        hashes[name] = (digest, int(size))
    return hashes


def _gpg_verify(key: Path, *files: Path) -> subprocess.CompletedProcess:
    """gpg --verify in a throwaway GNUPGHOME that trusts only ``key``."""
    home = tempfile.mkdtemp(prefix="fxv-", dir="/tmp")  # short: gpg-agent socket path limit
    env = {**os.environ, "GNUPGHOME": home}
    try:
        subprocess.run(["gpg", "--batch", "--import", str(key)], env=env, check=True, capture_output=True)
        return subprocess.run(["gpg", "--batch", "--status-fd", "1", "--verify", *map(str, files)],
                              env=env, capture_output=True, text=True)
    finally:
        subprocess.run(["gpgconf", "--kill", "all"], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_the_package_set_matches_nvidias_names_and_versions(repo):
    versions = {}
    for stanza in _stanzas(repo):
        versions.setdefault(stanza["Package"], []).append(stanza["Version"])
    assert {name: sorted(found) for name, found in versions.items()} == EXPECTED


def test_no_pinning_package_and_no_cuda_metapackage(repo):
    names = {s["Package"] for s in _stanzas(repo)}
    assert not [n for n in names if n.startswith("nvidia-driver-pinning")]
    assert not names & {"cuda", "cuda-12-1", "cuda-12-4", "cuda-drivers"}


def test_release_says_nvidia_and_hashes_the_packages_files(repo):
    release = repo.joinpath("Release").read_text()
    assert "Origin: NVIDIA\n" in release and "Label: NVIDIA CUDA\n" in release
    assert "Architectures: amd64\n" in release and re.search(r"^Date: .+", release, re.M)
    for section, algo in (("MD5Sum", "md5"), ("SHA256", "sha256")):
        hashes = _release_hashes(release, section)
        assert sorted(hashes) == ["Packages", "Packages.gz"]
        for name, (digest, size) in hashes.items():
            data = repo.joinpath(name).read_bytes()
            assert (hashlib.new(algo, data).hexdigest(), len(data)) == (digest, size), name


def test_packages_gz_is_packages(repo):
    assert gzip.decompress(repo.joinpath("Packages.gz").read_bytes()) == repo.joinpath("Packages").read_bytes()


def test_every_deb_matches_its_packages_entry(repo):
    for stanza in _stanzas(repo):
        data = repo.joinpath(stanza["Filename"]).read_bytes()
        assert stanza["Filename"].startswith("./")
        assert int(stanza["Size"]) == len(data)
        assert stanza["SHA256"] == hashlib.sha256(data).hexdigest()
        assert stanza["MD5sum"] == hashlib.md5(data, usedforsecurity=False).hexdigest()
        assert stanza["Description"]


def test_inrelease_and_release_gpg_verify_against_the_exported_key(repo):
    fingerprint = repo.joinpath("repo-key.fingerprint").read_text().strip()
    assert re.fullmatch(r"[0-9A-F]{40}", fingerprint)
    for files in ((repo / "InRelease",), (repo / "Release.gpg", repo / "Release")):
        verified = _gpg_verify(repo / "repo-key.asc", *files)
        assert verified.returncode == 0, verified.stderr
        assert f"VALIDSIG {fingerprint}" in verified.stdout


def test_inrelease_carries_the_release_text(repo):
    inrelease = repo.joinpath("InRelease").read_text()
    assert repo.joinpath("Release").read_text() in inrelease


def test_every_dependency_is_in_the_repo(repo):
    stanzas = _stanzas(repo)
    available = {s["Package"] for s in stanzas}
    available |= {p.strip() for s in stanzas for p in s.get("Provides", "").split(",") if p.strip()}
    for stanza in stanzas:
        for relation in filter(None, stanza.get("Depends", "").split(",")):
            alternatives = [re.split(r"[\s(]", alt.strip())[0] for alt in relation.split("|")]
            assert set(alternatives) & available, f"{stanza['Package']} depends on {relation.strip()}"


def test_dependency_shape_is_nvidias(repo):
    by_version = {(s["Package"], s["Version"]): s for s in _stanzas(repo)}
    old = "550.54.15-1"
    # Lower bounds only from the metapackage (apt alone would take 580)...
    assert by_version[("cuda-drivers-550", old)]["Depends"] == \
        "nvidia-driver-cuda (>= 550.54.15), nvidia-kernel-dkms (>= 550.54.15)"
    # ...exact versions between the unversioned names.
    assert by_version[("nvidia-driver-cuda", old)]["Depends"] == (
        f"libcuda1 (= {old}), nvidia-smi (= {old}), nvidia-persistenced (= {old}), nvidia-alternative (= {old})")
    assert by_version[("libcuda1", old)]["Depends"] == f"nvidia-alternative (= {old})"
    assert by_version[("nvidia-kernel-dkms", old)]["Depends"] == \
        f"firmware-nvidia-gsp (= {old}) | firmware-nvidia-gsp-550.54.15, nvidia-alternative (= {old})"
    assert by_version[("nvidia-kernel-dkms", old)]["Conflicts"] == "nvidia-kernel-open-dkms"
    unit = subprocess.run(["dpkg-deb", "-c", str(repo / f"nvidia-persistenced_{old}_amd64.deb")],
                          capture_output=True, text=True, check=True).stdout
    assert "./lib/systemd/system/nvidia-persistenced.service" in unit
    # A toolkit pulls no driver, as NVIDIA's cuda-toolkit-12-x does.
    assert "Depends" not in by_version[("cuda-toolkit-12-4", "12.4.1-1")]
    assert "Depends" not in by_version[("cuda-toolkit-12-1", "12.1.1-1")]


@pytest.mark.parametrize(("release", "recording"), [
    ("12.1", "nvcc--version_cuda12.1_V12.1.105.txt"),
    ("12.4", "nvcc--version_cuda12.4_V12.4.131.txt"),
])
def test_toolkit_ships_a_replaying_nvcc_and_registers_the_alternative(repo, tmp_path, release, recording):
    deb = repo / f"cuda-toolkit-{release.replace('.', '-')}_{release}.1-1_amd64.deb"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    nvcc = tmp_path / f"usr/local/cuda-{release}/bin/nvcc"
    assert "STAND-IN" in nvcc.read_text()
    shown = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True)
    assert shown.returncode == 0
    assert shown.stdout == RECORDED.joinpath(recording).read_text()
    assert list((tmp_path / f"usr/local/cuda-{release}/lib64").iterdir())
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(control)], check=True)
    priority = release.replace(".", "")
    assert f"update-alternatives --install /usr/local/cuda cuda /usr/local/cuda-{release} {priority}" in \
        control.joinpath("postinst").read_text()
    assert f"update-alternatives --remove cuda /usr/local/cuda-{release}" in control.joinpath("prerm").read_text()


def test_driver_ships_an_nvidia_smi_that_fails_like_the_real_one_without_a_module(repo, tmp_path):
    subprocess.run(["dpkg-deb", "-x", str(repo / "nvidia-smi_550.54.15-1_amd64.deb"), str(tmp_path)], check=True)
    smi = tmp_path / "usr/bin/nvidia-smi"
    assert "STAND-IN" in smi.read_text()
    shown = subprocess.run([str(smi)], capture_output=True, text=True)
    assert shown.returncode == 9
    assert shown.stdout == RECORDED.joinpath("nvidia-smi_failed-to-communicate.txt").read_text()


def test_tamper_breaks_the_signature_and_the_hash(tampered):
    for files in ((tampered / "InRelease",), (tampered / "Release.gpg", tampered / "Release")):
        verified = _gpg_verify(tampered / "repo-key.asc", *files)
        assert verified.returncode != 0
        assert "BADSIG" in verified.stdout
    listed = _release_hashes(tampered.joinpath("Release").read_text(), "SHA256")["Packages"][0]
    assert listed != hashlib.sha256(tampered.joinpath("Packages").read_bytes()).hexdigest()
    # Only that one hash differs: the Packages.gz line and the rest are intact.
    gz = _release_hashes(tampered.joinpath("Release").read_text(), "SHA256")["Packages.gz"][0]
    assert gz == hashlib.sha256(tampered.joinpath("Packages.gz").read_bytes()).hexdigest()
