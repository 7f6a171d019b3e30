"""roles/front_door's decisions (plugins/module_utils/front_door/plan.py, plugins/filter/front_door.py)."""
from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from ansible_collections.v100.llm.plugins.filter.front_door import backend_keys
from ansible_collections.v100.llm.plugins.module_utils.front_door import plan

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
USERS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789xx"}
SETTINGS = {"users": USERS, "listen_address": "127.0.0.1", "port": 8443, "metrics_port": 8405,
            "allowed_networks": [], "health_interval": "30s", "request_max_kib": 512, "tls_certificate": False,
            "tls_private_key": False}
ENDPOINTS = [
    {"name": "replica-a", "model": "smollm2", "address": "127.0.0.1", "port": 8081, "key_file": "/etc/k/a.key",
     "key_variable": "", "prompt_tokens_max": 768},
    {"name": "replica-b", "model": "smollm2", "address": "127.0.0.1", "port": 8082, "key_file": "/etc/k/b.key",
     "key_variable": "", "prompt_tokens_max": 1024},
    {"name": "vllm", "model": "qwen2.5-32b-gptq", "address": "127.0.0.1", "port": 8000,
     "key_file": "/etc/vllm/env", "key_variable": "VLLM_API_KEY", "prompt_tokens_max": 0},
]
KEYS = {"replica-a": "backend-key", "replica-b": "backend-key", "vllm": "vllm-key"}


def refused(**changes):
    return " ".join(plan.refusals(dict(SETTINGS, **changes), (2, 6), ENDPOINTS, KEYS))


def test_the_map_holds_the_sha256_haproxy_computes_from_the_bearer_header():
    # req.hdr(authorization),bytes(7),sha2(256),hex,lower: the header less "Bearer ".
    header = "Bearer alice-key-0123456789"
    assert plan.key_hash("alice-key-0123456789") == hashlib.sha256(header[7:].encode()).hexdigest()
    users_map = plan.config(ENDPOINTS, KEYS, USERS)["users_map"]
    assert "alice-key" not in users_map
    assert users_map.splitlines()[0] == "%s alice" % plan.key_hash(USERS["alice"])


def test_haproxy_s_version_is_read_from_apt_s_policy():
    recorded = (RECORDED / "apt-cache-policy-haproxy-debian12.txt").read_text()
    assert plan.haproxy_version(recorded) == (2, 6)
    # Ubuntu 22.04's jammy-updates (packages.ubuntu.com/jammy-updates/haproxy): 2.4.30-0ubuntu0.22.04.2.
    jammy = recorded.replace("2.6.12-1+deb12u4", "2.4.30-0ubuntu0.22.04.2")
    assert plan.haproxy_version(jammy) == (2, 4)
    assert plan.haproxy_version("haproxy:\n  Installed: 3.0.11-1\n  Candidate: 3.0.11-1\n") == (3, 0)
    assert plan.haproxy_version("N: Unable to locate package haproxy\n") == ()


def test_the_settings_as_given_are_accepted():
    assert plan.refusals(SETTINGS, (2, 6), ENDPOINTS, KEYS) == []
    assert plan.refusals(SETTINGS, (2, 6)) == []


def test_haproxy_before_2_4_is_refused_naming_why_and_where_to_go():
    assert plan.refusals(SETTINGS, (2, 4)) == []
    why = " ".join(plan.refusals(SETTINGS, (2, 0)))
    assert "HAProxy is 2.0, which cannot read a request's model (json_query came with 2.4" in why
    assert "Debian 12/13 or Ubuntu 22.04/24.04" in why
    assert "no haproxy package" in " ".join(plan.refusals(SETTINGS, (), ENDPOINTS, KEYS))
    # At preflight the lists may be unread yet.
    assert plan.refusals(SETTINGS, ()) == []


@pytest.mark.parametrize("changes, expected", [
    ({"users": {}}, "front_door_users is empty"),
    ({"users": {"al ice": "alice-key-0123456789"}}, "front_door_users has the user 'al ice'"),
    ({"users": {"alice": "short"}}, "front_door_users[alice]: a key is 16-512 printable characters"),
    ({"users": {"alice": "has a blank 0123456789"}}, "without blanks"),
    ({"users": {"alice": "same-key-0123456789", "bob": "same-key-0123456789"}}, "two users the same key"),
    ({"listen_address": "0.0.0.0"}, "front_door_listen_address=0.0.0.0 is beyond this host: set "
                                     "front_door_allowed_networks"),
    ({"allowed_networks": ["lan"]}, "front_door_allowed_networks=['lan'] must be addresses or CIDR networks"),
    ({"port": 8405}, "front_door_port and front_door_metrics_port are both 8405"),
    ({"port": 70000}, "front_door_port=70000 is not a TCP port"),
    ({"health_interval": "30 seconds"}, "front_door_health_interval=30 seconds is not an HAProxy time"),
    ({"request_max_kib": 4}, "front_door_request_max_kib=4 must be 16-16384"),
    ({"tls_certificate": True}, "front_door_tls_certificate and front_door_tls_private_key go together"),
])
def test_each_bad_setting_is_refused_naming_it(changes, expected):
    assert expected in refused(**changes)


def test_a_key_is_never_in_a_refusal():
    why = refused(users={"alice": "x" * 8, "bob": "has a blank 0123456789"})
    assert "x" * 8 not in why and "has a blank" not in why


def test_an_allow_list_opens_the_lan_address():
    assert refused(listen_address="192.168.1.20", allowed_networks=["192.168.1.0/24"]) == ""


def test_servers_are_refused_when_the_front_door_cannot_serve_them():
    assert "no server behind it" in " ".join(plan.refusals(SETTINGS, (2, 6), [], {}))
    keys = dict(KEYS, **{"replica-b": "other-key"})
    assert "instances serving smollm2 (replica-a, replica-b) have different API keys" in " ".join(
        plan.refusals(SETTINGS, (2, 6), ENDPOINTS, keys))
    quoted = dict(KEYS, vllm="it's")
    assert "API key of qwen2.5-32b-gptq has a blank, a quote" in " ".join(
        plan.refusals(SETTINGS, (2, 6), ENDPOINTS, quoted))
    spaced = [dict(ENDPOINTS[0], model="my model")]
    assert "served model name 'my model' cannot be routed" in " ".join(
        plan.refusals(SETTINGS, (2, 6), spaced, KEYS))


def test_replicas_of_a_name_are_one_backend_and_each_name_is_routed_to_its_own():
    config = plan.config(ENDPOINTS, KEYS, USERS)
    backends = {item["model"]: item for item in config["backends"]}
    assert [server["name"] for server in backends["smollm2"]["servers"]] == ["replica-a", "replica-b"]
    assert backends["smollm2"]["key"] == "backend-key"
    assert backends["qwen2.5-32b-gptq"]["name"] == "model_qwen2.5-32b-gptq"
    assert config["models_map"] == "qwen2.5-32b-gptq model_qwen2.5-32b-gptq\nsmollm2 model_smollm2\n"
    assert '"max_tokens":1' in backends["smollm2"]["health_body"]
    assert "'" not in backends["smollm2"]["health_body"]


def test_models_lists_every_served_name_as_openai_does():
    import json
    answer = json.loads(plan.config(ENDPOINTS, KEYS, USERS)["models_json"])
    assert answer["object"] == "list"
    assert [item["id"] for item in answer["data"]] == ["qwen2.5-32b-gptq", "smollm2"]
    assert {item["object"] for item in answer["data"]} == {"model"}


def test_verify_checks_each_model_through_the_front_door_with_a_user_s_name_not_a_key():
    checked = plan.checked_endpoints(ENDPOINTS, "https://127.0.0.1:8443", "127.0.0.1", 8443,
                                     "/etc/v100-llm/front-door/ca.crt", True, "alice")
    assert [item["model"] for item in checked] == ["qwen2.5-32b-gptq", "smollm2"]
    smollm2 = checked[1]
    assert smollm2["kind"] == "front-door" and smollm2["key_user"] == "alice" and "api_key" not in smollm2
    assert smollm2["backend"] == "model_smollm2" and smollm2["tls_hostname_checked"] is True
    # The shorter of the replicas' planned prompts.
    assert smollm2["prompt_tokens_max"] == 768


def test_backend_keys_are_read_as_their_servers_read_them():
    def slurped(path, text):
        return {"source": path, "content": base64.b64encode(text.encode()).decode()}
    keys = backend_keys(ENDPOINTS, [slurped("/etc/k/a.key", "backend-key\n"), slurped("/etc/k/b.key", "backend-key\n"),
                                    slurped("/etc/vllm/env", '# managed\nVLLM_API_KEY="vllm\\"key"\n')])
    assert keys == {"replica-a": "backend-key", "replica-b": "backend-key", "vllm": 'vllm"key'}
    assert backend_keys([dict(ENDPOINTS[0], key_file="")], []) == {"replica-a": ""}
