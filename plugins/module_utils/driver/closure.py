# -*- coding: utf-8 -*-
"""The whole set of binary packages one driver version brings, chosen from apt's records.

NVIDIA's Debian packages (and Debian's own) have unversioned names (libcuda1,
nvidia-driver-libs, libgl1-nvidia-glvnd-glx, firmware-nvidia-gsp, ...) that
depend on each other with exact versions, `(= ${binary:Version})`
(NVIDIA/debian-packaging-nvidia-driver, debian/control.in; Debian's
nvidia-graphics-drivers in bookworm and bookworm-security). A pin that covers
only some of the names lets apt take the newest version of the rest, which
then cannot meet the exact dependencies ("Depends: libgl1-nvidia-glvnd-glx (=
...) but it is not going to be installed"). So the role pins, installs, holds
and verifies every package of the closure at the version chosen here.

Input: `apt-cache show <names>` records (every version apt knows, installed
ones included) and `apt-cache showpkg <virtual>` "Reverse Provides". The
choice, per dependency: an alternative already chosen, else the version equal
to the anchor's, else the same upstream version, else the same branch, else
the newest. Only driver-versioned packages of the branch join the closure and
are walked further; others (dkms, libc6, nvidia-modprobe) are left to apt.

Runs on the managed host's Python (3.8+).
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ansible_collections.v100.llm.plugins.module_utils.driver.packages import BRANCH_INDEPENDENT, driver_branch, split_version, upstream_version

Record = Dict[str, str]

# --- Debian version comparison (deb-version(7), dpkg's verrevcmp) -------------


def _order(char: str) -> int:
    if char == "~":
        return -1
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(left: str, right: str) -> int:
    i = j = 0
    while i < len(left) or j < len(right):
        first_diff = 0
        while (i < len(left) and not left[i].isdigit()) or (j < len(right) and not right[j].isdigit()):
            lc = _order(left[i]) if i < len(left) else 0
            rc = _order(right[j]) if j < len(right) else 0
            if lc != rc:
                return lc - rc
            i, j = i + 1, j + 1
        while i < len(left) and left[i] == "0":
            i += 1
        while j < len(right) and right[j] == "0":
            j += 1
        while i < len(left) and left[i].isdigit() and j < len(right) and right[j].isdigit():
            if not first_diff:
                first_diff = ord(left[i]) - ord(right[j])
            i, j = i + 1, j + 1
        if i < len(left) and left[i].isdigit():
            return 1
        if j < len(right) and right[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def compare_versions(left: str, right: str) -> int:
    """<0, 0, >0 as dpkg --compare-versions orders two Debian versions."""
    le, lu, lr = split_version(left)
    re_, ru, rr = split_version(right)
    if le != re_:
        return le - re_
    return _compare_part(lu, ru) or _compare_part(lr, rr)


_VersionKey = functools.cmp_to_key(compare_versions)


def _satisfies(version: str, operator: str, wanted: str) -> bool:
    if not operator:
        return True
    order = compare_versions(version, wanted)
    return {"<<": order < 0, "<=": order <= 0, "<": order <= 0, "=": order == 0,
            ">=": order >= 0, ">": order >= 0, ">>": order > 0}[operator]


# --- Parsing ----------------------------------------------------------------------

_RELATION = re.compile(r"^(?P<name>[^\s:(]+)(?::\S+)?\s*(?:\((?P<op><<|<=|>=|>>|=|<|>)\s*(?P<version>[^)\s]+)\s*\))?")


def parse_records(text: str) -> List[Record]:
    """deb822 stanzas (apt-cache show) -> dicts; continuation lines are joined."""
    records, current, key = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if current:
                records.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key:
            current[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            current[key] = value.strip()
    if current:
        records.append(current)
    return [record for record in records if "Package" in record and "Version" in record]


def parse_relations(field: str) -> List[List[Tuple[str, str, str]]]:
    """"a (>= 1) | b, c" -> [[("a", ">=", "1"), ("b", "", "")], [("c", "", "")]]."""
    clauses = []
    for clause in field.split(","):
        alternatives = []
        for alternative in clause.split("|"):
            match = _RELATION.match(alternative.strip())
            if match:
                alternatives.append((match.group("name"), match.group("op") or "", match.group("version") or ""))
        if alternatives:
            clauses.append(alternatives)
    return clauses


def parse_reverse_provides(text: str) -> List[Tuple[str, str]]:
    """(package, version) from the "Reverse Provides:" section of `apt-cache showpkg`."""
    providers, inside = [], False
    for line in text.splitlines():
        if line.startswith("Reverse Provides:"):
            inside = True
            continue
        fields = line.split()
        if inside and len(fields) >= 2:
            providers.append((fields[0], fields[1]))
    return providers


# --- The closure ------------------------------------------------------------------


class Index:
    """apt's records by package name, and who provides each virtual name."""

    def __init__(self, records: Iterable[Record]):
        self.versions: Dict[str, Dict[str, Record]] = {}
        self.provides: Dict[str, List[Tuple[str, str, str]]] = {}
        for record in records:
            name, version = record["Package"], record["Version"]
            self.versions.setdefault(name, {})[version] = record
            for alternatives in parse_relations(record.get("Provides", "")):
                provided, _, provided_version = alternatives[0]
                self.provides.setdefault(provided, []).append((name, version, provided_version))

    def candidates(self, name: str, operator: str, wanted: str) -> List[Tuple[str, str]]:
        """(package, version) pairs that satisfy `name (operator wanted)`, real or provided."""
        found = [(name, version) for version in self.versions.get(name, {}) if _satisfies(version, operator, wanted)]
        for provider, version, provided_version in self.provides.get(name, []):
            if not operator or (provided_version and _satisfies(provided_version, operator, wanted)):
                found.append((provider, version))
        return found


def _rank(anchor: str, branch: int):
    def key(pair: Tuple[str, str]):
        version = pair[1]
        return (version == anchor, upstream_version(version) == upstream_version(anchor),
                driver_branch(version) == branch, _VersionKey(version))
    return key


def _in_branch(name: str, version: str, branch: int) -> bool:
    return name not in BRANCH_INDEPENDENT and driver_branch(version) == branch


def choose_anchor(index: Index, top: str, branch: int, requested: str,
                  installed: Mapping[str, str]) -> Tuple[Optional[str], Optional[str]]:
    """The version of `top` the set is built around, or (None, error).

    `requested` is an upstream driver version ("535.261.03") or "": then the
    installed version when it is in the branch, else the newest of the branch.
    """
    versions = sorted((v for v in index.versions.get(top, {}) if driver_branch(v) == branch),
                      key=_VersionKey, reverse=True)
    if not versions:
        return None, "apt knows no version of %s in branch %d" % (top, branch)
    if requested:
        matching = [v for v in versions if upstream_version(v) == requested]
        if not matching:
            return None, "%s %s is not available (apt knows %s)" % (
                top, requested, ", ".join(upstream_version(v) for v in versions))
        return matching[0], None
    if driver_branch(installed.get(top, "")) == branch and installed[top] in versions:
        return installed[top], None
    return versions[0], None


def resolve_closure(index: Index, tops: Sequence[str], branch: int, requested: str = "",
                    installed: Optional[Mapping[str, str]] = None, absent: Iterable[str] = ()) -> Dict[str, object]:
    """{"anchor", "packages": [{"name", "version"}], "missing": [names to fetch], "error"}, and "unknown": the
    packages asked for, when apt has no record of any of them (its lists lack the repository).

    "missing" lists names the index has no record of yet: the caller fetches them
    (apt-cache show, showpkg for virtual names) and calls again, passing the names
    it asked apt about in `absent` (apt knows none of those still missing). With
    "error" set nothing should be installed.
    """
    installed, absent = installed or {}, set(absent)
    # Packages versioned apart from the driver (nvidia-modprobe; Ubuntu's
    # linux-modules-nvidia-<branch>-server-<flavour>, versioned like the kernel)
    # are left to apt.
    tops = [top for top in tops if top not in BRANCH_INDEPENDENT
            and (top not in index.versions or any(driver_branch(v) for v in index.versions[top]))]
    unknown_tops = sorted(top for top in tops if top not in index.versions)
    if unknown_tops:
        fetch = [top for top in unknown_tops if top not in absent]
        # "unknown" only where apt knows none of them: its lists lack the repository.
        return {"anchor": None, "packages": [], "missing": fetch,
                "unknown": unknown_tops if not fetch and len(unknown_tops) == len(tops) else [],
                "error": None if fetch else "apt knows no package named %s" % ", ".join(unknown_tops)}
    anchor, error = choose_anchor(index, tops[0], branch, requested, installed)
    if anchor is None:
        return {"anchor": None, "packages": [], "missing": [], "error": error}
    rank = _rank(anchor, branch)
    chosen: Dict[str, str] = {}
    queue: List[Tuple[str, str]] = []
    for top in tops:
        pair = max(index.candidates(top, "", ""), key=rank)
        if not _in_branch(pair[0], pair[1], branch):
            return {"anchor": anchor, "packages": [], "missing": [],
                    "error": "%s has no version in branch %d (newest: %s)" % (top, branch, pair[1])}
        chosen[pair[0]] = pair[1]
        queue.append(pair)
    unknown: Set[str] = set()
    unmet: List[str] = []
    while queue:
        name, version = queue.pop(0)
        record = index.versions[name][version]
        for clause in parse_relations(record.get("Pre-Depends", "")) + parse_relations(record.get("Depends", "")):
            pair = _choose(index, clause, chosen, rank, unknown, absent)
            if pair is None and not any(alternative[0] in unknown for alternative in clause):
                unmet.append("%s %s needs %s, which apt cannot provide" % (name, version, " | ".join(
                    "%s (%s %s)" % alternative if alternative[1] else alternative[0] for alternative in clause)))
            if pair is None or pair[0] in chosen or not _in_branch(pair[0], pair[1], branch):
                continue
            chosen[pair[0]] = pair[1]
            queue.append(pair)
    if unknown:
        return {"anchor": anchor, "packages": [], "missing": sorted(unknown), "error": None}
    broken = unmet[0] if unmet else _unmet_exact(index, chosen)
    return {"anchor": anchor, "packages": [{"name": n, "version": v} for n, v in sorted(chosen.items())],
            "missing": [], "error": broken}


def _choose(index: Index, clause: Sequence[Tuple[str, str, str]], chosen: Mapping[str, str], rank,
            unknown: Set[str], absent: Set[str]) -> Optional[Tuple[str, str]]:
    """The package version that meets one dependency clause (alternatives in order)."""
    for name, operator, wanted in clause:
        if name not in index.versions and name not in index.provides:
            if name not in absent:
                unknown.add(name)
            continue
        candidates = index.candidates(name, operator, wanted)
        already = [pair for pair in candidates if chosen.get(pair[0]) == pair[1]]
        if already:
            return already[0]
        if candidates:
            return max(candidates, key=rank)
    return None


def _unmet_exact(index: Index, chosen: Mapping[str, str]) -> Optional[str]:
    """An exact-version dependency inside the set that another chosen version breaks."""
    for name, version in sorted(chosen.items()):
        record = index.versions[name][version]
        for clause in parse_relations(record.get("Depends", "")):
            for dep, operator, wanted in clause:
                if operator == "=" and dep in chosen and not _satisfies(chosen[dep], "=", wanted) \
                        and len(clause) == 1:
                    return "%s %s needs %s (= %s), but %s was chosen" % (name, version, dep, wanted, chosen[dep])
    return None


def pin_groups(packages: Sequence[Mapping[str, str]]) -> List[Dict[str, object]]:
    """[{"version", "names"}] for the apt preferences file, one stanza per version."""
    groups: Dict[str, List[str]] = {}
    for package in packages:
        groups.setdefault(package["version"], []).append(package["name"])
    return [{"version": version, "names": sorted(names)} for version, names in sorted(groups.items())]


def preferring(first: Callable[[List[str]], str], rest: Callable[[List[str]], str]) -> Callable[[List[str]], str]:
    """A `run` whose `apt-cache show` answers each name from `first` when it knows the name, else from `rest`.

    The driver's names then come from its own repository's records only, while
    its dependencies outside that repository (dkms, libc6) are still found.
    """
    def run(argv: List[str]) -> str:
        if argv[:2] != ["apt-cache", "show"]:
            return rest(argv)
        found = first(argv)
        known = {record["Package"] for record in parse_records(found)}
        others = [name for name in argv[2:] if name not in known]
        return found + ("\n" + rest(argv[:2] + others) if others else "")
    return run


# Enough for NVIDIA's deepest chain (cuda-drivers -> nvidia-driver -> ... -> nvidia-alternative).
MAX_ROUNDS = 20


def collect_closure(run: Callable[[List[str]], str], packages: Sequence[str], branch: int, requested: str = "",
                    installed: Optional[Mapping[str, str]] = None) -> Dict[str, object]:
    """resolve_closure, asking apt through `run(argv) -> stdout` for the records it lacks.

    `apt-cache show` prints every version of real names and skips virtual ones;
    `apt-cache showpkg <virtual>` names the providers, which are then shown too.
    """
    records: List[Record] = []
    asked: Set[str] = set()
    result: Dict[str, object] = {}
    for _ in range(MAX_ROUNDS):
        result = resolve_closure(Index(records), packages, branch, requested, installed, asked)
        wanted = [name for name in result["missing"] if name not in asked]
        if not wanted:
            break
        asked.update(wanted)
        found = parse_records(run(["apt-cache", "show"] + wanted))
        records += found
        for virtual in sorted(set(wanted) - {record["Package"] for record in found}):
            providers = sorted({name for name, _ in parse_reverse_provides(run(["apt-cache", "showpkg", virtual]))}
                               - asked)
            if providers:
                asked.update(providers)
                records += parse_records(run(["apt-cache", "show"] + providers))
    if result.get("missing"):
        result["error"] = "apt's records did not settle after %d rounds: %s" % (
            MAX_ROUNDS, ", ".join(result["missing"]))
    result["pins"] = pin_groups(result.get("packages", []))
    result.setdefault("unknown", [])
    return result
