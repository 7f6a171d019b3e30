"""What a user relies on after the llama_server role: real answers from the
real llama-server (llama.cpp 0c1e57098, CPU build) with the real SmolLM2 model,
under systemd, sandboxed, keyed, health-checked and restarted on schedule.

Instances (converge.yml): chat on 127.0.0.1:8081 with an API key (2 slots,
-c 2048), mini on 127.0.0.1:8082 without one (4 slots: auto's choice after
converge, fixed by side_effect.yml, which also gives it the model split in
two parts).
"""
import json
import time

import pytest

KEY = "test-key-chat-not-a-secret"
CHAT = "http://127.0.0.1:8081"
MINI = "http://127.0.0.1:8082"


def http(host, method, url, key=None, body=None):
    """(status, body) through curl inside the container."""
    command = f"curl -s -m 120 -o /tmp/answer -w '%{{http_code}}' -X {method} '{url}'"
    if key:
        command += f" -H 'Authorization: Bearer {key}'"
    if body is not None:
        command += f" -H 'Content-Type: application/json' -d '{json.dumps(body)}'"
    status = host.check_output(command)
    return int(status), host.check_output("cat /tmp/answer")


def main_pid(host, unit):
    return int(host.check_output(f"systemctl show -p MainPID --value {unit}"))


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(1)
    return False


def journal_says(host, unit, text):
    """Whether text reaches unit's journal within 15 s: journald takes a unit's output asynchronously, and the
    health timer's own probes add lines of their own meanwhile (CI of 2026-12-07: a line not yet among the
    last five)."""
    return wait_for(lambda: text in host.check_output(f"journalctl --no-pager -u {unit} -n 50"), 15)


def healthy(host, base):
    return host.run(f"curl -s -o /dev/null -w '%{{http_code}}' {base}/health").stdout == "200"


@pytest.mark.parametrize("unit", ["llama-server-chat", "llama-server-mini"])
def test_the_units_run_enabled(host, unit):
    service = host.service(unit)
    journal = host.run(f"journalctl -u {unit} --no-pager -n 30").stdout
    assert service.is_running, journal
    assert service.is_enabled


def test_a_chat_completion_comes_back_with_the_key(host):
    status, answer = http(host, "POST", f"{CHAT}/v1/chat/completions", KEY, {
        "model": "smollm2", "max_tokens": 16, "temperature": 0,
        "messages": [{"role": "user", "content": "What is the capital of France?"}]})
    assert status == 200, answer
    completion = json.loads(answer)
    assert completion["object"] == "chat.completion"
    assert completion["model"] == "smollm2"
    message = completion["choices"][0]["message"]
    assert message["role"] == "assistant" and message["content"].strip()
    assert completion["usage"]["completion_tokens"] > 0
    assert completion["usage"]["prompt_tokens"] > 5


@pytest.mark.parametrize("key", [None, "wrong-key"])
def test_without_the_right_key_the_api_answers_401(host, key):
    status, answer = http(host, "POST", f"{CHAT}/v1/chat/completions", key, {
        "messages": [{"role": "user", "content": "hi"}]})
    assert status == 401, answer
    assert http(host, "GET", f"{CHAT}/v1/models", key)[0] == 401


def test_health_answers_200_without_a_key(host):
    status, answer = http(host, "GET", f"{CHAT}/health")
    assert status == 200 and json.loads(answer)["status"] == "ok"


def test_metrics_are_on_behind_the_key(host):
    status, answer = http(host, "GET", f"{CHAT}/metrics", KEY)
    assert status == 200 and "llamacpp:" in answer
    assert http(host, "GET", f"{CHAT}/metrics")[0] == 401


def test_the_instance_without_a_key_serves_the_split_set_as_one_model(host):
    status, answer = http(host, "GET", f"{MINI}/v1/models")
    assert status == 200
    [model] = json.loads(answer)["data"]
    assert model["id"] == "smollm2-split"
    # Every tensor of both parts loaded: the parameter count of the whole model (GGUF tensor infos of the
    # unsplit file: tests/unit/test_gguf_metadata.py).
    assert model["meta"]["n_params"] == 134515008


def test_four_requests_are_served_at_once_on_four_slots(host):
    """Four requests sent together all run together: /slots shows four busy at one moment."""
    request = json.dumps({"prompt": "Count slowly from one to one hundred:", "n_predict": 200, "ignore_eos": True,
                          "cache_prompt": False})
    host.check_output(
        "for i in 1 2 3 4; do (curl -s -m 300 -o /tmp/answer-$i -H 'Content-Type: application/json' "
        f"-d '{request}' {MINI}/completion &) ; done")
    busy = []

    def four_busy():
        slots = json.loads(host.check_output(f"curl -s -m 10 {MINI}/slots"))
        busy.append(sum(1 for slot in slots if slot["is_processing"]))
        return busy[-1] == 4

    assert wait_for(four_busy, 60), busy
    assert wait_for(lambda: host.run("grep -l tokens_predicted /tmp/answer-1 /tmp/answer-2 /tmp/answer-3 "
                                     "/tmp/answer-4").stdout.count("answer") == 4, 300)
    for index in range(1, 5):
        assert json.loads(host.check_output(f"cat /tmp/answer-{index}"))["tokens_predicted"] == 200


def test_the_servers_listen_on_loopback_only(host):
    listening = host.check_output("ss -Htlnp")
    assert "127.0.0.1:8081" in listening and "127.0.0.1:8082" in listening
    assert "0.0.0.0:808" not in listening and "*:808" not in listening


@pytest.mark.parametrize("unit", ["llama-server-chat", "llama-server-mini"])
def test_the_server_runs_as_its_own_unprivileged_user(host, unit):
    user = host.check_output(f"ps -o user= -p {main_pid(host, unit)}")
    assert user == "llama-server"
    account = host.user("llama-server")
    assert account.uid < 1000 and account.shell == "/usr/sbin/nologin"
    assert host.check_output(f"ps -o args= -p {main_pid(host, unit)}").startswith("/opt/llama.cpp/b0c1e570-")


def test_the_key_is_in_a_file_only_the_service_user_reads(host):
    key_file = host.file("/etc/llama-server/chat.key")
    assert key_file.user == "llama-server" and key_file.mode == 0o400
    assert key_file.content_string.strip() == KEY
    assert not host.file("/etc/llama-server/mini.key").exists
    assert host.file("/etc/llama-server").mode == 0o750
    unit = host.file("/etc/systemd/system/llama-server-chat.service").content_string
    assert KEY not in unit and "--api-key-file /etc/llama-server/chat.key" in unit
    assert KEY not in host.check_output(f"ps -o args= -p {main_pid(host, 'llama-server-chat')}")
    assert KEY not in host.check_output("journalctl --no-pager -u 'llama-server-*'")


def test_the_unit_carries_the_v100_defaults_and_the_sandbox(host):
    shown = host.check_output(
        "systemctl show llama-server-chat -p Restart -p TimeoutStartUSec -p NoNewPrivileges -p ProtectSystem "
        "-p ProtectHome -p PrivateTmp -p DevicePolicy -p DeviceAllow -p CapabilityBoundingSet -p User -p DropInPaths")
    # The one sandbox of GPU services, shared with vLLM (role server_systemd).
    assert "DropInPaths=/etc/systemd/system/llama-server-chat.service.d/gpu-sandbox.conf" in shown
    assert "Restart=on-failure" in shown
    assert "TimeoutStartUSec=15min 30s" in shown
    assert "NoNewPrivileges=yes" in shown and "ProtectSystem=strict" in shown
    assert "ProtectHome=yes" in shown and "PrivateTmp=yes" in shown
    assert "DevicePolicy=closed" in shown
    # /proc/devices names: nvidia-frontend before driver 545, nvidia + nvidiactl from 545 on.
    for name in ("nvidia-frontend", "nvidia", "nvidiactl", "nvidia-uvm"):
        assert f"DeviceAllow=char-{name} rw" in shown, name
    assert "User=llama-server" in shown
    args = host.check_output(f"ps -o args= -p {main_pid(host, 'llama-server-chat')}")
    for flag in ("--flash-attn on", "--metrics", "--ctx-size 2048", "--parallel 2", "--host 127.0.0.1"):
        assert flag in args


def test_systemd_rates_the_sandbox_ok(host):
    # systemd-analyze security: 0 is fully locked down, 10 is unprotected; below 4.5 is "OK".
    rated = host.check_output("systemd-analyze security --no-pager llama-server-chat.service | tail -1")
    exposure = float(rated.split("exposure level for llama-server-chat.service:")[1].split()[0])
    assert exposure < 4.5, rated


def test_systemd_accepts_every_unit(host):
    units = " ".join(f"/etc/systemd/system/llama-server-{name}{suffix}"
                     for name in ("chat", "mini")
                     for suffix in (".service", "-health.service", "-health.timer", "-restart.service",
                                    "-restart.timer"))
    verified = host.run(f"systemd-analyze verify {units}")
    assert verified.rc == 0, verified.stderr


def test_the_restart_timers_are_staggered_on_the_schedule(host):
    chat = host.check_output("systemctl show llama-server-chat-restart.timer -p TimersCalendar --value")
    mini = host.check_output("systemctl show llama-server-mini-restart.timer -p TimersCalendar --value")
    assert "OnCalendar=*-*-* 03:30:00" in chat
    assert "OnCalendar=*-*-* 03:50:00" in mini
    for timer in ("llama-server-chat-restart.timer", "llama-server-mini-restart.timer",
                  "llama-server-chat-health.timer", "llama-server-mini-health.timer"):
        assert host.service(timer).is_enabled and host.service(timer).is_running, timer


def test_kill_9_brings_the_server_back_by_itself(host):
    before = main_pid(host, "llama-server-chat")
    host.run(f"kill -9 {before}")
    assert wait_for(lambda: main_pid(host, "llama-server-chat") not in (0, before)
                    and host.service("llama-server-chat").is_running, 90)
    assert wait_for(lambda: healthy(host, CHAT), 60)
    assert http(host, "POST", f"{CHAT}/v1/chat/completions", KEY, {
        "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})[0] == 200


def test_the_scheduled_restart_restarts_and_waits_for_health(host):
    before = main_pid(host, "llama-server-mini")
    started = host.run("systemctl start llama-server-mini-restart.service")
    assert started.rc == 0, started.stderr
    # The oneshot returns only once the restarted server is active, i.e. healthy.
    assert main_pid(host, "llama-server-mini") not in (0, before)
    assert healthy(host, MINI)


def test_the_health_timer_restarts_a_server_that_stopped_answering(host):
    before = main_pid(host, "llama-server-mini")
    host.run("rm -f /run/v100-llm-health/llama-server-mini.service.failures")
    host.run(f"kill -STOP {before}")  # alive for systemd, silent on /health
    first = host.run("systemctl start llama-server-mini-health.service")
    assert first.rc != 0  # a failed probe fails the oneshot
    assert main_pid(host, "llama-server-mini") == before
    assert journal_says(host, "llama-server-mini-health.service", "1 of 2 before a restart")
    host.run("systemctl start llama-server-mini-health.service")
    assert wait_for(lambda: main_pid(host, "llama-server-mini") not in (0, before)
                    and host.service("llama-server-mini").is_running, 90)
    assert wait_for(lambda: healthy(host, MINI), 60)


def test_the_health_probe_also_asks_for_a_token_with_the_key(host):
    """Every 5th probe (and every one after a failure) is a 1-token completion: /health answers 200 while a
    stuck generation does not. chat has a key: systemd hands it to the probe as a credential."""
    command = host.check_output("systemctl show -p ExecStart --value llama-server-chat-health.service")
    assert "--deep-url http://127.0.0.1:8081/v1/completions" in command and "--key-credential api-key" in command
    host.run("rm -f /run/v100-llm-health/llama-server-chat.service.probes")
    started = host.run("systemctl start llama-server-chat-health.service")
    assert started.rc == 0, host.run("journalctl --no-pager -u llama-server-chat-health.service -n 5").stdout
    assert journal_says(host, "llama-server-chat-health.service", "deep probe, 1-token completion: HTTP 200")


def test_a_model_that_cannot_load_ends_failed_after_the_back_off_and_is_reported(host):
    """Failed starts 10 s apart (RestartSec) until StartLimitBurst=5 is reached, then failed, and OnFailure=
    reports it. mini's model is the split set: its part 2 made unreadable is a model that cannot load. Each start
    ends when llama-server exits (the ExecStartPost wait watches $MAINPID), not at the 900 s start timeout.
    systemd 252 counts the last, refused, restart too: NRestarts=5."""
    part_2 = "/srv/models/smollm2-split-00002-of-00002.gguf"
    host.run("systemctl reset-failed llama-server-mini && rm -f /var/lib/v100-llm/failed/llama-server-mini.service.json")
    try:
        host.run(f"chmod 000 {part_2}")
        host.run("systemctl restart --no-block llama-server-mini")
        assert wait_for(lambda: host.check_output(
            "systemctl show -p ActiveState --value llama-server-mini") == "failed", 240)
        assert host.check_output("systemctl show -p NRestarts --value llama-server-mini") == "5"
        assert journal_says(host, "v100-llm-failed@llama-server-mini.service.service",
                            "llama-server-mini.service ended failed: its start limit was reached (NRestarts=5")
        report = json.loads(host.file("/var/lib/v100-llm/failed/llama-server-mini.service.json").content_string)
        assert report["unit"] == "llama-server-mini.service" and report["NRestarts"] == "5"
    finally:
        host.run(f"chmod 644 {part_2}")
        host.run("systemctl reset-failed llama-server-mini && systemctl start llama-server-mini")
    assert wait_for(lambda: healthy(host, MINI), 120)
