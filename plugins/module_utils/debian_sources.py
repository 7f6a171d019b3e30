# -*- coding: utf-8 -*-
"""Which Debian archive components the driver needs that apt does not read yet.

Debian packages the driver in non-free (nvidia-graphics-drivers), its GSP
firmware in non-free-firmware and nvidia-modprobe in contrib; security fixes to
them land in <release>-security, other fixes in <release>-updates (Debian's
archive: dists/bookworm-security/non-free, dists/bookworm-updates/non-free).
Each suite gets only the components no other source configures, because apt
warns about a component configured twice ("Target Packages ... is configured
multiple times").

Input: `apt-get indextargets --format '$(RELEASE) $(COMPONENT) $(SOURCESENTRY)
$(REPO_URI)' 'Created-By: Packages'`, which lists what every source file
configures, downloaded or not. Entries from the role's own files are ignored, so
the plan follows the host's other sources: a component the admin adds later is
dropped from ours on the next run. Each suite's components come from the mirror
the host's own source for that suite uses (a local mirror or proxy on a
filtered network), where it has one.

Runs on the managed host's Python (3.8+).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

COMPONENTS = ("contrib", "non-free", "non-free-firmware")


def parse_indextargets(text: str) -> List[Tuple[str, str, str, Optional[str]]]:
    """(suite, component, source file, repository URI or None) per line; the ":<line>" after the file is dropped."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            entries.append((fields[0], fields[1], fields[2].rsplit(":", 1)[0], fields[3] if len(fields) > 3 else None))
    return entries


def missing_components(indextargets: str, release: str, own_files: Sequence[str],
                       components: Sequence[str] = COMPONENTS) -> List[Dict[str, object]]:
    """One item per suite (release, -updates, -security): {"suite", "components", "uri"}.

    "components" are those still to configure; none means the other sources
    already cover that suite. "uri" is the repository URI of the host's own
    source for the suite (for -updates, else the release's), None without one.
    `own_files` are the role's own source files, or prefixes of their paths.
    """
    configured: Dict[str, Set[str]] = {}
    uris: Dict[str, str] = {}
    for suite, component, source, uri in parse_indextargets(indextargets):
        if not source.startswith(tuple(own_files)):
            configured.setdefault(suite, set()).add(component)
            if uri:
                uris.setdefault(suite, uri)
    plan = []
    for suite in (release, release + "-updates", release + "-security"):
        have = configured.get(suite, set())
        uri = uris.get(suite) or (uris.get(release) if suite.endswith("-updates") else None)
        plan.append({"suite": suite, "components": [c for c in components if c not in have], "uri": uri})
    return plan
