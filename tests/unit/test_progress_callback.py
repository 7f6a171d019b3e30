"""The progress callback (scripts/demo's terminal output): a line per stage, failures that stop a host, the verify
report and how to use it, driven by the events Ansible sends it.

Each case runs in its own interpreter: importing Ansible's callback base sets up its display, which changes how
the module tests in this process see warnings.
"""
import json
import subprocess
import sys
from pathlib import Path

COLLECTIONS = Path(__file__).resolve().parents[2] / "collections"

DRIVER = r"""
import json, os, sys
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
from ansible_collections.v100.llm.plugins.callback import progress

events, per_host = json.loads(sys.argv[2])

class Stats:
    processed = {host: 1 for host in per_host}
    def summarize(self, host):
        return dict({"ok": 1, "changed": 0, "unreachable": 0, "failures": 0, "skipped": 0}, **per_host[host])

def named(name):
    return lambda: name

os.environ["V100_LLM_PROGRESS_FD"] = "1"
callback = progress.CallbackModule()
callback.get_option = lambda name: "/logs/site.log"
for event, value in events:
    if event == "play":
        callback.v2_playbook_on_play_start(SimpleNamespace(get_name=named(value)))
        continue
    host, task, action, result = value
    argument = SimpleNamespace(host=SimpleNamespace(get_name=named(host)),
                               task=SimpleNamespace(get_name=named(task), action=action), result=result)
    if event == "failed":
        callback.v2_runner_on_failed(argument, False)
    else:
        getattr(callback, "v2_runner_on_" + event)(argument)
callback.v2_playbook_on_stats(Stats())
"""


def run(events, **per_host):
    done = subprocess.run([sys.executable, "-c", DRIVER, str(COLLECTIONS), json.dumps([events, per_host])],
                          capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def task(event, host, name, action="ansible.builtin.command", **result):
    return [event, [host, name, action, result]]


def test_a_run_that_verified_prints_its_stages_the_report_and_how_to_use_it():
    lines = run([["play", "Preflight"], task("ok", "h1", "probe"), ["play", "VLLM"], task("skipped", "h1", "skip"),
                 ["play", "Verify"], task("ok", "h1", "Check", "v100.llm.endpoint_check",
                                          summary=["demo http://x/v1"], usage=["  curl: ..."])], h1={})
    assert [line.split()[:2] for line in lines[:3]] == [["Preflight", "ok"], ["VLLM", "skipped"], ["Verify", "ok"]]
    assert lines[4:] == ["What the OpenAI client found:", "  h1: demo http://x/v1", "How to use it:", "  curl: ...",
                         "the full log: /logs/site.log"]


def test_a_rescued_failure_is_not_the_runs():
    lines = run([["play", "Driver"], task("failed", "h1", "try", msg="first try failed"),
                 task("ok", "h1", "rescue")], h1={"rescued": 1})
    assert lines[0].split()[:2] == ["Driver", "ok"] and not any("FAILED on" in line for line in lines)


def test_a_failure_that_stops_a_host_is_named_with_its_message():
    lines = run([["play", "Driver"],
                 task("failed", "h1", "Install", msg="One or more items failed", failed=True,
                      results=[{"failed": False}, {"failed": True, "msg": "no such package: x"}]),
                 task("failed", "h2", "Include", reason="Could not find or access 'missing.yml'")],
                h1={"failures": 1}, h2={"failures": 1})
    assert lines[0].split()[:2] == ["Driver", "FAILED"]
    assert "FAILED on h1 at 'Install': no such package: x" in lines
    assert "FAILED on h2 at 'Include': Could not find or access 'missing.yml'" in lines
    assert "How to use it:" not in lines


def test_a_failure_an_always_section_outlived_is_still_named():
    lines = run([["play", "Llama.cpp"], task("failed", "h1", "Build", msg="cmake failed"),
                 task("ok", "h1", "always: clean up")], h1={"failures": 1})
    assert "FAILED on h1 at 'Build': cmake failed" in lines
