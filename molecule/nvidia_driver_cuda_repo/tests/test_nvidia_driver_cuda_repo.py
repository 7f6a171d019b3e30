"""After converging on 535 and re-running with 550, through the stand-in
CUDA repo (molecule/shared/fixture_cuda_repo): one branch, held, pinned."""
import re


def _installed(host):
    listed = host.check_output("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' "
                               "'nvidia-*' 'libnvidia-*' 'cuda-drivers*' 2>/dev/null || true")
    # Status-Abbrev: "ii" installed, "hi" held and installed, "un"/"rc" not installed.
    return {fields[0]: fields[1] for fields in map(str.split, listed.splitlines())
            if len(fields) == 3 and fields[2][1] == "i"}


def test_only_branch_550_is_installed(host):
    installed = _installed(host)
    assert {"cuda-drivers-550", "nvidia-driver-550", "nvidia-dkms-550"} <= set(installed)
    assert not [name for name in installed if "535" in name], installed
    # nvidia-modprobe works with every branch: the 535 run's one stays, unheld.
    assert "nvidia-modprobe" in installed
    assert all(version.startswith("550.") for name, version in installed.items() if name != "nvidia-modprobe"), installed


def test_never_the_open_flavour(host):
    assert not [name for name in _installed(host) if "open" in name]


def test_holds_follow_the_branch(host):
    held = set(host.check_output("apt-mark showhold").split())
    assert {"cuda-drivers-550", "nvidia-driver-550", "nvidia-dkms-550"} <= held
    assert not [name for name in held if "535" in name]
    assert "nvidia-modprobe" not in held


def test_the_pin_blocks_other_branches_and_open_modules(host):
    assert "Pin: version 550.*" in host.file("/etc/apt/preferences.d/nvidia-driver-branch.pref").content_string
    old = host.check_output("apt-cache policy cuda-drivers-535")
    assert re.search(r"Candidate: \(none\)", old), old
    open_policy = host.check_output("apt-cache policy nvidia-driver-550-open")
    assert re.search(r"Candidate: \(none\)", open_policy), open_policy


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
