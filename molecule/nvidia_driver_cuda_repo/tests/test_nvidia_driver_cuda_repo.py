"""After converging on 550.54.15 and changing to branch 580, through the stand-in
CUDA repo (molecule/shared/fixture_cuda_repo, shaped like NVIDIA's debian12
repo: unversioned names bound by exact-version Depends). converge.yml already
checked, on each run, that the chosen set was one version, held, and left alone
by `apt-get -s upgrade` and `dist-upgrade`; this checks the end state on 580."""
import re

VERSION = "580.95.05-1"
SET = ["cuda-drivers-580", "nvidia-driver-cuda", "nvidia-kernel-dkms", "libcuda1", "libnvidia-ml1", "nvidia-smi",
       "nvidia-persistenced", "nvidia-alternative", "firmware-nvidia-gsp"]


def _installed(host):
    listed = host.check_output("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'")
    # Status-Abbrev: "ii" installed, "hi" held and installed, "un"/"rc" not installed.
    return {fields[0]: fields[1] for fields in map(str.split, listed.splitlines())
            if len(fields) == 3 and fields[2][1] == "i"}


def test_the_whole_set_is_on_580(host):
    installed = _installed(host)
    for name in SET:
        assert installed.get(name) == VERSION, (name, installed.get(name))
    assert "cuda-drivers-550" not in installed
    # nvidia-modprobe works with every branch: the first run's one stays, unheld.
    assert installed.get("nvidia-modprobe", "").startswith("550.")


def test_never_the_open_flavour(host):
    assert "nvidia-kernel-open-dkms" not in _installed(host)


def test_holds_follow_the_set(host):
    held = set(host.check_output("apt-mark showhold").split())
    assert set(SET) <= held, set(SET) - held
    assert "cuda-drivers-550" not in held and "nvidia-modprobe" not in held


def test_the_pin_names_the_set_and_blocks_other_versions(host):
    pin = host.file("/etc/apt/preferences.d/nvidia-driver-branch.pref").content_string
    assert f"Pin: version {VERSION}\n" in pin and "Pin: version 580.*" in pin
    policy = host.check_output("apt-cache policy libcuda1")
    assert f"Candidate: {VERSION}" in policy and "550.163.01-1 -1" in policy, policy
    for name in ("cuda-drivers-550", "nvidia-kernel-open-dkms"):
        policy = host.check_output(f"apt-cache policy {name}")
        assert re.search(r"Candidate: \(none\)", policy), policy


def test_repository_trusted_through_its_own_keyring(host):
    source = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    assert "URIs: http://127.0.0.1:8765/" in source
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in source
    assert host.file("/etc/apt/keyrings/nvidia-cuda.asc").exists


def test_reboot_requested_and_driver_not_loaded_in_a_container(host):
    assert host.file("/var/lib/v100-llm/reboot-required.d/nvidia-driver").exists
    # By full path: prepare put a preflight stand-in named nvidia-smi in /usr/local/bin.
    smi = host.run("/usr/bin/nvidia-smi")
    assert smi.rc == 9 and "couldn't communicate with the NVIDIA driver" in smi.stdout
