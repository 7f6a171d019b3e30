"""debian_sources: each suite gets only the components no other source configures.

Fed with a real `apt-get indextargets` recording from a Debian 12 host whose
deb822 debian.sources configures main for bookworm, -updates and -security.
"""
from __future__ import annotations

from ansible_collections.v100.llm.plugins.module_utils.driver.debian_sources import (
    empty_indexes, missing_components, parse_indextargets, release_components, unread_suites)
from conftest import RECORDED

MAIN_ONLY = (RECORDED / "apt-get-indextargets_debian12-deb822-main.txt").read_text()
# What the nvidia_driver role passes: its file-name prefix and the file of earlier versions.
OWN = ["/etc/apt/sources.list.d/v100-llm-debian-", "/etc/apt/sources.list.d/debian-nonfree.sources"]


def test_the_recording_parses():
    assert ("bookworm-security", "main", "/etc/apt/sources.list.d/debian.sources") in parse_indextargets(MAIN_ONLY)


def test_a_main_only_host_gets_all_three_components_in_every_suite_security_included():
    plan = missing_components(MAIN_ONLY, "bookworm", OWN)
    assert plan == [{"suite": suite, "components": ["contrib", "non-free", "non-free-firmware"]}
                    for suite in ("bookworm", "bookworm-updates", "bookworm-security")]


def test_a_component_another_source_has_is_not_configured_again():
    # The debootstrap default: one-line sources.list with every component for the release and -updates.
    other = "".join("%s %s /etc/apt/sources.list:%d\n" % (suite, component, line)
                    for line, suite in enumerate(("bookworm", "bookworm-updates"), 1)
                    for component in ("main", "contrib", "non-free", "non-free-firmware"))
    plan = missing_components(other, "bookworm", OWN)
    assert plan[0] == {"suite": "bookworm", "components": []}
    assert plan[1] == {"suite": "bookworm-updates", "components": []}
    assert plan[2] == {"suite": "bookworm-security", "components": ["contrib", "non-free", "non-free-firmware"]}


def test_the_role_own_files_do_not_count_so_the_plan_is_stable():
    ours = ("bookworm-security non-free %sbookworm-security.sources:1\n" % OWN[0]
            + "bookworm contrib %s:1\n" % OWN[1])
    assert missing_components(MAIN_ONLY + ours, "bookworm", OWN) == missing_components(MAIN_ONLY, "bookworm", OWN)


# Recorded 2026-12-02 from deb.debian.org after the role's two source files were written and apt-get update ran:
# bookworm-updates publishes its contrib and non-free indexes empty, so apt stored no file for them.
INDEXES = [tuple(line.split("\t")) for line in
           (RECORDED / "apt-get-indextargets_debian12-role-sources_metakey.txt").read_text().splitlines()]
LISTS = (RECORDED / "ls_var-lib-apt-lists_debian12-role-sources.txt").read_text().split()
UPDATES_RELEASE = (RECORDED / "InRelease_bookworm-updates_2026-12-01.txt").read_text()
RELEASES = {"deb.debian.org_debian_dists_bookworm-updates_InRelease": UPDATES_RELEASE,
            "deb.debian.org_debian_dists_bookworm_InRelease": "SHA256:\n"}
SUITES = ["bookworm", "bookworm-updates"]


def test_the_archive_lists_bookworm_updates_non_free_as_empty():
    assert {"non-free/binary-amd64/Packages", "contrib/binary-amd64/Packages"} <= empty_indexes(UPDATES_RELEASE)
    assert "main/binary-amd64/Packages" not in empty_indexes(UPDATES_RELEASE)


def test_an_index_published_empty_is_read_though_apt_stored_no_file():
    assert not any("bookworm-updates_non-free" in name for name in LISTS)
    assert unread_suites(INDEXES, LISTS, RELEASES, SUITES) == []


def test_a_suite_whose_release_apt_has_not_fetched_is_unread():
    lists = [name for name in LISTS if "bookworm-updates" not in name]
    releases = {name: text for name, text in RELEASES.items() if "bookworm-updates" not in name}
    assert unread_suites(INDEXES, lists, releases, SUITES) == ["bookworm-updates"]


def test_a_component_added_after_the_last_refresh_is_unread():
    # The role's source written, the run killed before apt-get update: bookworm's InRelease is there, its
    # non-free index is not, and the Release file offers it with content.
    lists = [name for name in LISTS if "bookworm_non-free_" not in name]
    releases = dict(RELEASES, **{"deb.debian.org_debian_dists_bookworm_InRelease":
                                 "Components: main contrib non-free non-free-firmware\nSHA256:\n"
                                 " 0123 102400 non-free/binary-amd64/Packages\n"})
    assert unread_suites(INDEXES, lists, releases, SUITES) == ["bookworm"]


def test_an_index_stored_compressed_counts_as_read():
    lists = [name + ".lz4" if name.endswith("_Packages") else name for name in LISTS]
    assert unread_suites(INDEXES, lists, RELEASES, SUITES) == []


def test_only_the_asked_suites_and_components_count():
    lists = [name for name in LISTS if "bookworm_main_" not in name]
    assert unread_suites(INDEXES, lists, {}, ["bookworm-security"]) == []
    assert unread_suites(INDEXES, lists, RELEASES, SUITES) == []


def test_a_component_the_suite_does_not_offer_is_not_waited_for():
    # A partial mirror without non-free: apt skips the target ("doesn't have the component"), so a refresh
    # would never bring its file.
    lists = [name for name in LISTS if "bookworm_non-free_" not in name]
    releases = dict(RELEASES, **{"deb.debian.org_debian_dists_bookworm_InRelease": "Components: main contrib\n"})
    assert unread_suites(INDEXES, lists, releases, SUITES) == []
    assert release_components(UPDATES_RELEASE) == ["main", "contrib", "non-free-firmware", "non-free"]


def test_the_security_archive_components_count_by_their_last_part():
    # deb.debian.org/debian-security/dists/bookworm-security/InRelease, fetched 2026-12-02: the components carry
    # "updates/", the index paths do not (" ... 38710 non-free/binary-amd64/Packages").
    release = "Components: updates/main updates/contrib updates/non-free-firmware updates/non-free\n"
    assert release_components(release) == ["main", "contrib", "non-free-firmware", "non-free"]
    targets = [("bookworm-security", "non-free",
                "/var/lib/apt/lists/deb.debian.org_debian-security_dists_bookworm-security_non-free_binary-amd64_Packages",
                "non-free/binary-amd64/Packages")]
    releases = {"deb.debian.org_debian-security_dists_bookworm-security_InRelease": release}
    assert unread_suites(targets, [], releases, ["bookworm-security"]) == ["bookworm-security"]
