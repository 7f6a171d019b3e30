"""The telemetry collector's one run: GPUs, Xid events and the servers' own metrics into one .prom file.

Run by v100-llm-telemetry.service (roles/gpu_telemetry) every few seconds as an
unprivileged user, from the folder the role copies these modules to:
    python3 -m v100_telemetry.collect CONFIG.json
The parsing is in the modules beside this one; this one runs the commands,
each with a timeout, and writes the file atomically (a temporary file in the
same folder, then rename), so the node exporter never reads half a file. A
failed part gives its success gauge 0 and its series are left out; the run
still writes the file.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import List, Optional, Tuple

from . import exposition, gpu_series, xid
from .exposition import Family, family, sample

PREFIX = "v100_telemetry_"


def _run(argv: List[str], timeout: float) -> Tuple[Optional[str], str]:
    """A command's output, or None and why. A command stuck in the driver may not die when killed
    (uninterruptible sleep), so it is killed and not waited for."""
    try:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as error:
        return None, str(error)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return None, "%s did not answer within %s s" % (argv[0], timeout)
    if process.returncode != 0:
        return None, "%s exited %d: %s" % (argv[0], process.returncode, (err or out).strip()[:300])
    return out, ""


def _write_atomically(path: str, content: str, mode: int = 0o644) -> None:
    folder = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(content)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _read_state(path: str) -> dict:
    try:
        with open(path) as stream:
            state = json.load(stream)
        return state if isinstance(state, dict) and isinstance(state.get("events"), dict) else xid.empty_state()
    except (OSError, ValueError):
        return xid.empty_state()


def gpus(config: dict) -> Tuple[List[Family], bool, str]:
    out, why = _run(config["nvidia_smi"], config["nvidia_smi_timeout"])
    if out is None:
        return [], False, why
    try:
        return gpu_series.families(out), True, ""
    except Exception as error:  # a driver's XML we cannot read is a failed query, not a crash
        return [], False, "nvidia-smi's XML: %s" % error


def _records(text: str) -> List[dict]:
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def xid_events(config: dict) -> Tuple[List[Family], bool, str]:
    state = _read_state(config["state"])
    journal = ["journalctl", "--no-pager", "-o", "json"]
    argv = journal + (["--after-cursor", state["cursor"]] if state.get("cursor") else []) + list(config["journal_match"])
    out, why = _run(argv, config["journal_timeout"])
    if out is None and not state.get("cursor"):
        # A first run whose kernel log is too long to read in time would fail at every run: it counts from the
        # log's last line instead, and says so.
        tail, _ = _run(journal + ["-n", "1"] + list(config["journal_match"]), config["journal_timeout"])
        last = _records(tail or "")
        if last:
            state = dict(state, cursor=last[-1].get("__CURSOR"))
            _write_atomically(config["state"], json.dumps(state, sort_keys=True), 0o600)
            why += "; Xid events are counted from the kernel log's last line on"
    if out is None:
        return xid.families(state), False, why
    state = xid.fold(state, _records(out))
    _write_atomically(config["state"], json.dumps(state, sort_keys=True), 0o600)
    return xid.families(state), True, ""


def _key(server: dict) -> Optional[str]:
    folder = os.environ.get("CREDENTIALS_DIRECTORY")
    if not server.get("credential") or not folder:
        return None
    with open(os.path.join(folder, server["credential"])) as stream:
        return stream.read().strip()


def server_metrics(server: dict, timeout: float) -> Tuple[List[Family], bool]:
    request = urllib.request.Request(server["metrics_url"])
    try:
        key = _key(server)
        if key:
            request.add_header("Authorization", "Bearer " + key)
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # nosec: a loopback URL from the role
            text = answer.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return [], False
    return exposition.relabel(exposition.parse(text), tuple(server["prefixes"]), server=server["name"]), True


def run(config: dict) -> str:
    started = time.time()
    families: List[Family] = []
    parts = []
    # A host without GPUs (the demo) has no nvidia-smi to ask: no GPU series, and no failure either.
    for name, part in (("gpu_query", gpus),) * bool(config.get("nvidia_smi")) + (("xid_read", xid_events),):
        found, ok, why = part(config)
        families += found
        parts.append((name, ok, why))
        if why:
            print("%s failed: %s" % (name, why), file=sys.stderr)
    servers = []
    for server in config.get("servers", []):
        found, ok = server_metrics(server, config["server_timeout"])
        families += found
        servers.append(sample("v100_server_metrics_up", ok, server=server["name"]))
    own = [family(PREFIX + name + "_success", "gauge", "1 when the collector's last %s worked." % name.replace(
        "_", " "), [sample(PREFIX + name + "_success", ok)]) for name, ok, _ in parts]
    own.append(family("v100_server_metrics_up", "gauge", "1 when the server's /metrics answered the collector.",
                      servers))
    own.append(family(PREFIX + "last_run_timestamp_seconds", "gauge", "When the collector last ran.",
                      [sample(PREFIX + "last_run_timestamp_seconds", round(started, 3))]))
    own.append(family(PREFIX + "run_seconds", "gauge", "How long the collector's last run took.",
                      [sample(PREFIX + "run_seconds", round(time.time() - started, 3))]))
    content = exposition.render(own + exposition.merge(families))
    _write_atomically(config["output"], content)
    return content


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m v100_telemetry.collect CONFIG.json", file=sys.stderr)
        return 2
    with open(argv[1]) as stream:
        config = json.load(stream)
    run(config)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
