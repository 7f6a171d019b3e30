"""The telemetry collector (roles/gpu_telemetry) on real recordings: nvidia-smi -q -x of V100S, A100, T4
and H200 hosts, a real Xid 79 kernel log, and a real llama-server /metrics answer."""
from __future__ import annotations

import json
import os
import re
import sys
import time

import pytest

from ansible_collections.v100.llm.plugins.module_utils.telemetry import collect, exposition, gpu_series, plan, xid
from conftest import FIXTURES, RECORDED

V100S = (RECORDED / "nvidia-smi-q-x_v100s-pcie-32gb_x8_460.73.01.xml").read_text()
XID79 = (RECORDED / "kmsg_xid79_aer-surprise-down_tesla_PARTIAL.txt").read_text()
METRICS = (FIXTURES / "llama-server-api" / "metrics.prom").read_text()


def values(families, name):
    """{labels tuple: value} of one family."""
    found = [fam for fam in families if fam.name == name]
    return {item.labels: item.value for fam in found for item in fam.samples}


def by_gpu(families, name, **extra):
    return {dict(labels)["gpu"]: value for labels, value in values(families, name).items()
            if all(dict(labels).get(key) == wanted for key, wanted in extra.items())}


def test_v100s_recording_gives_every_gpu_its_readings():
    families = gpu_series.families(V100S)
    assert len(values(families, "v100_gpu_info")) == 8
    assert by_gpu(families, "v100_gpu_temperature_celsius")["0"] == 66
    assert by_gpu(families, "v100_gpu_memory_temperature_celsius")["0"] == 63
    assert by_gpu(families, "v100_gpu_temperature_slowdown_celsius")["0"] == 87
    assert by_gpu(families, "v100_gpu_temperature_shutdown_celsius")["0"] == 90
    assert by_gpu(families, "v100_gpu_power_draw_watts")["0"] == pytest.approx(232.8)
    assert by_gpu(families, "v100_gpu_power_limit_watts")["0"] == 250
    assert by_gpu(families, "v100_gpu_sm_clock_hertz")["0"] == 1410e6
    assert by_gpu(families, "v100_gpu_sm_clock_max_hertz")["0"] == 1597e6
    assert by_gpu(families, "v100_gpu_memory_used_bytes")["0"] == 31689 * 2 ** 20
    assert by_gpu(families, "v100_gpu_memory_total_bytes")["0"] == 32510 * 2 ** 20
    assert by_gpu(families, "v100_gpu_utilization_ratio")["0"] == pytest.approx(0.97)
    assert by_gpu(families, "v100_gpu_pcie_link_generation")["0"] == 3
    assert by_gpu(families, "v100_gpu_pcie_link_width_max")["0"] == 16
    assert by_gpu(families, "v100_gpu_pcie_replay_total")["0"] == 0
    assert by_gpu(families, "v100_gpu_persistence_mode")["0"] == 0
    assert set(by_gpu(families, "v100_gpu_ecc_errors", scope="aggregate", type="uncorrectable").values()) == {0}
    assert set(by_gpu(families, "v100_gpu_retired_pages", cause="double_bit").values()) == {0}
    assert set(by_gpu(families, "v100_gpu_retired_pages_pending").values()) == {0}


def test_the_two_power_capped_gpus_of_the_recording_are_throttled_for_power_only():
    families = gpu_series.families(V100S)
    active = [(dict(labels)["gpu"], dict(labels)["reason"]) for labels, value in
              values(families, "v100_gpu_throttle_active").items() if value]
    assert len(active) == 2 and {reason for _, reason in active} == {"sw_power_cap"}
    # Every reason the driver lists is a series of its own, 0 when not active.
    assert len(values(families, "v100_gpu_throttle_active")) == 8 * 9


def test_the_v100_with_ecc_errors_shows_its_counts_and_pending_retirement():
    families = gpu_series.families((RECORDED / "nvidia-smi-q-x_v100-sxm3-32gb_ecc-retired-pending_410.104.xml").read_text())
    ecc = {(dict(labels)["scope"], dict(labels)["type"], dict(labels)["location"]): value
           for labels, value in values(families, "v100_gpu_ecc_errors").items()}
    assert ecc == {("volatile", "correctable", "total"): 1, ("volatile", "uncorrectable", "total"): 1,
                   ("aggregate", "correctable", "total"): 291, ("aggregate", "uncorrectable", "total"): 7627}
    assert {dict(labels)["cause"]: value for labels, value in values(families, "v100_gpu_retired_pages").items()} \
        == {"single_bit": 0, "double_bit": 2}
    assert list(values(families, "v100_gpu_retired_pages_pending").values()) == [1]


def test_a_link_below_its_generation_is_seen_and_gpus_go_by_index():
    families = gpu_series.families((RECORDED / "nvidia-smi-q-x_k80_x4_ecc_pcie-gen1_430.26.xml").read_text())
    current = values(families, "v100_gpu_pcie_link_generation")
    assert sorted(current.values()) == [1, 1, 3, 3]
    # The recording's minor numbers are 1, 2, 3, 0: the label is nvidia-smi's index, as llama_server's gpus.
    assert sorted(by_gpu(families, "v100_gpu_info")) == ["0", "1", "2", "3"]
    # 430 fills pending_blacklist only.
    assert set(values(families, "v100_gpu_retired_pages_pending").values()) == {0}
    assert set(values(families, "v100_gpu_pcie_link_generation_max").values()) == {3}


def test_bus_ids_take_the_form_the_xid_series_carry():
    labels = [dict(labels) for labels in values(gpu_series.families(V100S), "v100_gpu_info")]
    assert labels[0]["pci_bus_id"] == "0000:00:0d.0"
    assert labels[0]["driver_version"] == "460.73.01"
    assert labels[0]["name"] == "Tesla V100S-PCIE-32GB"


@pytest.mark.parametrize("recording", ["nvidia-smi-q-x_a100-sxm4-80gb_535.54.03.xml",
                                       "nvidia-smi-q-x_tesla-t4_x1_515.105.01.xml",
                                       "nvidia-smi-q-x_h200_x1_580.159.04.xml"])
def test_later_drivers_give_the_same_series(recording):
    families = gpu_series.families((RECORDED / recording).read_text())
    for name in ("v100_gpu_temperature_celsius", "v100_gpu_power_draw_watts", "v100_gpu_power_limit_watts",
                 "v100_gpu_memory_total_bytes", "v100_gpu_pcie_link_width_max"):
        assert len(values(families, name)) == 1, name
    # 580 names them clocks_event_reasons: still one series each.
    assert len(values(families, "v100_gpu_throttle_active")) >= 8


@pytest.mark.parametrize("recording, locations", [
    ("nvidia-smi-q-x_a100-sxm4-80gb_535.54.03.xml", {"sram", "dram"}),
    ("nvidia-smi-q-x_h200_x1_580.159.04.xml", {"sram", "sram_parity", "sram_secded", "dram"}),
])
def test_drivers_from_535_count_ecc_errors_by_memory(recording, locations):
    families = gpu_series.families((RECORDED / recording).read_text())
    ecc = {(dict(labels)["scope"], dict(labels)["type"], dict(labels)["location"]): value
           for labels, value in values(families, "v100_gpu_ecc_errors").items()}
    assert {location for _, _, location in ecc} == locations
    assert ("volatile", "uncorrectable", "dram") in ecc and ("aggregate", "correctable", "sram") in ecc
    assert set(ecc.values()) == {0}


def test_a_field_the_driver_does_not_know_gives_no_series():
    # The T4 recording has no memory temperature ("N/A").
    families = gpu_series.families((RECORDED / "nvidia-smi-q-x_tesla-t4_x1_515.105.01.xml").read_text())
    assert values(families, "v100_gpu_memory_temperature_celsius") == {}
    assert "v100_gpu_memory_temperature_celsius" not in exposition.render(families)


def journal(lines, boot="b1", start=1_700_000_000):
    """Journal records (journalctl -o json) of recorded dmesg lines, the "[seconds] " prefix taken off, one a
    second from start."""
    records = []
    for number, line in enumerate(lines):
        message = re.sub(r"^\[\s*[\d.]+\]\s*", "", line)
        records.append({"MESSAGE": message, "__CURSOR": "s=%s;i=%d" % (boot, number),
                        "__REALTIME_TIMESTAMP": str((start + number) * 1_000_000)})
    return records


def test_the_recorded_xid_79_is_counted_once_for_its_gpu():
    state = xid.fold(xid.empty_state(), journal(XID79.splitlines()))
    assert list(state["events"].values()) == [
        {"pci_bus_id": "0000:02:00.0", "xid": 79, "count": 1, "last": 1_700_000_012.0}]
    assert state["cursor"] == "s=b1;i=12"
    text = exposition.render(xid.families(state))
    assert 'v100_xid_events_total{pci_bus_id="0000:02:00.0",xid="79",class="hardware"} 1' in text


@pytest.mark.parametrize("recording, counts", [
    ("kmsg_xid48-64_syslog.txt", {("0000:07:00.0", 48): 1, ("0000:07:00.0", 64): 1}),
    ("kmsg_xid31-62-45_dmesg.txt", {("0000:0a:00.0", 31): 1, ("0000:0a:00.0", 62): 1, ("0000:0a:00.0", 45): 8}),
    ("kmsg_xid43-31-94_dmesg-T_535.183.01.txt",
     {("0000:00:05.0", 43): 2, ("0000:00:07.0", 31): 1, ("0000:00:08.0", 94): 1}),
])
def test_recorded_xid_logs_are_counted_by_gpu_and_number(recording, counts):
    lines = (RECORDED / recording).read_text().splitlines()
    # The syslog and dmesg -T prefixes come before "NVRM:" as the journal's own fields would.
    state = xid.fold(xid.empty_state(), journal([re.sub(r"^.*?(?=NVRM:)", "", line) for line in lines]))
    assert {(item["pci_bus_id"], item["xid"]): item["count"] for item in state["events"].values()} == counts


def test_counts_add_up_over_runs_and_survive_a_state_file():
    first = xid.fold(xid.empty_state(), journal(XID79.splitlines()))
    again = xid.fold(json.loads(json.dumps(first)), journal(XID79.splitlines(), boot="b2", start=1_700_086_400))
    assert again["events"]["0000:02:00.0/79"]["count"] == 2
    # No new records: nothing changes, the cursor stays.
    assert xid.fold(again, []) == again


@pytest.mark.parametrize("message, pci, number", [
    # Older drivers: no "PCI:" (pastebin.com/xJaypMZt), and 470 and later: pid and name after the number.
    ("NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc Data ffffffff", "0000:01:00.0", 3),
    ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to "
     "activate.", "0000:10:1c.0", 63),
    ("NVRM: GPU at 0000:01:00.0 has fallen off the bus.", "0000:01:00.0", 79),
    ("NVRM: GPU at PCI:0000:02:00: GPU-660d987e-5b28-3bf6-2a2d-1d5ecae7f6df", None, None),
])
def test_xid_line_forms(message, pci, number):
    found = xid.event({"MESSAGE": message, "__REALTIME_TIMESTAMP": "0"})
    assert (found and (found["pci_bus_id"], found["xid"])) == ((pci, number) if pci else None)


def test_a_fall_off_the_bus_logged_twice_is_one_incident():
    # Drivers that print both lines for one fall (reviewed on a 2016 forum log): one Xid 79.
    lines = ["NVRM: GPU at 0000:02:00.0 has fallen off the bus.",
             "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."]
    state = xid.fold(xid.empty_state(), journal(lines))
    assert state["events"]["0000:02:00.0/79"]["count"] == 1
    later = xid.fold(state, journal(lines[1:], boot="b2", start=1_700_000_600))
    assert later["events"]["0000:02:00.0/79"]["count"] == 2


def test_xid_classes():
    assert [xid.xid_class(n) for n in (48, 79, 13, 31, 999)] == [
        "hardware", "hardware", "application", "application", "other"]


def test_a_message_in_bytes_is_read():
    record = {"MESSAGE": list(b"NVRM: Xid (PCI:0000:02:00): 48, An uncorrectable double bit error \xff"),
              "__REALTIME_TIMESTAMP": "0"}
    assert xid.event(record)["xid"] == 48


def test_llama_server_metrics_keep_their_names_with_the_server_label():
    families = exposition.relabel(exposition.parse(METRICS), ("llamacpp:",), server="qwen")
    text = exposition.render(families)
    assert 'llamacpp:tokens_predicted_total{server="qwen"} 8' in text
    assert "# TYPE llamacpp:tokens_predicted_total counter" in text
    assert len(families) == METRICS.count("# TYPE ")


def test_two_instances_give_one_family_each():
    one = exposition.relabel(exposition.parse(METRICS), ("llamacpp:",), server="a")
    two = exposition.relabel(exposition.parse(METRICS), ("llamacpp:",), server="b")
    text = exposition.render(exposition.merge(one + two))
    assert text.count("# TYPE llamacpp:requests_processing gauge") == 1
    assert 'llamacpp:requests_processing{server="a"} 0' in text and 'requests_processing{server="b"} 0' in text


def test_parse_reads_histograms_labels_and_timestamps():
    text = ('# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.\n'
            '# TYPE vllm:e2e_request_latency_seconds histogram\n'
            'vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="m"} 3.0 1700000000000\n'
            'vllm:e2e_request_latency_seconds_count{model_name="m"} 4.0\n'
            '# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n')
    families = exposition.relabel(exposition.parse(text), ("vllm:",), server="v")
    assert [fam.name for fam in families] == ["vllm:e2e_request_latency_seconds"]
    assert families[0].kind == "histogram"
    assert exposition.render(families).splitlines()[2] == \
        'vllm:e2e_request_latency_seconds_bucket{server="v",le="1.0",model_name="m"} 3'


def test_label_values_are_escaped():
    text = exposition.render([exposition.family("x", "gauge", "h", [exposition.sample("x", 1, a='q"\\\n')])])
    assert 'x{a="q\\"\\\\\\n"} 1' in text
    assert exposition.parse(text)[0].samples[0].labels == (("a", 'q"\\\n'),)


def config(tmp_path, nvidia_smi, servers=()):
    return {"output": str(tmp_path / "v100_llm.prom"), "state": str(tmp_path / "xid.json"),
            "nvidia_smi": nvidia_smi, "nvidia_smi_timeout": 2,
            "journal_match": ["--file", str(tmp_path / "none.journal")], "journal_timeout": 5,
            "servers": list(servers), "server_timeout": 2}


def test_a_run_writes_the_file_with_its_success_gauges(tmp_path):
    collect.run(config(tmp_path, ["cat", str(RECORDED / "nvidia-smi-q-x_v100s-pcie-32gb_x8_460.73.01.xml")]))
    text = (tmp_path / "v100_llm.prom").read_text()
    assert "v100_telemetry_gpu_query_success 1" in text
    assert len(re.findall(r"^v100_gpu_info\{", text, re.M)) == 8
    assert oct(os.stat(tmp_path / "v100_llm.prom").st_mode & 0o777) == "0o644"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_a_hung_nvidia_smi_gives_a_failure_gauge_within_the_timeout(tmp_path):
    started = time.monotonic()
    collect.run(config(tmp_path, ["sleep", "60"]))
    assert time.monotonic() - started < 10
    text = (tmp_path / "v100_llm.prom").read_text()
    assert "v100_telemetry_gpu_query_success 0" in text and "v100_gpu_" not in text


def test_a_failed_nvidia_smi_gives_a_failure_gauge(tmp_path):
    recorded = RECORDED / "nvidia-smi_failed-to-communicate.txt"
    collect.run(config(tmp_path, [sys.executable, "-c", "import sys; print(open(%r).read()); sys.exit(9)"
                                  % str(recorded)]))
    assert "v100_telemetry_gpu_query_success 0" in (tmp_path / "v100_llm.prom").read_text()


def test_a_server_that_does_not_answer_is_down(tmp_path):
    server = {"name": "qwen", "metrics_url": "http://127.0.0.1:9/metrics", "prefixes": ["llamacpp:"]}
    collect.run(config(tmp_path, ["false"], [server]))
    assert 'v100_server_metrics_up{server="qwen"} 0' in (tmp_path / "v100_llm.prom").read_text()


def endpoint(name, kind, key_file=""):
    return {"name": name, "kind": kind, "url": "http://127.0.0.1:8080", "key_file": key_file}


PREFIXES = {"llama-server": ["llamacpp:"], "vllm": ["vllm:"]}
PATHS = {"textfile_dir": "/t", "state_dir": "/s"}


def test_only_llama_server_keys_become_credentials():
    servers = [endpoint("qwen", "llama-server", "/etc/llama-server/qwen.key"), endpoint("vllm", "vllm", "/e/vllm.env"),
               endpoint("open", "llama-server")]
    assert [server["name"] for server in plan.keyed_servers(servers)] == ["qwen"]
    settings = plan.collector_settings(servers, PREFIXES, PATHS, True, 10, ["_TRANSPORT=kernel"])
    assert [(server["credential"], server["prefixes"], server["metrics_url"]) for server in settings["servers"]] == [
        ("qwen", ["llamacpp:"], "http://127.0.0.1:8080/metrics"), (None, ["vllm:"], "http://127.0.0.1:8080/metrics"),
        (None, ["llamacpp:"], "http://127.0.0.1:8080/metrics")]
    assert settings["output"] == "/t/v100_llm.prom" and settings["nvidia_smi"] == ["nvidia-smi", "-q", "-x"]


def test_a_host_without_gpus_asks_no_nvidia_smi(tmp_path):
    settings = plan.collector_settings([], PREFIXES, {"textfile_dir": str(tmp_path), "state_dir": str(tmp_path)},
                                       False, 10, ["--file", str(tmp_path / "none.journal")])
    assert settings["nvidia_smi"] is None
    text = collect.run(settings)
    assert "gpu_query_success" not in text and "v100_telemetry_xid_read_success" in text
    assert plan.summary(text)["gpu_query"] is None


@pytest.mark.parametrize("address, port, expected", [
    ("127.0.0.1", 9100, {"address": "127.0.0.1:9100", "loopback": True, "local": "127.0.0.1:9100",
                         "local_host": "127.0.0.1"}),
    ("0.0.0.0", 9100, {"address": "0.0.0.0:9100", "loopback": False, "local": "127.0.0.1:9100",
                       "local_host": "127.0.0.1"}),
    ("192.168.1.5", 9200, {"address": "192.168.1.5:9200", "loopback": False, "local": "192.168.1.5:9200",
                           "local_host": "192.168.1.5"}),
    ("::1", 9100, {"address": "[::1]:9100", "loopback": True, "local": "[::1]:9100", "local_host": "::1"}),
])
def test_listen(address, port, expected):
    assert plan.listen(address, port) == expected


def test_summary_of_a_scrape(tmp_path):
    state = xid.fold(xid.empty_state(), journal(XID79.splitlines()))
    text = exposition.render(gpu_series.families(V100S) + xid.families(state) + exposition.relabel(
        exposition.parse(METRICS), ("llamacpp:",), server="smollm2") + [exposition.family(
            "v100_server_metrics_up", "gauge", "h", [exposition.sample("v100_server_metrics_up", 1, server="smollm2")])])
    found = plan.summary(text + "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 5\n")
    assert found["gpus"] == 8 and found["gpu_query"] is None
    assert found["throttled"] == ["3:sw_power_cap", "6:sw_power_cap"]
    assert found["xid_events"] == {"0000:02:00.0 xid 79": 1}
    assert found["servers_up"] == {"smollm2": True}


def test_a_kernel_log_too_long_to_read_is_counted_from_its_last_line(tmp_path, monkeypatch):
    # A journalctl that takes too long for the whole log but answers -n 1 at once, then the lines after it.
    fake = tmp_path / "bin" / "journalctl"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\ncase " $* " in\n'
                    '  *" -n 1 "*) echo \'{"__CURSOR": "s=b;i=99", "MESSAGE": "x", "__REALTIME_TIMESTAMP": "0"}\' ;;\n'
                    '  *"--after-cursor s=b;i=99"*) echo \'{"__CURSOR": "s=b;i=100", "__REALTIME_TIMESTAMP": "5",'
                    ' "MESSAGE": "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus."}\' ;;\n'
                    '  *) sleep 30 ;;\nesac\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (fake.parent, os.environ["PATH"]))
    settings = dict(config(tmp_path, ["false"]), journal_match=["_TRANSPORT=kernel"], journal_timeout=1,
                    nvidia_smi=None)
    first = collect.run(settings)
    assert "v100_telemetry_xid_read_success 0" in first
    assert json.loads((tmp_path / "xid.json").read_text())["cursor"] == "s=b;i=99"
    second = collect.run(settings)
    assert "v100_telemetry_xid_read_success 1" in second
    assert 'v100_xid_events_total{pci_bus_id="0000:02:00.0",xid="79",class="hardware"} 1' in second
