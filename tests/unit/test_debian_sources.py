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
