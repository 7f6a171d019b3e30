"""The llama-server unit rendered for a CUDA instance (molecule renders the CPU one)."""
from __future__ import annotations

import importlib.util

import jinja2
from conftest import PROJECT_ROOT

from sample_llama_server import llama_server_settings, planned

_spec = importlib.util.spec_from_file_location("v100_llm_filters", PROJECT_ROOT / "plugins" / "filter" / "v100_llm.py")
_filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters)
TEMPLATES = [str(PROJECT_ROOT / "roles" / role / "templates") for role in ("llama_server", "gpu_service")]


def render(name, **variables):
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True,
                                     undefined=jinja2.StrictUndefined)
    environment.filters.update(_filters.FilterModule().filters())
    return environment.get_template(name).render(ansible_managed="managed", **variables)


def cuda_unit():
    settings = llama_server_settings(api_key_set=True)
    instance = planned([{"name": "coder", "model": "/srv/models/50%.gguf", "port": 8081, "gpus": [1]}],
                       settings)["instances"][0]
    return render("llama-server.service.j2", item=instance, llama_server_user="llama-server",
                  llama_server_group="llama-server", llama_server_start_timeout=900,
                  __llama_server_build_dir="/opt/llama.cpp/b1-abc", __llama_server_backend="cuda")


def test_a_cuda_instance_waits_for_the_device_nodes_and_sees_its_gpu():
    unit = cuda_unit()
    drop_in = render("gpu-sandbox.conf.j2", gpu_service_device_nodes=True)
    assert "After=nvidia-persistenced.service nvidia-device-nodes.service" in drop_in
    assert "Wants=nvidia-device-nodes.service" in drop_in
    assert "nvidia-device-nodes" not in render("gpu-sandbox.conf.j2", gpu_service_device_nodes=False)
    assert 'Environment="CUDA_VISIBLE_DEVICES=1"' in unit
    assert 'Environment="CUDA_DEVICE_ORDER=PCI_BUS_ID"' in unit
    assert "ExecStartPre" not in unit


def test_the_device_policy_names_the_nvidia_majors_of_every_driver_branch():
    unit = render("gpu-sandbox.conf.j2", gpu_service_device_nodes=True)
    assert "PrivateDevices=" not in unit
    for line in ("DevicePolicy=closed", "DeviceAllow=char-nvidia-frontend rw", "DeviceAllow=char-nvidia rw",
                 "DeviceAllow=char-nvidiactl rw", "DeviceAllow=char-nvidia-uvm rw"):
        assert line in unit.splitlines(), line


def test_percent_signs_are_escaped_in_the_description_and_command():
    unit = cuda_unit()
    assert "--model /srv/models/50%%.gguf" in unit
    assert "Description=llama.cpp server coder (/srv/models/50%%.gguf)" in unit


def test_the_device_node_unit_makes_a_node_per_gpu():
    unit = render("nvidia-device-nodes.service.j2", nvidia_gpu_count=2)
    # nvidia-uvm once (each -u -c=N would remake /dev/nvidia-uvm with minor N), then nvidiactl and the GPUs.
    assert "ExecStart=/usr/bin/nvidia-modprobe -u -c=0\n" in unit
    assert "ExecStart=/usr/bin/nvidia-modprobe -c=255 -c=0 -c=1\n" in unit
    assert "ConditionPathIsExecutable=/usr/bin/nvidia-modprobe" in unit
    assert "RemainAfterExit=yes" in unit
