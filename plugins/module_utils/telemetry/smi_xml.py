"""Readers for the fields of `nvidia-smi -q -x`, shared by preflight's GPU facts and the telemetry collector.

Standard library only (the collector runs it on the host). Values carry units
("32510 MiB", "16x", "66 C", "250.00 W") or "N/A", which reads as None.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Dict, Optional

# Drivers before 530 name them clocks_throttle_reason_*, later ones clocks_event_reason_*.
_THROTTLE_PARENTS = (("clocks_event_reasons", "clocks_event_reason_"),
                     ("clocks_throttle_reasons", "clocks_throttle_reason_"))
_LEADING_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


def text(element: ET.Element, path: str) -> Optional[str]:
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ("", "N/A") else value


def number(element: ET.Element, path: str) -> Optional[float]:
    value = text(element, path)
    match = _LEADING_NUMBER.match(value) if value else None
    return float(match.group(1)) if match else None


def integer(element: ET.Element, path: str) -> Optional[int]:
    value = number(element, path)
    return None if value is None else int(value)


def enabled(element: ET.Element, path: str) -> Optional[bool]:
    value = text(element, path)
    return None if value is None else value == "Enabled"


def first_number(element: ET.Element, *paths: str) -> Optional[float]:
    """The first of paths that holds a number (fields moved between driver versions)."""
    for path in paths:
        value = number(element, path)
        if value is not None:
            return value
    return None


def throttle_states(gpu: ET.Element) -> Optional[Dict[str, bool]]:
    """Each clock throttle (event) reason the driver lists, without its prefix, and whether it is active."""
    for parent_name, prefix in _THROTTLE_PARENTS:
        parent = gpu.find(parent_name)
        if parent is not None:
            return {(child.tag[len(prefix):] if child.tag.startswith(prefix) else child.tag):
                    (child.text or "").strip() == "Active" for child in parent}
    return None
