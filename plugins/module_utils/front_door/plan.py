"""The front door (roles/front_door): what HAProxy is told, decided from the served endpoints and the users.

One backend per served model name, with every instance serving that name as a server of it (least connections,
a health check that asks for a one-token completion). The request's JSON `model` picks the backend; a user's key
is looked up by its SHA-256 in a map, so the host keeps no user's key; the backend's key replaces the user's on
the way in.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.v100.llm.plugins.module_utils.llama.server_plan import is_loopback

# json_query, which reads the request's model, and wait-for-body came with HAProxy 2.4 (doc/configuration.txt at
# v2.4.0; json_query: commit 51c8ad45c, first in v2.4-dev17). Ubuntu 22.04 ships 2.4.30 (jammy-updates), Debian 12
# 2.6.12, Ubuntu 24.04 2.8.16, Debian 13 3.0.11. The configuration is checked on 2.6 here.
HAPROXY_JSON_QUERY = (2, 4)
USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
# A served name the models map can hold (blanks separate its columns).
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,127}$")
# A key the users' map can hold: no blank (the map's separator) and no control character.
KEY = re.compile(r"^[\x21-\x7e]{16,512}$")
# A backend key the configuration holds in single quotes ("" for a server without one).
BACKEND_KEY = re.compile(r"^[\x21-\x26\x28-\x7e]*$")
NETWORK = re.compile(r"^[0-9a-fA-F:.]+(/[0-9]{1,3})?$")
# An HAProxy time (doc/configuration.txt, 2.3 "Time format").
HAPROXY_TIME = re.compile(r"^[0-9]+(us|ms|s|m|h|d)?$")
# HAProxy proxy names: letters, digits, '-', '_', '.', ':'.
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


def key_hash(key: str) -> str:
    """The map's key for a user's API key: what `req.hdr(authorization),bytes(7),sha2(256),hex,lower` yields."""
    return hashlib.sha256(key.encode()).hexdigest()


def haproxy_version(policy: str) -> Sequence[int]:
    """(major, minor) of HAProxy apt would install or has installed, from `apt-cache policy haproxy`; () when the
    archive has none."""
    match = (re.search(r"^\s*Installed:\s*(?:\d+:)?(\d+)\.(\d+)", policy, re.M)
             or re.search(r"^\s*Candidate:\s*(?:\d+:)?(\d+)\.(\d+)", policy, re.M))
    return (int(match.group(1)), int(match.group(2))) if match else ()


def refusals(settings: Mapping[str, Any], version: Sequence[int],
             endpoints: Optional[Sequence[Mapping[str, Any]]] = None,
             keys: Optional[Mapping[str, str]] = None) -> List[str]:
    """Why the front door cannot be set up as asked ([] when it can). settings: the role's variables without their
    front_door_ prefix. endpoints and keys (each endpoint's backend key by its name) are None at preflight, before
    the servers are planned."""
    why = _user_refusals(settings["users"])
    networks = list(settings["allowed_networks"])
    if [item for item in networks if not NETWORK.match(str(item))]:
        why.append("front_door_allowed_networks=%s must be addresses or CIDR networks (192.168.1.10/32, "
                   "10.0.0.0/24)." % networks)
    if not is_loopback(settings["listen_address"]) and not networks:
        why.append("front_door_listen_address=%s is beyond this host: set front_door_allowed_networks (your "
                   "colleagues' networks, e.g. [192.168.1.0/24]), or keep 127.0.0.1." % settings["listen_address"])
    for name in ("port", "metrics_port"):
        if not 1 <= int(settings[name]) <= 65535:
            why.append("front_door_%s=%s is not a TCP port (1-65535)." % (name, settings[name]))
    if int(settings["port"]) == int(settings["metrics_port"]):
        why.append("front_door_port and front_door_metrics_port are both %s: give each its own." % settings["port"])
    if not HAPROXY_TIME.match(str(settings["health_interval"])):
        why.append("front_door_health_interval=%s is not an HAProxy time: set e.g. 30s." % settings["health_interval"])
    if not 16 <= int(settings["request_max_kib"]) <= 16384:
        why.append("front_door_request_max_kib=%s must be 16-16384 (KiB)." % settings["request_max_kib"])
    if bool(settings["tls_certificate"]) != bool(settings["tls_private_key"]):
        why.append("front_door_tls_certificate and front_door_tls_private_key go together: set both, or neither for "
                   "a local certificate authority.")
    # At preflight, lists that name no haproxy may only be unread: the role reads them first.
    if not version and endpoints is not None:
        why.append("apt knows no haproxy package on this host: run apt-get update, or enable the distribution's "
                   "main archive.")
    elif version and tuple(version) < HAPROXY_JSON_QUERY:
        why.append("this host's HAProxy is %d.%d, which cannot read a request's model (json_query came with 2.4): "
                   "put the front door on a Debian 12/13 or Ubuntu 22.04/24.04 host, or install HAProxy 2.4 or later "
                   "from a mirror first." % tuple(version))
    if endpoints is not None:
        why += _endpoint_refusals(endpoints, keys or {})
    return why


def _user_refusals(users: Any) -> List[str]:
    if not isinstance(users, Mapping) or not users:
        return ["front_door_users is empty: map each user to a key of their own, from a vault (front_door_users: "
                "alice: <her key>); a front door nobody may use serves nothing."]
    why = []
    for user, key in users.items():
        if not USER_NAME.match(str(user)):
            why.append("front_door_users has the user %r: a name is 1-64 letters, digits, '_', '.', '@' or '-'."
                       % (user,))
        if not isinstance(key, str) or not KEY.match(key):
            why.append("front_door_users[%s]: a key is 16-512 printable characters without blanks "
                       "(openssl rand -hex 24 makes one)." % user)
    keys_seen = [key for key in users.values() if isinstance(key, str)]
    if len(set(keys_seen)) != len(keys_seen):
        why.append("front_door_users gives two users the same key: then revoking one revokes both.")
    return why


def _endpoint_refusals(endpoints: Sequence[Mapping[str, Any]], keys: Mapping[str, str]) -> List[str]:
    if not endpoints:
        return ["the front door has no server behind it on this host (llama_server_instances is empty and vLLM "
                "serves nothing): set front_door_enabled: false, or serve a model here."]
    why = []
    for name, group in _by_model(endpoints).items():
        if not MODEL_NAME.match(name):
            why.append("the served model name %r cannot be routed by the front door: serve it under a name of "
                       "letters, digits, '_', '.', ':', '/', '@' or '-'." % name)
        if [item["name"] for item in group if not BACKEND_KEY.match(keys.get(item["name"], ""))]:
            why.append("the API key of %s has a blank, a quote (') or a control character, which HAProxy's "
                       "configuration cannot carry: give it a key of other printable characters." % name)
        if len({keys.get(item["name"], "") for item in group}) > 1:
            why.append("the instances serving %s (%s) have different API keys: the front door sends one key to a "
                       "model's replicas; give them one (llama_server_api_key)." % (
                           name, ", ".join(item["name"] for item in group)))
    return why


def _by_model(endpoints: Sequence[Mapping[str, Any]]) -> Dict[str, List[Mapping[str, Any]]]:
    models: Dict[str, List[Mapping[str, Any]]] = {}
    for item in endpoints:
        models.setdefault(item["model"], []).append(item)
    return models


def backend_name(model: str) -> str:
    return "model_" + _UNSAFE_NAME.sub("_", model)


def config(endpoints: Sequence[Mapping[str, Any]], keys: Mapping[str, str], users: Mapping[str, str]) -> Dict[str, Any]:
    """What the HAProxy template and the map files hold: backends (each with its servers, key and health-check
    body), the models map, the users map and the /v1/models answer."""
    backends = []
    for model, group in sorted(_by_model(endpoints).items()):
        backends.append({
            "name": backend_name(model),
            "model": model,
            "key": keys.get(group[0]["name"], ""),
            # A completion of one token: the server loaded its model and answers, not only its port.
            "health_body": json.dumps({"model": model, "max_tokens": 1,
                                       "messages": [{"role": "user", "content": "Hi"}]}, separators=(",", ":")),
            "servers": [{"name": _UNSAFE_NAME.sub("_", item["name"]), "address": item["address"],
                         "port": int(item["port"])} for item in group],
        })
    return {
        "backends": backends,
        "models_map": "".join("%s %s\n" % (item["model"], item["name"]) for item in backends),
        "users_map": "".join("%s %s\n" % (key_hash(key), user) for user, key in sorted(users.items())),
        "models_json": json.dumps({"object": "list", "data": [
            {"id": item["model"], "object": "model", "created": 0, "owned_by": "v100-llm"} for item in backends]},
            indent=1) + "\n",
    }


def checked_endpoints(endpoints: Sequence[Mapping[str, Any]], url: str, address: str, port: int,
                      ca_file: str, local_ca: bool, user: str) -> List[Dict[str, Any]]:
    """What verify.yml checks through the front door: per served model, as the user `user` reaches it. ca_file
    is the local authority's certificate (which names 127.0.0.1), or else the owner's certificate itself."""
    return [{"name": "front door: %s" % model, "kind": "front-door", "url": url, "address": address, "port": port,
             "model": model, "key_user": user, "ca_file": ca_file, "tls_hostname_checked": local_ca,
             "backend": backend_name(model),
             "prompt_tokens_max": min(int(item.get("prompt_tokens_max") or 0) for item in group)}
            for model, group in sorted(_by_model(endpoints).items())]
