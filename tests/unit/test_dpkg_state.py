"""An interrupted dpkg, recorded in a Debian 12 container (tests/fixtures/debian12/SOURCES.md), is finished, not ignored."""
from __future__ import annotations

from conftest import FIXTURES

from ansible_collections.v100.llm.plugins.module_utils.host.dpkg_state import not_installed, parse_status, pending_journal, present, repair_plan
from ansible_collections.v100.llm.plugins.module_utils.host.run_lock import RUN_LOCK, lock_holders, with_run_lock

DEBIAN12 = FIXTURES / "debian12"
STATUS = (DEBIAN12 / "dpkg-query_interrupted_debian12.txt").read_text()
AUDIT = (DEBIAN12 / "dpkg-audit_interrupted_debian12.txt").read_text()


def test_the_status_letters_are_read_with_the_reinstallation_flag():
    entries = {e["name"]: e for e in parse_status(STATUS)}
    assert entries["v100-guard-pre"] == {"name": "v100-guard-pre", "version": "1.0", "want": "i", "status": "H",
                                         "reinstreq": True}
    assert entries["v100-guard-test"]["status"] == "F" and not entries["v100-guard-test"]["reinstreq"]
    assert entries["bash"]["status"] == "i"
    # A half-installed or half-configured package is on disk: the driver's branch checks must see it.
    assert present(entries["v100-guard-pre"]) and present(entries["v100-guard-test"])
    absent = parse_status("nvidia-driver  un \nold-thing 1.0 rc \n")
    assert [present(e) for e in absent] == [False, False]


def test_a_half_configured_and_a_half_installed_package_are_finished_and_reinstalled():
    plan = repair_plan(parse_status(STATUS), AUDIT, ["0000", "tmp.i"], {"v100-guard-pre=1.0": True})
    assert plan["configure"] and plan["reinstall"] == ["v100-guard-pre=1.0"] and plan["error"] == ""
    assert "v100-guard-pre 1.0 is half-installed (reinstallation required)" in plan["reasons"]
    assert "v100-guard-test 1.0 is half-configured" in plan["reasons"]
    assert "/var/lib/dpkg/updates holds an unfinished journal" in plan["reasons"]


def test_a_package_apt_cannot_fetch_again_is_refused_before_anything_runs():
    # apt-get -f install said: "needs to be reinstalled, but I can't find an archive for it".
    plan = repair_plan(parse_status(STATUS), AUDIT, [], {"v100-guard-pre=1.0": False})
    assert plan["reinstall"] == []
    assert "dpkg --remove --force-remove-reinstreq v100-guard-pre" in plan["error"]
    assert "Nothing was changed" in plan["error"]


def test_a_sound_dpkg_needs_nothing():
    sound = "apt 2.6.1 ii \nbash 5.2.15-2+b13 ii \nnvidia-driver  un \n"
    plan = repair_plan(parse_status(sound), "", ["tmp.i"], {})
    assert plan == {"configure": False, "reinstall": [], "remove": [], "reasons": [], "error": "", "needed": False}
    assert not pending_journal(["tmp.i"]) and pending_journal(["0000"])


def test_the_holders_of_dpkg_locks_are_named():
    lines = (DEBIAN12 / "proc-locks_dpkg-running_debian12.txt").read_text()
    inodes = {line.split()[1]: int(line.split()[0]) for line in lines.splitlines() if line.split()[0].isdigit()}
    assert lock_holders(lines, [inodes["/var/lib/dpkg/lock-frontend"]]) == [57]
    assert lock_holders(lines, [12345]) == []


def test_long_steps_run_under_the_host_lock():
    assert with_run_lock(["cmake", "--build", "b"]) == ["flock", RUN_LOCK, "cmake", "--build", "b"]


def test_an_interrupted_removal_is_finished_not_reinstalled():
    entries = parse_status("old-driver 1.0 rHR\nmultiarch:amd64 2.0 iF \n")
    plan = repair_plan(entries, "", [], {})
    assert plan["remove"] == ["old-driver"] and plan["reinstall"] == [] and plan["error"] == ""
    assert "old-driver 1.0 is half-installed (reinstallation required) while being removed" in plan["reasons"]
    assert entries[1]["name"] == "multiarch:amd64"


def test_a_held_package_left_half_installed_is_reinstalled():
    # The driver role holds its packages: a power cut during an upgrade of them leaves "hHR".
    entries = parse_status("nvidia-kernel-dkms 550.163.01-1 hHR\nlibcuda1:amd64 550.163.01-1 hU \n")
    plan = repair_plan(entries, "", [], {"nvidia-kernel-dkms=550.163.01-1": True})
    assert plan["reinstall"] == ["nvidia-kernel-dkms=550.163.01-1"] and plan["remove"] == [] and plan["configure"]
    assert "libcuda1:amd64 550.163.01-1 is unpacked" in plan["reasons"]


def test_only_fully_installed_packages_are_not_asked_of_apt():
    # dpkg-query -W -f '${binary:Package} ${Version} ${db:Status-Abbrev}\n' ccache cmake libgomp1 g++ foo
    # (the demo container's answer, trimmed; foo unknown to dpkg prints nothing).
    status = ("ccache 4.8+really4.7.5-1 ii \n"
              "cmake 3.25.1-1 rc \n"
              "libgomp1:amd64 12.2.0-14 ii \n"
              "g++ 4:12.2.0-3 iF \n")
    assert not_installed(status, ["ccache", "cmake", "libgomp1", "g++", "foo"]) == ["cmake", "g++", "foo"]
    assert not_installed("", ["ccache"]) == ["ccache"]
    # An i386 copy installed beside a removed amd64 one does not count.
    assert not_installed("libgomp1:amd64 12.2.0-14 rc \nlibgomp1:i386 12.2.0-14 ii \n", ["libgomp1"]) == ["libgomp1"]
    assert not_installed("libgomp1:amd64 12.2.0-14 hi \n", ["libgomp1"]) == []
