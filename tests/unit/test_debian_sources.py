"""debian_sources: each suite gets only the components no other source configures.

Fed with a real `apt-get indextargets` recording from a Debian 12 host whose
deb822 debian.sources configures main for bookworm, -updates and -security.
"""
from __future__ import annotations

from ansible.module_utils.debian_sources import missing_components, parse_indextargets
from conftest import RECORDED

MAIN_ONLY = (RECORDED / "apt-get-indextargets_debian12-deb822-main.txt").read_text()
# What the nvidia_driver role passes: its file-name prefix and the file of earlier versions.
OWN = ["/etc/apt/sources.list.d/v100-llm-debian-", "/etc/apt/sources.list.d/debian-nonfree.sources"]


def test_the_recording_parses():
    assert ("bookworm-security", "main", "/etc/apt/sources.list.d/debian.sources", None) in parse_indextargets(MAIN_ONLY)


def test_a_main_only_host_gets_all_three_components_in_every_suite_security_included():
    plan = missing_components(MAIN_ONLY, "bookworm", OWN)
    assert plan == [{"suite": suite, "components": ["contrib", "non-free", "non-free-firmware"], "uri": None}
                    for suite in ("bookworm", "bookworm-updates", "bookworm-security")]


def test_a_component_another_source_has_is_not_configured_again():
    # The debootstrap default: one-line sources.list with every component for the release and -updates.
    other = "".join("%s %s /etc/apt/sources.list:%d\n" % (suite, component, line)
                    for line, suite in enumerate(("bookworm", "bookworm-updates"), 1)
                    for component in ("main", "contrib", "non-free", "non-free-firmware"))
    plan = missing_components(other, "bookworm", OWN)
    assert plan[0] == {"suite": "bookworm", "components": [], "uri": None}
    assert plan[1] == {"suite": "bookworm-updates", "components": [], "uri": None}
    assert plan[2] == {"suite": "bookworm-security", "components": ["contrib", "non-free", "non-free-firmware"],
                       "uri": None}


def test_the_role_own_files_do_not_count_so_the_plan_is_stable():
    ours = ("bookworm-security non-free %sbookworm-security.sources:1\n" % OWN[0]
            + "bookworm contrib %s:1\n" % OWN[1])
    assert missing_components(MAIN_ONLY + ours, "bookworm", OWN) == missing_components(MAIN_ONLY, "bookworm", OWN)


# A host on a local mirror (apt-cacher style proxy), recorded with $(REPO_URI).
LOCAL_MIRROR = (RECORDED / "apt-get-indextargets_debian12-local-mirror.txt").read_text()


def test_each_suite_comes_from_the_mirror_the_host_already_uses():
    plan = missing_components(LOCAL_MIRROR, "bookworm", OWN)
    assert [(item["suite"], item["uri"]) for item in plan] == [
        ("bookworm", "http://apt-mirror.lan:3142/debian/"),
        ("bookworm-updates", "http://apt-mirror.lan:3142/debian/"),
        ("bookworm-security", "http://apt-mirror.lan:3142/debian-security/")]


def test_updates_without_a_source_of_its_own_take_the_release_mirror_and_ours_never_count():
    release_only = "".join(line + "\n" for line in LOCAL_MIRROR.splitlines() if line.startswith("bookworm main"))
    ours = "bookworm-security non-free %sbookworm-security.sources:1 http://deb.debian.org/debian-security/\n" % OWN[0]
    plan = missing_components(release_only + ours, "bookworm", OWN)
    assert [item["uri"] for item in plan] == ["http://apt-mirror.lan:3142/debian/"] * 2 + [None]
