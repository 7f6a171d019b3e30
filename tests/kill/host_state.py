#!/usr/bin/env python3
"""The end state of a host after the driver, llama.cpp or vLLM stage, as JSON (run inside the host; tests/kill/harness.py).

What the roles own, in a form two runs can be compared by: sha256 of the
files (not their times), units with their enabled and active states and
whether each started after every file it reads last changed, package holds,
`dpkg --audit`, leftovers of interrupted runs, and which API keys each
server accepts; for the driver stage the apt sources, key and pins, the
NVIDIA and CUDA packages with their dpkg states, the cuda alternative and the
reboot requests; for the vLLM stage the install's stamp, our wheel and the
install `current` names (unstamped virtualenvs count as leftovers).

    host_state.py [OLD_KEY ...]
"""
from __future__ import annotations

import datetime
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

OWNED = ["/etc/systemd/system/llama-server-*", "/etc/systemd/system/llama-server-*.service.d/*",
         "/etc/llama-server/*", "/usr/local/libexec/v100-llm/*", "/opt/llama.cpp/*/build-stamp.json",
         "/srv/models/*.gguf", "/etc/apt/keyrings/*", "/etc/apt/sources.list.d/*", "/etc/apt/preferences.d/*",
         "/etc/apt/apt.conf.d/*v100-llm*", "/etc/modprobe.d/*", "/etc/systemd/system/nvidia-*",
         "/etc/systemd/system/nvidia-*.service.d/*", "/etc/profile.d/cuda.sh", "/etc/ld.so.conf.d/cuda.conf",
         "/opt/vllm/*/install-stamp.json", "/opt/vllm/wheels/*"]
DRIVER_PACKAGES = r"^(nvidia|libnvidia|libcuda|firmware-nvidia|cuda|linux-headers)"
LEFTOVERS = ["/srv/models/.partial/*", "/var/cache/llama.cpp/llama.cpp-src", "/var/cache/llama.cpp/llama.cpp-build",
             "/var/cache/llama.cpp/llama.cpp-tree",
             "/var/cache/llama.cpp/git/.git/index.lock"]


def run(*argv):
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def unit_state(unit):
    shown = dict(line.split("=", 1) for line in run(
        "systemctl", "show", unit, "-p", "ActiveState", "-p", "UnitFileState", "-p", "FragmentPath",
        "-p", "DropInPaths", "-p", "ExecStart", "-p", "NeedDaemonReload").splitlines() if "=" in line)
    # Read apart from the roles' own module (unit_freshness reads it over D-Bus).
    started = run("systemctl", "show", unit, "-p", "InactiveExitTimestamp", "--value", "--timestamp=us+utc").strip()
    started_us = 0
    if started:
        at = datetime.datetime.strptime(started, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=datetime.timezone.utc)
        started_us = int(at.timestamp()) * 1000000 + at.microsecond
    # Every file the unit reads: its unit file, drop-ins, and the paths on its command line.
    reads = [shown.get("FragmentPath", "")] + shown.get("DropInPaths", "").split()
    reads += [word for word in re.findall(r"(/[^\s;]+)", shown.get("ExecStart", "")) if os.path.isfile(word)]
    newer = [path for path in reads if path and os.path.exists(path)
             and os.stat(path).st_ctime_ns // 1000 > started_us]
    running = shown.get("ActiveState") in ("active", "activating")
    return {"active": shown.get("ActiveState"), "enabled": shown.get("UnitFileState"),
            "reload_needed": shown.get("NeedDaemonReload"),
            "runs_on_current_files": (not newer) if running else None, "newer_than_start": newer if running else []}


def answers(port, key):
    request = urllib.request.Request("http://127.0.0.1:%s/v1/models" % port, headers={"Authorization": "Bearer " + key})
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def main():
    old_keys = sys.argv[1:]
    files = {}
    for pattern in OWNED:
        for path in sorted(glob.glob(pattern)):
            if os.path.isfile(path):
                files[path] = sha256(path)
    current = os.path.realpath("/opt/llama.cpp/current")
    # The servers and their timers (the oneshots behind the timers come and go).
    units = sorted(os.path.basename(p) for p in glob.glob("/etc/systemd/system/llama-server-*")
                   if os.path.isfile(p) and (p.endswith(".timer") or not re.search(r"-(health|restart)\.service$", p))
                   and p.endswith((".service", ".timer")))
    units += [unit for unit in ("nvidia-persistenced.service", "nvidia-power-limit.service")
              if run("systemctl", "show", unit, "-p", "LoadState", "--value").strip() == "loaded"]
    packages = sorted(line for line in run("dpkg-query", "-W", "-f", "${binary:Package} ${Version} ${db:Status-Abbrev}\n")
                      .splitlines() if re.match(DRIVER_PACKAGES, line))
    stamped = {os.path.dirname(p) for p in glob.glob("/opt/llama.cpp/*/build-stamp.json")
               + glob.glob("/opt/vllm/*/install-stamp.json")}
    unstamped = [p for p in glob.glob("/opt/llama.cpp/*-??????????") + glob.glob("/opt/vllm/*-??????????")
                 if os.path.isdir(p) and p not in stamped]
    keys = {}
    for key_file in sorted(glob.glob("/etc/llama-server/*.key")):
        name = os.path.basename(key_file)[:-4]
        port = re.search(r"--port (\d+)", open("/etc/systemd/system/llama-server-%s.service" % name).read()).group(1)
        key = open(key_file).read().strip()
        keys[name] = {"current key": answers(port, key), **{"old key %d" % i: answers(port, k)
                                                            for i, k in enumerate(old_keys) if k != key}}
    state = {
        "files": files,
        "current": current,
        "vllm_current": os.path.realpath("/opt/vllm/current"),
        "units": {unit: unit_state(unit) for unit in units},
        "holds": run("apt-mark", "showhold").split(),
        "packages": packages,
        # Where /usr/local/cuda points and whether it stays there (manual) or follows priorities (auto).
        "cuda_alternative": [line for line in run("update-alternatives", "--query", "cuda").splitlines()
                             if line.startswith(("Status:", "Value:"))],
        "auto_installed": sorted(name for name in run("apt-mark", "showauto").split() if re.match(DRIVER_PACKAGES, name)),
        "reboot_requests": sorted(os.listdir("/var/lib/v100-llm/reboot-required.d"))
        if os.path.isdir("/var/lib/v100-llm/reboot-required.d") else [],
        "dpkg_audit": run("dpkg", "--audit").strip(),
        "leftovers": sorted(p for pattern in LEFTOVERS for p in glob.glob(pattern)) + sorted(unstamped),
        "keys": keys,
    }
    json.dump(state, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
