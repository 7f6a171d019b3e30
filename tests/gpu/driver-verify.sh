#!/usr/bin/env bash
# Run on a machine with a real NVIDIA driver and no network (the lent GPU
# machine): preflight and the nvidia_driver verification against that driver,
# install steps skipped (tags). ansible-core travels as wheels in .whl/.
# Usage: tests/gpu/driver-verify.sh BRANCH OUTDIR
set -uo pipefail
branch=${1:?driver branch of the machine}; out=${2:?output folder}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0
# Collections the playbooks name (community.general), carried as .devcarry/ansible_collections.
# This repository as v100.llm (collections/), and the collections carried here.
export ANSIBLE_COLLECTIONS_PATH=$PWD/collections:$PWD/.devcarry
{ nvidia-smi -q -x > "$out/nvidia-smi-q-x.xml"; echo "nvidia-smi rc=$?"; } 2>&1
cat /proc/driver/nvidia/version > "$out/proc-driver-nvidia-version.txt" 2>&1
ansible-playbook -i localhost, -c local playbooks/driver.yml \
  --tags preflight,nvidia_driver_verify \
  -e nvidia_driver_branch="$branch" -e ansible_become=false -e ansible_python_interpreter="$(command -v python3)" 2>&1 | tee "$out/driver-verify.log"
echo "playbook rc=${PIPESTATUS[0]}"
