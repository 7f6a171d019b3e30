# -*- coding: utf-8 -*-
"""Which Debian archive components the driver needs that apt does not read yet.

Debian packages the driver in non-free (nvidia-graphics-drivers), its GSP
firmware in non-free-firmware and nvidia-modprobe in contrib; security fixes to
them land in <release>-security, other fixes in <release>-updates (Debian's
archive: dists/bookworm-security/non-free, dists/bookworm-updates/non-free).
Each suite gets only the components no other source configures, because apt
warns about a component configured twice ("Target Packages ... is configured
multiple times").

Input: `apt-get indextargets --format '$(RELEASE) $(COMPONENT) $(SOURCESENTRY)'
'Created-By: Packages'`, which lists what every source file configures,
downloaded or not. Entries from the role's own files are ignored, so the plan
follows the host's other sources: a component the admin adds later is dropped
from ours on the next run.

`unread_suites` tells, from apt's lists folder, whether apt has read those
components since they were configured, so a run killed between writing a source
and refreshing is repaired by the next one.

Runs on the managed host's Python (3.8+).
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Set, Tuple

COMPONENTS = ("contrib", "non-free", "non-free-firmware")


def parse_indextargets(text: str) -> List[Tuple[str, str, str]]:
    """(suite, component, source file) per line; the ":<line>" after the file is dropped."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            entries.append((fields[0], fields[1], fields[2].rsplit(":", 1)[0]))
    return entries


def missing_components(indextargets: str, release: str, own_files: Sequence[str],
                       components: Sequence[str] = COMPONENTS) -> List[Dict[str, object]]:
    """One item per suite (release, -updates, -security): {"suite", "components"} still to configure.

    `own_files` are the role's own source files, or prefixes of their paths.
    An item with no components means the other sources already cover that suite.
    """
    configured: Dict[str, Set[str]] = {}
    for suite, component, source in parse_indextargets(indextargets):
        if not source.startswith(tuple(own_files)):
            configured.setdefault(suite, set()).add(component)
    plan = []
    for suite in (release, release + "-updates", release + "-security"):
        have = configured.get(suite, set())
        plan.append({"suite": suite, "components": [c for c in components if c not in have]})
    return plan


def empty_indexes(release: str) -> Set[str]:
    """The index files a Release/InRelease file lists as empty (size 0), e.g.
    "non-free/binary-amd64/Packages" of bookworm-updates after a point release.
    apt stores no file for those, so their absence from its lists is no sign of
    an unread suite."""
    empty = set()
    for line in release.splitlines():
        fields = line.split()
        if line.startswith(" ") and len(fields) == 3 and fields[1] == "0":
            empty.add(fields[2])
    return empty


def release_components(release: str) -> List[str]:
    """The Components: a Release/InRelease file offers. Debian's security archive still names them
    "updates/main ..." while its indexes are "main/binary-amd64/Packages": the last part is the component."""
    for line in release.splitlines():
        if line.startswith("Components:"):
            return [component.rsplit("/", 1)[-1] for component in line.split(":", 1)[1].split()]
    return []


def unread_suites(targets: Sequence[Tuple[str, str, str, str]], lists: Sequence[str],
                  releases: Dict[str, str], suites: Sequence[str],
                  components: Sequence[str] = COMPONENTS) -> List[str]:
    """The suites (of `suites`) with a package index of `components` that apt has not read.

    `targets`: (suite, component, list file, meta key) per configured index, from
    `apt-get indextargets --no-release-info --format '$(RELEASE) $(COMPONENT) $(FILENAME) $(METAKEY)'`
    for the host's architecture. `lists`: the file names in apt's lists folder
    (an index may be stored compressed: "...Packages.lz4"). `releases`: the text
    of each InRelease/Release file there, by file name.

    An index is read when its file is there, or when its suite's Release file
    is there and lists it as empty, or does not offer its component at all
    (apt skips it: "doesn't have the component"). A suite without a Release
    file is unread.
    """
    names = set(lists)
    unread = []
    for suite, component, path, meta_key in targets:
        if suite not in suites or component not in components or suite in unread:
            continue
        stored = path.rsplit("/", 1)[-1]
        if stored in names or any(name.startswith(stored + ".") for name in names):
            continue
        prefix = stored[:len(stored) - len(meta_key.replace("/", "_"))]
        release = releases.get(prefix + "InRelease", releases.get(prefix + "Release"))
        if release is None or (meta_key not in empty_indexes(release)
                               and component in release_components(release)):
            unread.append(suite)
    return unread
