#!/usr/bin/env bash
# Record what the nvidia_driver_closure module asks apt on a Debian 12 host with
# bookworm and bookworm-security (main contrib non-free non-free-firmware), so
# tests/unit/test_driver_closure.py replays Debian's real nvidia-graphics-drivers
# packages, which exist there in two versions (535.261.03-1 in bookworm,
# 535.309.01-0+deb12u1 in bookworm-security).
#   tests/manual/record-driver-closure.sh [image]   (default: the project's base image)
# Writes tests/fixtures/recorded/apt-cache_nvidia-driver-closure_debian12.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${1:-local/v100-debian12-systemd:latest}
out=tests/fixtures/recorded/apt-cache_nvidia-driver-closure_debian12.txt
docker run --rm -v "$PWD/plugins/module_utils:/utils:ro" "$image" bash -c '
cat > /etc/apt/sources.list <<SOURCES
deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware
deb http://deb.debian.org/debian-security bookworm-security main contrib non-free non-free-firmware
SOURCES
apt-get update -qq >/dev/null
# The two files at their collection path (namespace packages: no __init__.py needed).
utils=/tmp/pkg/ansible_collections/v100/llm/plugins/module_utils
mkdir -p $utils && cp /utils/driver_closure.py /utils/driver_packages.py $utils/
PYTHONPATH=/tmp/pkg python3 - <<PY
import subprocess
from ansible_collections.v100.llm.plugins.module_utils.driver.closure import collect_closure
seen = {}
def run(argv):
    out = subprocess.run(argv, capture_output=True, text=True, env={"LANG": "C", "PATH": "/usr/bin:/bin"}).stdout
    seen[" ".join(argv)] = out
    return out
for tops in (["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-cfg1", "nvidia-persistenced"],
             ["nvidia-driver"]):
    collect_closure(run, tops, 535)
    collect_closure(run, tops, 535, "535.261.03")
with open("/dev/stdout", "w") as stdout:
    for command, output in seen.items():
        stdout.write("### %s\n%s" % (command, output if output.endswith("\n") or not output else output + "\n"))
PY
' > "$out"
echo "wrote $out ($(grep -c '^### ' "$out") commands)"
