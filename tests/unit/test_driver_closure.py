"""driver_closure: the whole package set of one driver version, from apt's real records.

Replays tests/fixtures/recorded/apt-cache_nvidia-driver-closure_debian12.txt (made by
tests/manual/record-driver-closure.sh on Debian 12 with bookworm and bookworm-security):
Debian's nvidia-graphics-drivers exist there in two versions, 535.261.03-1 (bookworm) and
535.309.01-0+deb12u1 (bookworm-security), with exact-version Depends between unversioned
names (libcuda1, nvidia-alternative, libgl1-nvidia-glvnd-glx, ...), the shape of NVIDIA's
own Debian packages.
"""
from __future__ import annotations

import pytest

from ansible_collections.v100.llm.plugins.module_utils.driver.closure import (
    Index,
    collect_closure,
    compare_versions,
    parse_records,
    parse_relations,
    pin_groups,
    preferring,
    resolve_closure,
    upstream_version,
)
from conftest import RECORDED

RECORDING = (RECORDED / "apt-cache_nvidia-driver-closure_debian12.txt").read_text()
COMPUTE = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-cfg1", "nvidia-persistenced"]
OLD, NEW = "535.261.03-1", "535.309.01-0+deb12u1"


def replay():
    outputs, command = {}, None
    for line in RECORDING.splitlines(keepends=True):
        if line.startswith("### "):
            command = line[4:].strip()
            outputs[command] = ""
        else:
            outputs[command] += line
    asked = []

    def run(argv):
        asked.append(" ".join(argv))
        return outputs[" ".join(argv)]
    return run, asked


def closure(tops, version="", installed=None):
    run, _ = replay()
    return collect_closure(run, tops, 535, version, installed or {})


@pytest.mark.parametrize("left, right, order", [
    (NEW, OLD, 1), (OLD, "535.261.03", 1), ("1.0~rc1", "1.0", -1), ("1:1.0", "2.0", 1), ("1.0-1", "1.0-1", 0),
    ("535.216.03-3~deb12u1", "535.216.03-3", -1), ("2.0.10", "2.0.9", 1)])
def test_debian_version_order(left, right, order):
    assert (compare_versions(left, right) > 0) - (compare_versions(left, right) < 0) == order


def test_relations_and_upstream_versions():
    assert parse_relations("a (>= 1.0) | b:any, c (= 2-1)") == [[("a", ">=", "1.0"), ("b", "", "")], [("c", "=", "2-1")]]
    assert upstream_version("1:535.261.03-1") == "535.261.03"


def test_newest_version_gives_one_consistent_set_from_the_security_pocket():
    result = closure(COMPUTE)
    assert result["error"] is None and result["anchor"] == NEW
    versions = {p["name"]: p["version"] for p in result["packages"]}
    # Unversioned names the branch pattern (nvidia-*, libnvidia-*) never covered.
    for name in ("libcuda1", "firmware-nvidia-gsp", "nvidia-alternative", "libnvidia-ptxjitcompiler1"):
        assert versions[name] == NEW, (name, versions)
    assert {v for n, v in versions.items() if n != "nvidia-persistenced"} == {NEW}
    # Branch-independent and non-driver packages are left to apt.
    assert "nvidia-modprobe" not in versions and "dkms" not in versions and "libc6" not in versions


def test_the_older_version_is_consistent_though_a_newer_one_is_there():
    """The mechanism that broke: a partial pin let apt mix versions across exact Depends."""
    result = closure(COMPUTE, "535.261.03")
    assert result["error"] is None and result["anchor"] == OLD
    versions = {p["name"]: p["version"] for p in result["packages"]}
    assert {v for n, v in versions.items() if n != "nvidia-persistenced"} == {OLD}
    assert versions["firmware-nvidia-gsp"] == OLD


def test_the_full_driver_brings_the_glx_libraries_at_the_same_version():
    result = closure(["nvidia-driver"], "535.261.03")
    versions = {p["name"]: p["version"] for p in result["packages"]}
    assert result["error"] is None
    for name in ("nvidia-driver-libs", "libgl1-nvidia-glvnd-glx", "libglx-nvidia0", "nvidia-egl-icd",
                 "nvidia-alternative", "xserver-xorg-video-nvidia"):
        assert versions.get(name) == OLD, (name, versions.get(name))


def test_the_installed_version_is_kept_when_nothing_is_asked():
    assert closure(COMPUTE, installed={"nvidia-kernel-dkms": OLD})["anchor"] == OLD
    # Another branch installed: the newest of the requested branch.
    assert closure(COMPUTE, installed={"nvidia-kernel-dkms": "470.256.02-1"})["anchor"] == NEW


def test_a_version_apt_does_not_know_is_an_error_naming_the_known_ones():
    result = closure(COMPUTE, "535.1.2")
    assert result["packages"] == []
    assert result["error"] == "nvidia-kernel-dkms 535.1.2 is not available (apt knows 535.309.01, 535.261.03)"


def test_another_branch_is_an_error():
    run, _ = replay()
    result = collect_closure(run, COMPUTE, 550)
    assert result["packages"] == [] and "no version of nvidia-kernel-dkms in branch 550" in result["error"]


def test_an_unknown_package_is_an_error_not_a_loop():
    outputs = {"apt-cache show cuda-drivers-580": "", "apt-cache showpkg cuda-drivers-580": "Reverse Provides: \n"}
    result = collect_closure(lambda argv: outputs[" ".join(argv)], ["cuda-drivers-580"], 580)
    assert result["error"] == "apt knows no package named cuda-drivers-580" and result["packages"] == []


def test_pins_group_by_version():
    result = closure(COMPUTE, "535.261.03")
    groups = pin_groups(result["packages"])
    assert [g["version"] for g in groups if "libcuda1" in g["names"]] == [OLD]
    assert sum(len(g["names"]) for g in groups) == len(result["packages"])


def test_an_exact_dependency_apt_cannot_meet_is_an_error():
    # A mirror that has the metapackage of one version and the library of another.
    text = ("Package: a\nVersion: 550.1-1\nDepends: b (= 550.1-1)\n\n"
            "Package: b\nVersion: 550.2-1\n\n")
    result = resolve_closure(Index(parse_records(text)), ["a"], 550, absent={"a", "b"})
    assert result["error"] == "a 550.1-1 needs b (= 550.1-1), which apt cannot provide"


def test_a_package_versioned_like_the_kernel_is_left_to_apt():
    # Ubuntu's prebuilt, signed modules carry the kernel's version, not the driver's (shape only).
    text = ("Package: nvidia-headless-no-dkms-580-server\nVersion: 580.95.05-0ubuntu0.24.04.1\n\n"
            "Package: linux-modules-nvidia-580-server-generic\nVersion: 6.8.0-48.48\n\n")
    names = ["nvidia-headless-no-dkms-580-server", "linux-modules-nvidia-580-server-generic"]
    result = resolve_closure(Index(parse_records(text)), names, 580, absent=set(names))
    assert result["error"] is None
    assert [p["name"] for p in result["packages"]] == ["nvidia-headless-no-dkms-580-server"]


def test_epochs_split_at_the_first_colon():
    assert compare_versions("1:2:3-1", "1:2:4-1") < 0 and compare_versions("2:1.0", "1:9.0") > 0


def test_the_preferred_repository_answers_for_its_names_and_the_rest_come_from_every_list():
    # NVIDIA's lists and a distribution source both carry libcuda1 550.163.01-1 (with other Depends);
    # dkms is in the distribution's lists only.
    nvidia = {"libcuda1": "Package: libcuda1\nVersion: 550.163.01-1\nDepends: nvidia-alternative (= 550.163.01-1)\n"}
    everything = {"libcuda1": "Package: libcuda1\nVersion: 550.163.01-1\nDepends: libnvidia-trixie-only\n",
                  "dkms": "Package: dkms\nVersion: 3.0.10-8+deb12u1\n"}

    def lists(records):
        def run(argv):
            return "\n".join(records[name] for name in argv[2:] if name in records)
        return run

    run = preferring(lists(nvidia), lists(everything))
    records = parse_records(run(["apt-cache", "show", "libcuda1", "dkms"]))
    assert [(r["Package"], r.get("Depends")) for r in records] == [
        ("libcuda1", "nvidia-alternative (= 550.163.01-1)"), ("dkms", None)]


def test_packages_apt_has_no_record_of_are_named_apart_from_other_errors():
    unknown = collect_closure(lambda argv: "", ["cuda-drivers-550"], 550)
    assert unknown["unknown"] == ["cuda-drivers-550"] and "apt knows no package named" in unknown["error"]
    records = "Package: cuda-drivers-550\nVersion: 550.163.01-1\n"
    wrong_version = collect_closure(lambda argv: records if argv[:2] == ["apt-cache", "show"] else "",
                                    ["cuda-drivers-550"], 550, "550.54.15")
    assert wrong_version["unknown"] == [] and "is not available" in wrong_version["error"]
    # One known, one not: the repository is there, and the error is real.
    partly = collect_closure(lambda argv: records if argv[:2] == ["apt-cache", "show"] else "",
                             ["cuda-drivers-550", "nvidia-utils-550-server"], 550)
    assert partly["unknown"] == [] and "apt knows no package named nvidia-utils-550-server" in partly["error"]
