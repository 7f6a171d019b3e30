"""What a host relies on after the cuda_toolkit role.

The packages come from the fixture apt repo that STANDS IN for NVIDIA's CUDA
repo (molecule/shared/fixture_cuda_repo/README.md): apt, its signature check,
dpkg and update-alternatives are real; nvcc replays real recorded output.
converge.yml installed 12.1 (not the default), then 12.4 (the default).
"""
import re

import pytest

REPO = "http://127.0.0.1:8765"
SOURCE = "/etc/apt/sources.list.d/nvidia-cuda.sources"


def _installed(host):
    listed = host.run("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n'")
    assert listed.rc == 0, listed.stderr
    return {line.split()[0] for line in listed.stdout.splitlines() if line.split()[1:] == ["ii"]}


def test_both_toolkits_are_installed_side_by_side(host):
    installed = _installed(host)
    assert {"cuda-toolkit-12-4", "cuda-toolkit-12-1"} <= installed
    assert host.file("/usr/local/cuda-12.4/bin/nvcc").is_file
    assert host.file("/usr/local/cuda-12.1/bin/nvcc").is_file


def test_no_driver_and_no_metapackage_was_installed(host):
    installed = _installed(host)
    assert not [p for p in installed if p.startswith(("cuda-drivers", "nvidia-driver", "nvidia-dkms"))]
    assert not [p for p in installed if p == "cuda" or re.fullmatch(r"cuda-\d+-\d+", p)]
    assert not host.file("/usr/bin/nvidia-smi").exists


def test_usr_local_cuda_is_the_requested_toolkit_in_manual_mode(host):
    assert host.check_output("readlink -f /usr/local/cuda") == "/usr/local/cuda-12.4"
    query = host.check_output("update-alternatives --query cuda")
    assert "Status: manual" in query
    assert "Value: /usr/local/cuda-12.4" in query
    # 12.1 is still registered, so it can be chosen later.
    assert "Alternative: /usr/local/cuda-12.1" in query


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_login_shell_finds_nvcc_of_the_default_toolkit(host, shell):
    shown = host.run(f"{shell} -lc 'command -v nvcc && nvcc --version'")
    assert shown.rc == 0, shown.stderr
    assert shown.stdout.startswith("/usr/local/cuda/bin/nvcc\n")
    assert "Cuda compilation tools, release 12.4, V12.4.131" in shown.stdout


def test_the_profile_script_adds_the_path_once(host):
    script = host.file("/etc/profile.d/cuda.sh")
    assert script.exists and script.user == "root" and script.mode == 0o644
    path = host.check_output("bash -lc '. /etc/profile.d/cuda.sh; . /etc/profile.d/cuda.sh; echo $PATH'")
    assert path.split(":").count("/usr/local/cuda/bin") == 1
    assert path.split(":")[0] == "/usr/local/cuda/bin"


def test_the_other_toolkit_keeps_its_own_nvcc(host):
    shown = host.check_output("/usr/local/cuda-12.1/bin/nvcc --version")
    assert "release 12.1, V12.1.105" in shown


def test_the_linker_path_has_the_toolkit_libraries(host):
    conf = host.file("/etc/ld.so.conf.d/cuda.conf")
    assert conf.exists and conf.mode == 0o644
    assert "/usr/local/cuda/lib64" in conf.content_string.splitlines()
    # ldconfig itself reads the entry (-N: print, do not rebuild the cache).
    scanned = host.run("ldconfig -v -N 2>/dev/null")
    assert re.search(r"^/usr/local/cuda/lib64:", scanned.stdout, re.M)


def test_the_repository_is_configured_and_read_by_apt(host):
    source = host.file(SOURCE)
    assert source.exists
    assert f"URIs: {REPO}/" in source.content_string
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in source.content_string
    keyring = host.file("/etc/apt/keyrings/nvidia-cuda.asc")
    assert keyring.exists and keyring.user == "root" and keyring.mode == 0o644
    policy = host.check_output("apt-cache policy")
    assert f"{REPO}  Packages" in policy
    assert "release o=NVIDIA,l=NVIDIA CUDA" in policy
    assert "cuda-toolkit-12-4" in host.check_output("apt-cache policy cuda-toolkit-12-4")


def _apt_update_with(host, source, lists):
    """apt-get update with only ``source`` and its own lists folder: apt's
    configuration and lists on the host are left as they are."""
    return host.run(
        f"mkdir -p {lists}/partial && apt-get update -o Dir::Etc::sourcelist={source}"
        f" -o Dir::Etc::sourceparts=- -o Dir::State::Lists={lists}"
    )


def test_apt_refuses_a_tampered_repo(host):
    """Rebuild the repo with --tamper (one byte of the Packages hash changed
    after signing), serve it on the container's 127.0.0.1:8766 and point a copy
    of the role's source at it, trusting the tampered repo's own key: apt must
    refuse it. The same copy pointed at the real fixture repo must pass, so the
    failure is the tampering and nothing else."""
    work = "/tmp/tampered-check"
    try:
        built = host.run(
            f"python3 /opt/fixture-cuda-repo/build_repo.py --out {work}/repo"
            " --recorded /opt/fixture-cuda-repo/recorded --tamper"
        )
        assert built.rc == 0, built.stderr
        served = host.run(
            "systemd-run --unit=fixture-cuda-repo-tampered /usr/bin/python3 -m http.server 8766"
            f" --bind 127.0.0.1 --directory {work}/repo"
        )
        assert served.rc == 0, served.stderr
        host.run_expect([0], "for i in $(seq 30); do"
                             " python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8766/InRelease\")'"
                             " 2>/dev/null && exit 0; sleep 0.5; done; exit 1")
        host.run_expect([0], f"cp {SOURCE} {work}/good.sources")
        host.run_expect([0], f"sed -e 's,127.0.0.1:8765,127.0.0.1:8766,'"
                             f" -e 's,^Signed-By:.*,Signed-By: {work}/repo/repo-key.asc,'"
                             f" {SOURCE} > {work}/tampered.sources")

        good = _apt_update_with(host, f"{work}/good.sources", f"{work}/lists-good")
        assert good.rc == 0, good.stdout + good.stderr

        bad = _apt_update_with(host, f"{work}/tampered.sources", f"{work}/lists-bad")
        output = bad.stdout + bad.stderr
        assert bad.rc != 0, output
        assert "BADSIG" in output or "Hash Sum mismatch" in output, output
        assert "127.0.0.1:8766" in output
    finally:
        host.run("systemctl stop fixture-cuda-repo-tampered.service")
        host.run(f"rm -rf {work}")
    # The role's own source and lists were not touched.
    assert f"{REPO}  Packages" in host.check_output("apt-cache policy")
    assert not host.service("fixture-cuda-repo-tampered").is_running


def test_nccl_for_the_toolkits_cuda_release_is_installed_and_held(host):
    """llama_cpp with NCCL (converge.yml): the repository's newest is 2.23.4-1+cuda12.6; the toolkit is 12.4."""
    for package in ("libnccl2", "libnccl-dev"):
        listed = host.run("dpkg-query -W -f '${Version} ${db:Status-Abbrev}' %s", package)
        assert listed.stdout.split() == ["2.21.5-1+cuda12.4", "hi"], (package, listed.stdout)
