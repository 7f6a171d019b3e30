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
