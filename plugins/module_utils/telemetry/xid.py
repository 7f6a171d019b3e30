"""Xid events from the kernel log, counted by GPU and Xid number across collector runs.

Standard library only (it runs on the host). The collector reads the journal
after its saved cursor (`journalctl -o json --after-cursor`), so each kernel
line is counted once however often the collector restarts; `fold` adds the new
records to the saved state and `families` writes it out.

The driver's lines, as recorded (tests/fixtures/recorded/kmsg_xid79_*):
  NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.
Drivers from about 2012 print "(0000:01:00)" without "PCI:", and 470 and later
add "pid=..., name=..." after the number; both are read.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional

from .exposition import Family, family, sample

PREFIX = "v100_xid_"
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\): "
                  r"(?P<xid>\d+),")
# Without an Xid line: "NVRM: GPU at 0000:01:00.0 has fallen off the bus." or
# "NVRM: GPU at PCI:0000:01:00: GPU has fallen off the bus."
_FALLEN = re.compile(r"NVRM: GPU at (?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?:? "
                     r"(?:GPU )?has fallen off the bus")
FALLEN_OFF_THE_BUS = 79
SAME_FALL_S = 10

# NVIDIA's Xid catalogue for Volta and older GPUs ("Xid Errors", docs.nvidia.com/deploy/xid-errors/, its table of
# possible causes; page retirement: docs.nvidia.com/deploy/dynamic-page-retirement/). "hardware": the board, its
# memory or its link (48 double-bit ECC, 61/62 microcontroller, 63/64 page retirement, 74 NVLink, 79 off the
# bus, 92 high single-bit rate, 94/95 contained/uncontained ECC): a card to watch or replace. "application": a
# program's fault (13 graphics engine exception, 31 memory page fault, 43 stopped processing, 45 preemptive
# cleanup): the server restarts, the card is usually fine. Any other number is "other".
# 57, 58, 69, 80 and 81 (video memory interface, graphics engine class, corrupted data, VGA subsystem) also list a
# hardware error among their causes there; 154 (550 and later: "GPU recovery action changed", a reset or reboot
# required) is the driver asking for one.
XID_CLASSES = {
    **{number: "hardware" for number in (48, 57, 58, 61, 62, 63, 64, 69, 74, 79, 80, 81, 92, 94, 95, 154)},
    **{number: "application" for number in (13, 31, 43, 45)},
}


def xid_class(number: int) -> str:
    return XID_CLASSES.get(number, "other")


def _pci(address: str) -> str:
    domain, bus, device = address.lower().split(":")
    return "%04x:%s:%s.0" % (int(domain, 16), bus, device)


def _message(record: dict) -> str:
    message = record.get("MESSAGE", "")
    # journalctl -o json gives a message that is not valid UTF-8 as a list of bytes.
    return bytes(message).decode("utf-8", "replace") if isinstance(message, list) else str(message)


def event(record: dict) -> Optional[dict]:
    """The Xid (or fallen-off-the-bus) event in one journal record, or None."""
    message = _message(record)
    match = _XID.search(message)
    if match:
        number = int(match.group("xid"))
    else:
        match = _FALLEN.search(message)
        if not match:
            return None
        number = FALLEN_OFF_THE_BUS
    seconds = int(record.get("__REALTIME_TIMESTAMP", 0)) / 1e6
    return {"pci_bus_id": _pci(match.group("pci")), "xid": number, "time": seconds}


def empty_state() -> dict:
    return {"cursor": None, "events": {}}


def fold(state: dict, records: Iterable[dict]) -> dict:
    """The state after records: counts and last times per (GPU, Xid), and the last record's cursor."""
    events: Dict[str, dict] = {key: dict(value) for key, value in state.get("events", {}).items()}
    cursor = state.get("cursor")
    for record in records:
        cursor = record.get("__CURSOR", cursor)
        found = event(record)
        if found is None:
            continue
        key = "%s/%d" % (found["pci_bus_id"], found["xid"])
        seen = events.setdefault(key, {"pci_bus_id": found["pci_bus_id"], "xid": found["xid"], "count": 0,
                                       "last": 0.0})
        # Some drivers log a fall off the bus twice, as an Xid 79 and as "GPU at ... has fallen off the bus":
        # one incident.
        if not (found["xid"] == FALLEN_OFF_THE_BUS and seen["count"] and found["time"] - seen["last"] < SAME_FALL_S):
            seen["count"] += 1
        seen["last"] = max(seen["last"], found["time"])
    return {"cursor": cursor, "events": events}


def families(state: dict) -> List[Family]:
    seen = sorted(state.get("events", {}).values(), key=lambda item: (item["pci_bus_id"], item["xid"]))

    def labels(item: dict) -> dict:
        return {"pci_bus_id": item["pci_bus_id"], "xid": str(item["xid"]), "class": xid_class(item["xid"])}
    return [
        family(PREFIX + "events_total", "counter",
               "Xid events in the kernel log, by GPU and Xid number (79: the GPU fell off the bus).",
               [sample(PREFIX + "events_total", item["count"], **labels(item)) for item in seen]),
        family(PREFIX + "last_event_timestamp_seconds", "gauge", "When the last such Xid event was logged.",
               [sample(PREFIX + "last_event_timestamp_seconds", item["last"], **labels(item)) for item in seen]),
    ]
