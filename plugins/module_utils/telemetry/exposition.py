"""Prometheus's text exposition format, as the node exporter's textfile collector reads it.

Standard library only: the collector runs these modules on the host, outside
Ansible (roles/gpu_telemetry copies this folder there).

The textfile collector refuses a file whose samples carry timestamps or whose
family is split (two TYPE lines for one name), so each family is written once,
with all its samples, and without timestamps
(https://github.com/prometheus/node_exporter#textfile-collector).
"""
from __future__ import annotations

import math
import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*,?')
# The suffixes a histogram's or summary's samples add to the family's name.
_FAMILY_SUFFIXES = ("_bucket", "_sum", "_count", "_created", "_total")


class Sample(NamedTuple):
    name: str
    labels: Tuple[Tuple[str, str], ...]
    value: float


class Family(NamedTuple):
    name: str
    kind: str  # counter, gauge, histogram, summary, untyped
    help: str
    samples: Tuple[Sample, ...]


def sample(metric: str, value: float, /, **labels: object) -> Sample:
    """One sample; labels whose value is None are left out."""
    return Sample(metric, tuple((key, str(text)) for key, text in labels.items() if text is not None), float(value))


def family(name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> Family:
    if not _NAME.match(name):
        raise ValueError("not a Prometheus metric name: %r" % name)
    return Family(name, kind, help_text, tuple(samples))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value == int(value) and abs(value) < 2 ** 53 else repr(value)


def render(families: Iterable[Family]) -> str:
    """The text of a .prom file: each family's HELP, TYPE and samples, once; families without samples are left out."""
    lines: List[str] = []
    for fam in families:
        if not fam.samples:
            continue
        lines.append("# HELP %s %s" % (fam.name, fam.help.replace("\\", "\\\\").replace("\n", "\\n")))
        lines.append("# TYPE %s %s" % (fam.name, fam.kind))
        for item in fam.samples:
            labels = ",".join('%s="%s"' % (key, _escape(value)) for key, value in item.labels)
            lines.append("%s%s %s" % (item.name, "{%s}" % labels if labels else "", _number(item.value)))
    return "\n".join(lines) + "\n" if lines else ""


def _labels(text: Optional[str]) -> Tuple[Tuple[str, str], ...]:
    if not text:
        return ()
    pairs = []
    for match in _LABEL.finditer(text):
        value = match.group("value").replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pairs.append((match.group("key"), value))
    return tuple(pairs)


def _family_of(sample_name: str, declared: Dict[str, Tuple[str, str]]) -> str:
    if sample_name in declared:
        return sample_name
    for suffix in _FAMILY_SUFFIXES:
        if sample_name.endswith(suffix) and sample_name[: -len(suffix)] in declared:
            return sample_name[: -len(suffix)]
    return sample_name


def parse(text: str) -> List[Family]:
    """The families of a server's /metrics answer, in their order; timestamps are dropped, unparsable lines skipped."""
    declared: Dict[str, Tuple[str, str]] = {}  # name -> (kind, help)
    samples: Dict[str, List[Sample]] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                kind, help_text = declared.get(parts[2], ("untyped", ""))
                rest = parts[3] if len(parts) > 3 else ""
                declared[parts[2]] = (rest.strip(), help_text) if parts[1] == "TYPE" else (kind, rest)
                samples.setdefault(parts[2], [])
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        name = match.group("name")
        samples.setdefault(_family_of(name, declared), []).append(Sample(name, _labels(match.group("labels")), value))
    return [Family(name, declared.get(name, ("untyped", ""))[0], declared.get(name, ("untyped", ""))[1],
                   tuple(items)) for name, items in samples.items()]


def relabel(families: Iterable[Family], prefixes: Tuple[str, ...], **labels: str) -> List[Family]:
    """The families whose names start with one of prefixes, each sample with labels added in front.

    A server's process_* and python_* families are left out: the node exporter has families of those names.
    """
    added = tuple(labels.items())
    return [fam._replace(samples=tuple(item._replace(labels=added + tuple(
        pair for pair in item.labels if pair[0] not in labels)) for item in fam.samples))
        for fam in families if fam.name.startswith(prefixes)]


def merge(families: Iterable[Family]) -> List[Family]:
    """One family per name, in first-seen order: the same server family from two instances becomes one."""
    merged: Dict[str, Family] = {}
    for fam in families:
        if fam.name in merged:
            merged[fam.name] = merged[fam.name]._replace(samples=merged[fam.name].samples + fam.samples)
        else:
            merged[fam.name] = fam
    return list(merged.values())
