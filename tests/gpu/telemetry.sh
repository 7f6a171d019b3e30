#!/usr/bin/env bash
# Issue 39's GPU run: the telemetry collector (plugins/module_utils/telemetry/) against the real driver of the lent
# machine, run directly (there is no systemd there), as the role's unit runs it: `python3 -m v100_telemetry.collect
# SETTINGS` with the role's nvidia-smi command and timeout and the kernel log of the journal. It writes
# OUTDIR/v100_llm.prom and the driver's own `nvidia-smi -q -x` beside it, then prints, per family of the collector,
# how many series the file has: a family with none is one the driver reports as N/A on that GPU (the note says why).
# Usage: tests/gpu/telemetry.sh OUTDIR
set -uo pipefail
out=${1:?output folder}
mkdir -p "$out" /tmp/telemetry
ln -sfn "$PWD/plugins/module_utils/telemetry" /tmp/telemetry/v100_telemetry
printf '{"output": "%s/v100_llm.prom", "state": "%s/xid-state.json", "nvidia_smi": ["nvidia-smi", "-q", "-x"],
 "nvidia_smi_timeout": 10, "journal_match": ["_TRANSPORT=kernel"], "journal_timeout": 20, "servers": [],
 "server_timeout": 5}\n' "$out" "$out" > /tmp/telemetry/settings.json
(cd /tmp/telemetry && time python3 -m v100_telemetry.collect settings.json) || exit 1
nvidia-smi -q -x > "$out/nvidia-smi-q-x.xml"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
python3 - "$out/v100_llm.prom" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
families = re.findall(r"^# TYPE (\S+) ", text, re.M)
for name in families:
    print("%-45s %d series" % (name, len(re.findall(r"^%s(\{| )" % re.escape(name), text, re.M))))
expected = ["v100_gpu_" + name for name in (
    "info temperature_celsius memory_temperature_celsius temperature_slowdown_celsius temperature_shutdown_celsius "
    "power_draw_watts power_limit_watts sm_clock_hertz sm_clock_max_hertz memory_clock_hertz memory_clock_max_hertz "
    "utilization_ratio memory_utilization_ratio memory_used_bytes memory_total_bytes pcie_link_generation "
    "pcie_link_generation_max pcie_link_width pcie_link_width_max pcie_replay_total persistence_mode ecc_mode "
    "retired_pages_pending throttle_active ecc_errors retired_pages").split()]
print("absent (N/A on this GPU and driver):", [name for name in expected if name not in families] or "none")
PY
