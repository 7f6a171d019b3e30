#!/usr/bin/env python3
"""Kill harness: interrupt a stage at chosen tasks, re-run, and compare the host with a clean run.

Starts every point of a stage from the same committed container image: for
the llama.cpp stage the demo's end state (scripts/test commits it), for the
driver and vLLM stages a host with the GPU stand-ins and the fixture
repository that stands in for NVIDIA's (tests/kill/driver-base.yml, built
here). It changes a setting as a user would (a new API key, build, model,
context size and restart time; the driver, toolkit and repository on a fresh
host; vLLM from a wheelhouse), and runs
the stage's playbook with the kill_at callback: the controller and its
workers die with SIGKILL before the named task starts (or that many seconds
into it, or once a path exists on the host), and with a power cut the
container is `docker kill`ed as well and started again
(every process in it dies; files already written to the kernel stay, so a
torn write is injected instead, as a truncated stamp). Then it re-runs until
a run succeeds (at most 3), runs once more (changed=0 required), and compares
tests/kill/host_state.py's picture of the host with that of a clean run of the
same setting from the same image. Clean runs and points run --jobs at a
time, each in a container of its own, and are compared once all are done:
two overlap where one waits (on apt, pip, a slow download, a model loading);
more only compete for the CPU, as every playbook run is mostly CPU.

    tests/kill/harness.py [--jobs N] [--only NAME-OR-SETTING ...] [--containers PREFIX]
"""
from __future__ import annotations

import argparse
import datetime
import difflib
import hashlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "callback_plugins"))
import kill_at  # noqa: E402 - the callback the killed runs load, for the path it leaves the stopped pids in
# The containers are <--containers>-1 ... -<jobs>; the driver image is built in the first.
CONTAINERS = "v100-kill"
DEMO_KEY = "demo-key-not-a-secret"
ROTATED_KEY = "rotated-key-not-a-secret"
MODEL = {"name": "smollm2", "url": "http://127.0.0.1:8767/models/SmolLM2-135M-Instruct.Q4_1.gguf",
         "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}
# The same file from the second, slow stand-in server (8768): about 10 s for its ~90 MB.
SLOW_MODEL = dict(MODEL, name="smollm2-slow", url=MODEL["url"].replace("8767", "8768"), file="smollm2-slow.gguf")

# The driver stage against the fixture repository, through the variables a
# mirror user sets (the key's fingerprint is read from the image).
FIXTURE_REPO = {"nvidia_cuda_repo_url": "http://127.0.0.1:8765/",
                "nvidia_cuda_repo_key_url": "http://127.0.0.1:8765/repo-key.asc",
                # The container runs the CI machine's kernel; the stand-in DKMS package builds nothing.
                "nvidia_driver_kernel_packages": ["linux-headers-amd64"], "nvidia_driver_verify_dkms_build": False,
                "nvidia_driver_branch": 550, "cuda_toolkit_version": "12.4"}
# vLLM on the host with the GPU stand-ins, offline from the wheelhouse that
# scripts/vllm-wheelhouse fills once from PyPI (molecule/vllm installs from
# the index): the path an air-gapped user takes (vllm_wheelhouse), and the
# vLLM point's three installs download nothing (pip's own cache keeps
# nothing behind this lab's mirror, which sends no caching headers).
WHEELHOUSE = Path.home() / ".cache" / "v100-llm" / "wheelhouse"
WHEELHOUSE_ON_HOST = "/opt/vllm-wheelhouse"
# The llama.cpp points start from the demo's end state, and compile through
# the demo's compiler cache on the controller (scripts/demo): the build
# point's two builds then recompile little.
LLAMA_CCACHE = Path.home() / ".cache" / "v100-llm" / "ccache-llama.cpp"
STAGES = {"llama_cpp": {"playbook": "llama_cpp.yml", "image": "local/v100-kill-base",
                        "volumes": ["%s:/var/cache/llama.cpp/ccache" % LLAMA_CCACHE]},
          "driver": {"playbook": "driver.yml", "image": "local/v100-kill-driver-base", "volumes": []},
          "vllm": {"playbook": "vllm.yml", "image": "local/v100-kill-driver-base",
                   "volumes": ["%s:%s:ro" % (WHEELHOUSE, WHEELHOUSE_ON_HOST)]}}

SETTINGS = {
    "driver": FIXTURE_REPO,
    "key": {"llama_server_api_key": ROTATED_KEY},
    "build": {"llama_cpp_version": "killharness"},
    "model": {"models_list": [MODEL, SLOW_MODEL],
              "llama_server_instances": [{"name": "demo", "model": "smollm2-slow", "port": 8080}]},
    "unit": {"llama_server_instances": [{"name": "demo", "model": "smollm2", "port": 8080, "ctx_size": 4096}],
             "llama_server_restart_schedule": "*-*-* 05:00:00"},
    "torn": {},
    # No model: the stage's models role would fetch the demo's from the stand-in server, which only the
    # llama.cpp stage's image serves; this point is about the install.
    "vllm": {"vllm_enabled": True, "vllm_wheelhouse": WHEELHOUSE_ON_HOST, "models_list": []},
}

# Written by the stand-in nvidia-kernel-dkms postinst as its configure step
# starts; the step then lasts while DKMS_HOLD exists (on /run: the power cut
# ends it, however late the cut comes on a loaded machine).
DKMS_STARTED = "/var/lib/v100-test/dkms-started"
DKMS_HOLD = "/run/v100-test/hold-dkms"
# Points whose step, left running by the killed run, would end within
# seconds here (the build compiles through a warm cache, the download comes
# from a local server), where on a real host it takes minutes: the callback
# stops (SIGSTOP) what holds the host's run lock, and what that started, as
# the controller dies, so the step is still running, and holding the lock,
# when the repair starts.
STOPPED_AT_KILL = ("llama.cpp build (cmake keeps running)", "model download at half (it keeps running)")
RUN_LOCK = "/run/lock/v100-llm.lock"  # plugins/module_utils/host/run_lock.py
# Without a power cut a held step (DKMS_HOLD, STOPPED_AT_KILL) is let go this
# long after the kill: the repair run then finds it still running and must
# wait for it. With both of scripts/test's lanes busy the repair reached that
# wait within a few seconds of the kill (clean-clone run of 2026-12-04: it
# waited 26 s for the DKMS step, and 30 s and 34 s for the build and the
# download, which ran on for a while once let go).
HELD_AFTER_KILL = 30
# No playbook run here takes this long; one that does is stuck.
PLAYBOOK_TIMEOUT = 1800
# Started first, so that the longest jobs do not end the run alone on one core.
LONGEST_FIRST = ("vllm", "driver")
# name, setting, task the controller dies at (its name or the start of it), then seconds into it (0: before it
# starts) or the path on the host that says the step to cut has started, and whether the power is cut too.
POINTS = [
    ("repository key write", "driver", "Install the checked key as the repository's keyring", 0, False),
    ("sources written, lists not read", "driver", "Refresh apt's lists for the repository", 0, False),
    ("driver install (apt keeps running)", "driver", "Install the driver", DKMS_STARTED, False),
    ("driver installed, not held", "driver", "Hold the driver packages", 0, False),
    ("toolkit install", "driver", "Install cuda-toolkit-12-4", 1, False),
    ("power cut during dpkg's configure (DKMS)", "driver", "Install the driver", DKMS_STARTED, True),
    ("key file write", "key", "Write the API key files", 0, False),
    ("key written, restart owed", "key", "Remove the key files of instances without a key", 0, False),
    ("llama.cpp configure", "build", "Configure with CMake", 0, False),
    ("llama.cpp build (cmake keeps running)", "build", "Build llama-server", 5, False),
    ("switch of current", "build", "Point current at", 0, False),
    ("model download at half (it keeps running)", "model", "Download the files", 5, False),
    ("unit write", "unit", "Write the units", 0, False),
    ("unit written, restart owed", "unit", "Write their sandbox, device-node unit and timers", 0, False),
    ("timers", "unit", "Write the service-health script, the shared units, the sandbox drop-ins and the timers", 0,
     False),
    ("service start while the model loads", "unit", "Start what should run", 1, False),
    ("power cut during the build", "build", "Build llama-server", 10, True),
    ("power cut mid-download", "model", "Download the files", 5, True),
    ("power cut after a unit write, before its restart", "unit", "Write their sandbox, device-node unit and timers", 0,
     True),
    ("torn stamps after a power cut", "torn", "", 0, False),
    ("vLLM pip install (pip keeps running)", "vllm", "Install vllm with every dependency pinned", 20, False),
]


def sh(*argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, text=True, capture_output=True, **kwargs)


def start_container(image, box, volumes=()):
    sh("docker", "rm", "-f", box, check=False)
    sh("docker", "run", "-d", "--name", box, "--hostname", box, "--tmpfs", "/run", "--tmpfs", "/run/lock",
       "--tmpfs", "/tmp", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
       *[arg for volume in volumes for arg in ("-v", volume)], "--stop-signal", "SIGRTMIN+3", image,
       "/lib/systemd/systemd")
    boot(box)


def boot(box):
    """Wait for systemd, then serve the image's stand-ins (transient units do not survive a restart)."""
    # Right after `docker run` or `docker start`, systemctl can come before systemd's bus and fail at once;
    # a stand-in started then never runs (CI of stop 24: port 8767 refused every run of a lane).
    deadline = time.monotonic() + 120
    while sh("docker", "exec", box, "timeout", "30", "systemctl", "is-system-running", "--wait",
             check=False).stdout.strip() not in ("running", "degraded"):
        if time.monotonic() > deadline:
            raise RuntimeError("systemd in %s did not finish booting within 120 s" % box)
        time.sleep(0.2)
    if sh("docker", "exec", box, "test", "-d", "/opt/fixture-cuda-repo/repo", check=False).returncode == 0:
        sh("docker", "exec", box, "systemd-run", "--unit=fixture-cuda-repo", "/usr/bin/python3", "-m",
           "http.server", "8765", "--bind", "127.0.0.1", "--directory", "/opt/fixture-cuda-repo/repo")
        urls = ["http://127.0.0.1:8765/InRelease"]
    elif sh("docker", "exec", box, "test", "-f", "/opt/fixture_server.py", check=False).returncode != 0:
        # The bare test image (make_driver_image starts from it): nothing to serve yet.
        urls = []
    else:
        for port, rate in (("8767", []), ("8768", ["9000000"])):
            sh("docker", "exec", box, "systemd-run", "--unit=fixture-%s" % port, "/usr/bin/python3",
               "/opt/fixture_server.py", "/opt/llama-cpp-fixture", port, "hf_test_token_not_a_secret", *rate)
        urls = ["http://127.0.0.1:8767/models/", "http://127.0.0.1:8768/models/"]
    for url in urls:
        sh("docker", "exec", box, "sh", "-c",
           "for i in $(seq 150); do curl -sf -o /dev/null %s && exit 0; sleep 0.2; done; exit 1" % url)


def inventory(folder, box):
    """An inventory folder (every file in it is read as inventory) for the container."""
    folder.mkdir(parents=True)
    (folder / "group_vars").mkdir()
    (folder / "group_vars" / "all.yml").symlink_to(ROOT / "inventories" / "demo" / "group_vars" / "all" / "main.yml")
    (folder / "hosts.yml").write_text("all:\n  hosts:\n    %s:\n      ansible_connection: community.docker.docker\n"
                                      % box)
    return folder


# What the driver image is made of: the base image and every file driver-base.yml reads. An image built from
# the same, less than a day ago (its apt lists), is used again; its label holds their digest.
DRIVER_IMAGE_INPUTS = (HERE / "driver-base.yml", ROOT / "molecule" / "shared", ROOT / "tests" / "fixtures" / "recorded",
                       ROOT / "inventories" / "demo", ROOT / "ansible.cfg")
DRIVER_IMAGE_LABEL = "v100-kill.inputs"
DRIVER_IMAGE_MAX_AGE = 24 * 3600


def driver_image_inputs(base_image):
    digest = hashlib.sha256(sh("docker", "image", "inspect", "-f", "{{.Id}}", base_image).stdout.encode())
    for top in DRIVER_IMAGE_INPUTS:
        # Python's bytecode caches come and go with the runs: not an input.
        for path in sorted([top] if top.is_file() else (p for p in top.rglob("*")
                                                        if p.is_file() and "__pycache__" not in p.parts)):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def make_driver_image(folder, box):
    """The driver stage's starting host (tests/kill/driver-base.yml), committed as STAGES["driver"]["image"],
    or the one the last run committed where it was made of the same inputs less than a day ago."""
    base, image = "local/v100-debian12-systemd:latest", STAGES["driver"]["image"]
    inputs = driver_image_inputs(base)
    found = sh("docker", "image", "inspect", "-f", "{{ index .Config.Labels \"%s\" }} {{ .Created }}"
               % DRIVER_IMAGE_LABEL, image, check=False).stdout.split()
    # docker prints .Created in UTC (2026-12-06T13:39:12.690827741Z): its first 19 characters are the second.
    if len(found) == 2 and found[0] == inputs and time.time() - datetime.datetime.fromisoformat(
            found[1][:19] + "+00:00").timestamp() < DRIVER_IMAGE_MAX_AGE:
        print("driver image: the last run's (same inputs, made %s)" % found[1][:19], flush=True)
        return
    started = time.time()
    start_container(base, box)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), MOLECULE_PROJECT_DIRECTORY=str(ROOT))
    done = subprocess.run(["ansible-playbook", "-i", str(inventory(folder / "driver-image", box)),
                           str(HERE / "driver-base.yml")], cwd=ROOT, env=env, text=True, capture_output=True,
                          check=False)
    if done.returncode:
        sys.exit("tests/kill/driver-base.yml failed:\n" + done.stdout[-3000:])
    sh("docker", "image", "rm", image, check=False)  # the last run's, else left dangling
    sh("docker", "commit", "--change", "LABEL %s=%s" % (DRIVER_IMAGE_LABEL, inputs), box, image)
    print("driver image: made in %ds" % (time.time() - started), flush=True)


def fill_wheelhouse():
    """scripts/vllm-wheelhouse into WHEELHOUSE for the hosts' Python, Debian 12's 3.11 (files already there are
    kept: after the first time it downloads nothing)."""
    done = subprocess.run([str(ROOT / "scripts" / "vllm-wheelhouse"), str(WHEELHOUSE), "3.11"],
                          env=dict(os.environ, PYTHON=sys.executable), text=True, capture_output=True, check=False)
    if done.returncode:
        sys.exit("scripts/vllm-wheelhouse failed:\n" + (done.stdout + done.stderr)[-3000:])


def stage(setting):
    return setting if setting in STAGES else "llama_cpp"


class Host:
    """One container and its inventory: where one clean run or one point runs."""

    def __init__(self, folder, box):
        self.box, self.folder = box, folder
        self.inv = inventory(folder / "inventory", box)

    def start(self, setting):
        start_container(STAGES[stage(setting)]["image"], self.box, STAGES[stage(setting)]["volumes"])

    def playbook(self, setting, kill=None):
        """Run the setting's stage; returns (rc, changed, seconds, its output)."""
        extra = self.folder / ("vars-%s.json" % setting)
        settings = dict(SETTINGS[setting])
        if stage(setting) == "driver":
            settings["nvidia_cuda_repo_key_fingerprint"] = sh(
                "docker", "exec", self.box, "cat", "/opt/fixture-cuda-repo/repo-key.fingerprint").stdout.strip()
        extra.write_text(json.dumps(settings))
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
        if kill:
            task, after, power, stopped = kill
            env.update(ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"), ANSIBLE_CALLBACKS_ENABLED="kill_at",
                       KILL_AT_TASK=task, KILL_CONTAINER=self.box, KILL_POWER="1" if power else "",
                       KILL_STOP_LOCK_HOLDERS=stopped,
                       **({"KILL_WHEN_FILE": after} if isinstance(after, str) else {"KILL_AFTER": str(after)}))
        started = time.monotonic()
        # Output to a file. What the workers started on the host (apt, cmake, a
        # download) outlives the kill there, as it does over SSH.
        log = self.folder / "run.log"
        with open(log, "w") as output:
            run = subprocess.Popen(["ansible-playbook", "-i", str(self.inv),
                                    str(ROOT / "playbooks" / STAGES[stage(setting)]["playbook"]), "-e", "@" + str(extra)],
                                   cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
            try:
                rc = run.wait(timeout=PLAYBOOK_TIMEOUT)
            except subprocess.TimeoutExpired:
                run.kill()
                raise RuntimeError("a run of %s on %s took over %d s" % (setting, self.box, PLAYBOOK_TIMEOUT))
        took, text = time.monotonic() - started, log.read_text(errors="replace")
        recap = re.search(r"%s\s*:\s*ok=\d+\s+changed=(\d+)" % self.box, text)
        return rc, int(recap.group(1)) if recap else None, took, text

    def until_success(self, setting):
        """Runs until one succeeds, at most 3 times (downloads can fail, a killed run's step can still hold the
        host): (runs, seconds, what the first run did, rc and output of the last)."""
        runs, seconds, did = 0, 0.0, ""
        for _ in range(3):
            rc, _, took, text = self.playbook(setting)
            runs, seconds, did = runs + 1, seconds + took, did or repairs(text)
            if rc == 0:
                break
        return runs, seconds, did, rc, text

    def converge(self, setting):
        """Runs until success, then once more.

        Returns (runs, seconds, what the first run did, changed of the last, its output's tail).
        """
        runs, seconds, did, rc, text = self.until_success(setting)
        if rc != 0:
            return runs, seconds, did, None, text[-3000:]
        rc, changed, _, text = self.playbook(setting)
        return runs, seconds, did, changed if rc == 0 else None, text[-3000:]

    def state(self):
        script = (HERE / "host_state.py").read_text()
        done = sh("docker", "exec", "-i", self.box, "python3", "-", DEMO_KEY, ROTATED_KEY, input=script)
        return json.loads(done.stdout)

    def clean(self, setting):
        """A clean run of the setting: (seconds, the host's state, or None and why not).

        A setting whose clean run a second run would change still fails: every
        point of it ends with a run that must report changed=0.
        """
        self.start(setting)
        _, seconds, _, rc, text = self.until_success(setting)
        if rc == 0:
            return seconds, self.state(), ""
        return seconds, None, "the clean run of setting %r failed 3 times:\n%s" % (setting, text[-3000:])

    def point(self, name, setting, task, after, power):
        """Kill, repair, settle: (the row's columns, the host's state, problems)."""
        self.start(setting)
        rc = None
        if setting == "torn":
            # What a power cut can leave that docker kill cannot: stamps cut short.
            sh("docker", "exec", self.box, "sh", "-c",
               "truncate -s 17 /opt/llama.cpp/current/build-stamp.json /srv/models/.stamps/*.json")
            killed = "stamps truncated"
        else:
            if after == DKMS_STARTED:
                sh("docker", "exec", self.box, "sh", "-c", "mkdir -p %s && touch %s" % (os.path.dirname(DKMS_HOLD),
                                                                                         DKMS_HOLD))
            stopped = name in STOPPED_AT_KILL
            rc, _, took, _ = self.playbook(setting, kill=(task, after, power, RUN_LOCK if stopped else ""))
            if not power and (after == DKMS_STARTED or stopped):
                # apt keeps running in dpkg's configure step, or the stopped step stays, until then (a power cut
                # ends it instead).
                let_go = ["rm", "-f", DKMS_HOLD] if after == DKMS_STARTED else \
                    ["sh", "-c", "kill -CONT $(cat %s)" % kill_at.STOPPED]
                threading.Timer(HELD_AFTER_KILL, sh, ("docker", "exec", self.box, *let_go), {"check": False}).start()
            killed = "%s at %r %s after %.0fs (rc %s)" % (
                "power cut" if power else "SIGKILL", task, "once %s exists" % after if isinstance(after, str)
                else "+%ds" % after, took, rc)
            if power:
                # The callback's docker kill runs on its own; wait for it (exit status 137).
                sh("docker", "wait", self.box, timeout=120)
                sh("docker", "start", self.box)
                boot(self.box)
        problems = [] if setting == "torn" or rc == -9 else ["the run was not killed (rc %s): is %r a task of the "
                                                             "stage?" % (rc, task)]
        # What dpkg was left with, before any repair.
        unfinished = [line for line in sh("docker", "exec", self.box, "dpkg-query", "-W", "-f",
                                          "${db:Status-Abbrev} ${binary:Package}\n", check=False).stdout.splitlines()
                      if line[1:3] not in ("i ", "n ", "c ")]
        if unfinished:
            killed += "; dpkg left " + ", ".join(" ".join(line.split()[::-1]) for line in unfinished)
        elif power and stage(setting) == "driver":
            problems.append("the power cut left dpkg with nothing unfinished: it did not land in dpkg")
        runs, seconds, did, changed, tail = self.converge(setting)
        if "keeps running" in name and "Waited" not in did:
            problems.append("the repair run did not wait for the killed run's step: it had ended before the kill")
        if changed != 0:
            problems.append("the run after the repair reported changed=%s\n%s" % (changed, tail))
        return (name, killed, "%d run(s), %.0fs: %s" % (runs, seconds, did)), self.state(), problems


def repairs(text):
    """What a run did: how many tasks changed, what host_guard found an earlier run had left, where it failed."""
    changed = len(re.findall(r"^changed: \[", text, re.M))
    guard = re.search(r"TASK \[host_guard : Say what an earlier run had left\][^\n]*\n(?:(?!TASK \[).)*?msg: (.*?)\n\n",
                      text, re.S)
    failed = re.search(r"TASK \[([^\]]*)\][^\n]*\n(?:(?!TASK \[).)*?fatal: \[[^\]]*\]: [A-Z]+! => (.{0,300})", text, re.S)
    return "%d changed%s%s" % (changed, "; " + " ".join(guard.group(1).split()) if guard else "",
                               "; failed at %s: %s" % (failed.group(1), " ".join(failed.group(2).split()))
                               if failed else "")


def diff(expected, got):
    return "\n".join(difflib.unified_diff(json.dumps(expected, indent=1, sort_keys=True).splitlines(),
                                          json.dumps(got, indent=1, sort_keys=True).splitlines(),
                                          "clean run", "after the kill", lineterm=""))


def run_all(points, boxes):
    """Every setting's clean run and every point, one per container at a time.

    Returns ({setting: (its state or None, why not)}, [(row, state, problems) of each point]).
    """
    with tempfile.TemporaryDirectory() as folder:
        if any(STAGES[stage(p[1])]["image"] == STAGES["driver"]["image"] for p in points):
            make_driver_image(Path(folder), boxes[0])
        if any(p[1] == "vllm" for p in points):
            fill_wheelhouse()
        hosts = queue.Queue()
        for box in boxes:
            hosts.put(Host(Path(folder) / box, box))
        printing = threading.Lock()

        def say(line):
            with printing:
                print(line, flush=True)

        def on_a_host(job, *params):
            """job(host, *params) on a free host; its error is returned as the job's problem, not raised."""
            host = hosts.get()
            try:
                return job(host, *params), ""
            except Exception:  # noqa: BLE001 - one broken job must not lose the others' results
                return None, "%s on %s:\n%s" % (job.__name__, host.box, traceback.format_exc())
            finally:
                hosts.put(host)

        def clean(setting):
            done, error = on_a_host(Host.clean, setting)
            seconds, state, problem = done or (0.0, None, error)
            say("clean run of %-5s %5.0fs%s" % (setting, seconds, "" if state is not None else " FAILED"))
            return state, problem

        def point(spec):
            done, error = on_a_host(Host.point, *spec)
            row, state, problems = done or ((spec[0], "-", "-"), None, [error])
            say("%-45s | %s | %s (done)" % row)
            return row, state, problems

        def longest_first(setting):
            return LONGEST_FIRST.index(setting) if setting in LONGEST_FIRST else len(LONGEST_FIRST)

        settings = sorted(dict.fromkeys(p[1] for p in points), key=longest_first)
        pool = ThreadPoolExecutor(len(boxes))
        try:
            cleans = {setting: pool.submit(clean, setting) for setting in settings}
            results = {spec: pool.submit(point, spec) for spec in sorted(points, key=lambda p: longest_first(p[1]))}
            cleans = {setting: future.result() for setting, future in cleans.items()}
            return cleans, [results[spec].result() for spec in points]
        finally:
            # On Ctrl-C or SIGTERM: start nothing more (main() then removes the containers).
            pool.shutdown(wait=False, cancel_futures=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2, help="containers at a time (default 2)")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--containers", default=CONTAINERS,
                        help="container names' prefix (default %s): two runs at once need different ones" % CONTAINERS)
    args = parser.parse_args()
    unknown = [name for name in args.only or [] if not any(name in (p[0], p[1]) for p in POINTS)]
    if unknown or args.jobs < 1:
        parser.error("--only %s names no point or setting" % unknown if unknown else "--jobs must be 1 or more")
    points = [p for p in POINTS if not args.only or p[0] in args.only or p[1] in args.only]
    # SIGTERM (a CI job stopped) ends the run as Ctrl-C does, through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
    boxes = ["%s-%d" % (args.containers, n) for n in range(1, args.jobs + 1)]
    try:
        cleans, results = run_all(points, boxes)
    finally:
        for box in boxes:
            sh("docker", "rm", "-f", box, check=False)
    failures = [problem for _, problem in cleans.values() if problem]
    print("\n%-45s | %s | %s | %s" % ("point", "what was killed", "what the repair runs did", "end state"))
    for (row, state, problems), spec in zip(results, points):
        expected = cleans[spec[1]][0]
        if expected is not None and state is not None and state != expected:
            problems.append(diff(expected, state))
        print("%-45s | %s | %s | %s" % (row + ("ok" if not problems and expected is not None else "FAILED",)),
              flush=True)
        failures += ["%s:\n%s" % (row[0], problem) for problem in problems]
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print("all %d points end as a clean run does" % len(points))


if __name__ == "__main__":
    main()
