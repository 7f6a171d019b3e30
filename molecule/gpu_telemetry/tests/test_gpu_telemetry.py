"""What the owner's Prometheus gets after gpu_telemetry: a real scrape of the real node exporter, compared with
the recordings the stand-in nvidia-smi replays and the recorded Xid lines written to the journal (prepare.yml)."""
from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

import pytest

FIXTURES = "/opt/v100-fixtures/"
V100S = FIXTURES + "nvidia-smi-q-x_v100s-pcie-32gb_x8_460.73.01.xml"
ECC = FIXTURES + "nvidia-smi-q-x_v100-sxm3-32gb_ecc-retired-pending_410.104.xml"
COLLECTOR = "v100-llm-telemetry"
SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$')
# The recorded kernel lines of prepare.yml, counted by hand: (GPU, Xid) -> events.
XIDS = {("0000:02:00.0", "79"): 1, ("0000:07:00.0", "48"): 1, ("0000:07:00.0", "64"): 1,
        ("0000:0a:00.0", "31"): 1, ("0000:0a:00.0", "62"): 1, ("0000:0a:00.0", "45"): 8}


def scrape(host):
    """The node exporter's /metrics, over HTTP on the container's loopback: [(name, labels, value)]."""
    text = host.check_output("python3 -c \"import urllib.request; print(urllib.request.urlopen("
                             "'http://127.0.0.1:9100/metrics', timeout=10).read().decode())\"")
    samples = []
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group("labels") or ""))
            samples.append((match.group("name"), labels, float(match.group("value"))))
    return samples


def series(samples, name, key="gpu"):
    return {labels.get(key): value for sample, labels, value in samples if sample == name}


def collect_with(host, recording):
    """One collector run with the stand-in replaying recording; seconds it took."""
    host.check_output("printf '[Service]\\nEnvironment=V100_STUB_NVIDIA_SMI=%s\\n' > "
                      "/etc/systemd/system/%s.service.d/stand-in.conf && systemctl daemon-reload"
                      % (recording, COLLECTOR))
    started = time.monotonic()
    host.check_output("systemctl start %s.service" % COLLECTOR)
    return time.monotonic() - started


@pytest.fixture
def timer_stopped(host):
    """The timer's own runs would race the test's: stopped, then the V100S recording and the timer are back."""
    # A run the timer started is stopped too: a start would join it, with its older recording.
    host.check_output("systemctl stop {0}.timer {0}.service".format(COLLECTOR))
    yield
    collect_with(host, V100S)
    host.check_output("systemctl start %s.timer" % COLLECTOR)


def test_node_exporter_listens_on_loopback_only(host):
    listening = host.check_output("ss -ltnH 'sport = :9100'")
    assert "127.0.0.1:9100" in listening
    assert "0.0.0.0:9100" not in listening and "*:9100" not in listening


def test_the_scrape_matches_the_recording_gpu_by_gpu(host):
    samples = scrape(host)
    recorded = ET.fromstring(host.file(V100S).content_string)
    gpus = recorded.findall("gpu")
    assert len(series(samples, "v100_gpu_info")) == len(gpus) == 8
    # The gpu label is nvidia-smi's index: the recording's order.
    for position, gpu in enumerate(gpus):
        index = str(position)
        assert series(samples, "v100_gpu_temperature_celsius")[index] == float(
            gpu.findtext("temperature/gpu_temp").split()[0])
        assert series(samples, "v100_gpu_power_draw_watts")[index] == float(
            gpu.findtext("power_readings/power_draw").split()[0])
        assert series(samples, "v100_gpu_memory_used_bytes")[index] == int(
            gpu.findtext("fb_memory_usage/used").split()[0]) * 2 ** 20
        capped = gpu.findtext("clocks_throttle_reasons/clocks_throttle_reason_sw_power_cap").strip() == "Active"
        power_cap = {labels["gpu"]: value for name, labels, value in samples
                     if name == "v100_gpu_throttle_active" and labels["reason"] == "sw_power_cap"}
        assert power_cap[index] == float(capped)
    assert sum(value for name, labels, value in samples if name == "v100_gpu_throttle_active"
               and labels["reason"] == "sw_power_cap") == 2
    assert series(samples, "v100_telemetry_gpu_query_success", key=None) == {None: 1}


def test_xid_counters_equal_the_recorded_events_by_number(host):
    samples = scrape(host)
    counted = {(labels["pci_bus_id"], labels["xid"]): value for name, labels, value in samples
               if name == "v100_xid_events_total"}
    # converge, the idempotence run and the timer have each run the collector: each line still counts once.
    assert counted == XIDS
    classes = {labels["xid"]: labels["class"] for name, labels, _ in samples if name == "v100_xid_events_total"}
    assert classes["79"] == classes["48"] == "hardware" and classes["45"] == "application"


def test_a_new_xid_line_counts_once_more(host, timer_stopped):
    host.check_output("echo 'NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.' | systemd-cat -t kernel"
                      " && journalctl --flush")
    collect_with(host, V100S)
    collect_with(host, V100S)
    counted = {(labels["pci_bus_id"], labels["xid"]): value for name, labels, value in scrape(host)
               if name == "v100_xid_events_total"}
    assert counted == {**XIDS, ("0000:02:00.0", "79"): 2}


def test_the_ecc_recording_gives_its_counts(host, timer_stopped):
    collect_with(host, ECC)
    samples = scrape(host)
    ecc = {(labels["scope"], labels["type"]): value for name, labels, value in samples if name == "v100_gpu_ecc_errors"}
    assert ecc == {("volatile", "correctable"): 1, ("volatile", "uncorrectable"): 1,
                   ("aggregate", "correctable"): 291, ("aggregate", "uncorrectable"): 7627}
    assert series(samples, "v100_gpu_retired_pages_pending") == {"0": 1}


def test_a_hung_nvidia_smi_gives_a_failure_gauge_within_the_timeout(host, timer_stopped):
    took = collect_with(host, "hang")
    # converge.yml sets gpu_telemetry_nvidia_smi_timeout: 3.
    assert took < 3 + 10
    samples = scrape(host)
    assert series(samples, "v100_telemetry_gpu_query_success", key=None) == {None: 0}
    assert series(samples, "v100_gpu_info") == {}


def test_the_collector_is_unprivileged_and_its_file_readable(host):
    shown = host.check_output("systemctl show %s.service -p User -p DynamicUser -p CapabilityBoundingSet" % COLLECTOR)
    assert "User=v100-telemetry" in shown and "CapabilityBoundingSet=\n" in shown + "\n"
    prom = host.file("/var/lib/v100-llm-telemetry/textfile/v100_llm.prom")
    assert prom.user == "v100-telemetry" and prom.mode == 0o644
    assert host.file("/var/lib/v100-llm-telemetry/xid-state.json").mode == 0o600
    assert host.service("%s.timer" % COLLECTOR).is_enabled
    assert host.service("prometheus-node-exporter").is_running
