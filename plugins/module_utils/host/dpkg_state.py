"""What an interrupted dpkg left behind, and how to finish it before any apt task.

A controller killed during apt, or a power cut, leaves packages half-configured
(their maintainer script did not finish), unpacked, or half-installed with
"reinstallation required", and journal entries in /var/lib/dpkg/updates.
Until they are finished every apt-get refuses ("dpkg was interrupted, you must
manually run 'dpkg --configure -a'"). dpkg-query(1) documents the status
letters read here; tests/fixtures/debian12/SOURCES.md has real recordings.
"""
from __future__ import annotations

import re
from typing import Dict, List

# ${db:Status-Abbrev}: desired action, package status, error flag (dpkg-query(1)).
STATUS_NAMES = {"n": "not-installed", "c": "config-files", "H": "half-installed", "U": "unpacked",
                "F": "half-configured", "W": "triggers-awaiting", "t": "triggers-pending", "i": "installed"}
# dpkg --configure -a finishes these.
CONFIGURABLE = frozenset("UFWt")
ABSENT = frozenset("nc")


def parse_status(text: str) -> List[Dict[str, object]]:
    """Lines of `dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'`.

    An absent package has no version, so the line is split from the right.
    """
    entries = []
    for line in text.splitlines():
        match = re.match(r"^(\S+) (\S*) ?([a-z])([a-zA-Z])([ R]?)\s*$", line)
        if not match:
            continue
        name, version, want, status, error = match.groups()
        entries.append({"name": name, "version": version, "want": want, "status": status,
                        "reinstreq": error == "R"})
    return entries


def present(entry: Dict[str, object]) -> bool:
    """The package's files are on disk, wholly or in part (any state but not-installed and config-files)."""
    return entry["status"] not in ABSENT


def pending_journal(updates_entries: List[str]) -> bool:
    """/var/lib/dpkg/updates holds status changes dpkg has not merged (files named by number)."""
    return any(re.fullmatch(r"\d+", name) for name in updates_entries)


def _broken(entries: List[Dict[str, object]]) -> List[Dict[str, object]]:
    return [e for e in entries if e["reinstreq"] or e["status"] == "H"]


def reinstall_specs(entries: List[Dict[str, object]]) -> List[str]:
    """name=version of each half-installed (or reinstallation-required) package meant to stay installed.

    Wanted "install" or "hold": the driver role holds its packages, so a power
    cut during an upgrade of them leaves held ones half-installed.
    """
    return ["%s=%s" % (e["name"], e["version"]) for e in _broken(entries) if e["want"] in ("i", "h")]


def repair_plan(entries: List[Dict[str, object]], audit_text: str, updates_entries: List[str],
                fetchable: Dict[str, bool]) -> Dict[str, object]:
    """What to run before any apt task.

    A half-installed package or one marked "reinstallation required" that is
    meant to stay (want "i", or "h" for held) is reinstalled at its version; one whose removal
    was interrupted (want "r" or "p") is removed. fetchable: "name=version"
    of each to reinstall -> apt has an archive of it. One it has not is
    refused, with the command that removes it, before anything runs:
    removing a package the owner meant to keep is the owner's decision.
    """
    broken = _broken(entries)
    remove = [str(e["name"]) for e in broken if e["want"] in ("r", "p")]
    unfinished = [e for e in entries if e["status"] in CONFIGURABLE]
    reinstall = reinstall_specs(entries)
    missing = [spec for spec in reinstall if not fetchable.get(spec)]
    # apt-get refuses to run at all until dpkg's journal is merged, so every
    # repair starts with dpkg --configure -a.
    configure = bool(unfinished or broken or pending_journal(updates_entries) or audit_text.strip())
    reasons = ["%s %s is %s" % (e["name"], e["version"], STATUS_NAMES[e["status"]])
               + (" (reinstallation required)" if e["reinstreq"] else "")
               + (" while being removed" if e["want"] in ("r", "p") else "") for e in broken + unfinished]
    if pending_journal(updates_entries):
        reasons.append("/var/lib/dpkg/updates holds an unfinished journal")
    error = ""
    if missing:
        names = " ".join(spec.split("=")[0] for spec in missing)
        error = ("dpkg lists %s as half-installed (reinstallation required) and apt has no archive for %s. "
                 "Make the archive reachable again (the repository it came from), or remove it with "
                 "`dpkg --remove --force-remove-reinstreq %s` (the role that needs it installs it again); "
                 "then re-run. Nothing was changed." % (", ".join(missing), "it" if len(missing) == 1 else "them",
                                                         names))
    return {"configure": configure, "reinstall": [] if error else reinstall, "remove": [] if error else remove,
            "reasons": reasons, "error": error, "needed": bool(configure or reinstall or remove)}


def not_installed(status_text: str, wanted: List[str]) -> List[str]:
    """The wanted packages dpkg-query's status lines do not show fully installed (status i, no error flag).

    Read from `dpkg-query -W -f '${binary:Package} ${Version} ${db:Status-Abbrev}\\n' NAME...`, which prints
    nothing for a name it does not know (a virtual package, one apt never installed): that name is missing too,
    so apt is asked and decides. A Multi-Arch: same package is listed once per architecture dpkg knows it for
    (libgomp1:amd64, libgomp1:i386); a name counts as installed only when each of them is, so a foreign
    architecture's copy never stands in for the native one (at worst apt is asked for nothing).
    """
    states: Dict[str, List[bool]] = {}
    for entry in parse_status(status_text):
        states.setdefault(entry["name"].split(":")[0], []).append(entry["status"] == "i" and not entry["reinstreq"])
    return [name for name in wanted if not states.get(name) or not all(states[name])]
