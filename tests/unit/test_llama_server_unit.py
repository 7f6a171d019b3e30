"""The llama-server unit rendered for a CUDA instance (molecule renders the CPU one)."""
from __future__ import annotations

import jinja2
from conftest import PROJECT_ROOT

from sample_llama_server import llama_server_settings, planned

from ansible_collections.v100.llm.plugins.filter import driver, host, llama, models, service, vllm  # noqa: E402
TEMPLATES = [str(PROJECT_ROOT / "roles" / role / "templates") for role in ("llama_server", "server_systemd")]


def render(name, **variables):
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True,
                                     undefined=jinja2.StrictUndefined)
    # As a role of the collection calls them: by their full names.
    for plugin in (driver, host, llama, models, service, vllm):
        environment.filters.update({"v100.llm." + name: function for name, function in plugin.FilterModule().filters().items()})
    return environment.get_template(name).render(ansible_managed="managed", **variables)


def cuda_unit():
    settings = llama_server_settings(api_key_set=True)
    instance = planned([{"name": "coder", "model": "/srv/models/50%.gguf", "port": 8081, "gpus": [1]}],
                       settings)["instances"][0]
    return render("llama-server.service.j2", item=instance, llama_server_user="llama-server",
                  llama_server_group="llama-server", llama_server_start_timeout=900,
                  __llama_server_build_dir="/opt/llama.cpp/b1-abc", __llama_server_backend="cuda")


GPU_SERVICE = {"server_systemd_restart_delay": 10, "server_systemd_start_limit_burst": 5,
               "server_systemd_health_timeout": 10, "server_systemd_deep_probe_every": 5,
               "server_systemd_deep_probe_timeout": 60, "server_systemd_on_failure_command": []}


def drop_in(device_nodes=True, **item):
    return render("gpu-sandbox.conf.j2", server_systemd_device_nodes=device_nodes, item=item, **GPU_SERVICE)


def test_a_cuda_instance_waits_for_the_device_nodes_and_sees_its_gpu():
    unit = cuda_unit()
    drop_in_text = drop_in()
    assert "After=nvidia-persistenced.service nvidia-device-nodes.service" in drop_in_text
    assert "Wants=nvidia-device-nodes.service" in drop_in_text
    assert "nvidia-device-nodes" not in drop_in(device_nodes=False)
    assert 'Environment="CUDA_VISIBLE_DEVICES=1"' in unit
    assert 'Environment="CUDA_DEVICE_ORDER=PCI_BUS_ID"' in unit
    assert "ExecStartPre" not in unit


def test_the_device_policy_names_the_nvidia_majors_of_every_driver_branch():
    unit = drop_in()
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


def test_restarts_back_off_and_end_failed_with_a_report():
    lines = drop_in(start_timeout=900).splitlines()
    # 5 starts of at most 900 s each, 10 s apart (+30 s for the stop): a model that cannot load ends failed.
    for line in ("StartLimitIntervalSec=4700", "StartLimitBurst=5", "OnFailure=v100-llm-failed@%n.service",
                 "Restart=on-failure", "RestartSec=10"):
        assert line in lines, line
    assert "Restart=" not in cuda_unit()
    report = render("failed.service.j2", **dict(GPU_SERVICE, server_systemd_on_failure_command=["/usr/local/bin/tell",
                                                                                             "gpu team"]))
    assert ("ExecStart=/usr/local/libexec/v100-llm/service-health failed %i --state-dir /var/lib/v100-llm/failed"
            in report.splitlines())
    assert 'ExecStart=/usr/local/bin/tell "gpu team" %i' in report.splitlines()
    assert report.count("ExecStart=") == 2
    assert render("failed.service.j2", **GPU_SERVICE).count("ExecStart=") == 1


def test_the_health_probe_of_a_keyed_instance_gets_a_deep_probe_with_the_key_as_a_credential():
    settings = llama_server_settings(api_key_set=True)
    instance = planned([{"name": "coder", "model": "/srv/models/m.gguf", "port": 8081}], settings)["instances"][0]
    item = dict(instance, health_interval="1min", health_failures=3)
    lines = render("health.service.j2", item=item, **GPU_SERVICE).splitlines()
    [start] = [line for line in lines if line.startswith("ExecStart=")]
    assert start.endswith("--deep-url http://127.0.0.1:8081/v1/completions --deep-every 5 --deep-timeout 60 "
                          "--key-credential api-key --busy-url http://127.0.0.1:8081/slots")
    assert "LoadCredential=api-key:%s" % instance["key_file"] in lines
    assert "TimeoutStartSec=100" in lines
    unprobed = render("health.service.j2", item=item, **dict(GPU_SERVICE, server_systemd_deep_probe_every=0))
    assert "--deep-url" not in unprobed and "LoadCredential" not in unprobed
