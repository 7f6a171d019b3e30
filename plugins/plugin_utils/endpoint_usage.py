"""How a user on the controller uses an endpoint the run set up: the lines verify.yml ends with.

Each command works as printed from the clone on the controller: over SSH
after the port forward it prints first, in the demo's container through
`docker exec`, and on this machine for the local connection. The key is
read where it lives (root only, on the host), never printed.
"""
from __future__ import annotations

import json
import os
import shlex
from typing import List, Mapping

PROMPT = "Hello from a V100 host"


def _ssh_target(options: Mapping[str, object]) -> List[str]:
    target = ["ssh"]
    if options.get("port"):
        target += ["-p", str(options["port"])]
    if options.get("private_key_file"):
        target += ["-i", os.path.expanduser(str(options["private_key_file"]))]
    for key in ("ssh_common_args", "ssh_extra_args"):
        target += shlex.split(str(options.get(key) or ""))
    user = "%s@" % options["remote_user"] if options.get("remote_user") else ""
    return target + [user + str(options["host"])]


def key_filter(key_variable: str) -> str:
    """The filter that prints the key from its file's content: the first line, or VARIABLE="..." of an
    environment file (the roles write no quote or backslash into a key unescaped; such a key prints escaped)."""
    if key_variable:
        return "sed -n %s" % shlex.quote('s/^%s="\\(.*\\)"$/\\1/p' % key_variable)
    return "head -n 1"


def _front_door_lines(endpoint: Mapping[str, object]) -> List[str]:
    """A client of the front door: its URL, a key of its own and the file that certifies the server."""
    python = ('import os, openai; print(openai.OpenAI(base_url=%s, api_key=os.environ["KEY"], http_client='
              'openai.DefaultHttpxClient(verify="front-door-ca.crt")).chat.completions.create(model=%s, messages='
              '[{"role": "user", "content": %s}]).choices[0].message.content)' % (
                  json.dumps("%s/v1" % endpoint["url"]), json.dumps(str(endpoint["model"])), json.dumps(PROMPT)))
    return [
        "  each user's key is theirs (front_door_users); clients trust %s (copy it to them as "
        "front-door-ca.crt; Node-based IDE plugins read it from NODE_EXTRA_CA_CERTS)" % endpoint["ca_file"],
        "  Python: KEY=<your key> python3 -c %s" % shlex.quote(python),
    ]


def usage_lines(connection: str, options: Mapping[str, object], endpoint: Mapping[str, object]) -> List[str]:
    """The lines that tell how to reach, call and configure one endpoint."""
    name = connection.rsplit(".", 1)[-1]
    if endpoint.get("kind") == "front-door":
        return _front_door_lines(endpoint)
    port, model, key_file = endpoint["port"], str(endpoint["model"]), str(endpoint.get("key_file") or "")
    variable = str(endpoint.get("key_variable") or "")
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROMPT}]})
    if name in ("docker", "docker_api"):
        container = str(options["remote_addr"])
        # The body goes in as sh's $0: no quoting inside quoting.
        key = ' -H "Authorization: Bearer $(%s < %s)"' % (key_filter(variable), key_file) if key_file else ""
        curl = 'curl -s %s/v1/chat/completions%s -H "Content-Type: application/json" -d "$0"' % (endpoint["url"], key)
        if not key_file:
            reader = '""'
        elif variable:
            reader = ('[line.split("=", 1)[1].strip().strip(chr(34)) for line in open(%s) if line.startswith(%s)][0]'
                      % (json.dumps(key_file), json.dumps(variable + "=")))
        else:
            reader = "open(%s).readline().strip()" % json.dumps(key_file)
        # Double quotes only in the Python: shlex.quote then needs no escapes.
        stdlib = ('import json, sys, urllib.request; key = %s; request = urllib.request.Request(%s, sys.argv[1]'
                  '.encode(), {"Content-Type": "application/json", "Authorization": "Bearer " + key}); '
                  'print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])' % (
                      reader, json.dumps(endpoint["url"] + "/v1/chat/completions")))
        return [
            "  the port is the container's own (%s); from this machine, through docker exec:" % endpoint["url"],
            "  curl:   docker exec %s sh -c %s %s" % (container, shlex.quote(curl), shlex.quote(body)),
            "  Python: docker exec %s python3 -c %s %s" % (container, shlex.quote(stdlib), shlex.quote(body)),
        ]
    base = "%s/v1" % endpoint["url"] if name == "local" else "http://127.0.0.1:%s/v1" % port
    python = ('import os, openai; print(openai.OpenAI(base_url=%s, api_key=os.environ'
              '.get("KEY", "none")).chat.completions.create(model=%s, messages=[{"role": "user", "content": %s}])'
              '.choices[0].message.content)' % (json.dumps(base), json.dumps(model), json.dumps(PROMPT)))
    lines = []
    if name == "local":
        key_cmd = "sudo cat %s | %s" % (key_file, key_filter(variable))
    else:
        ssh = " ".join(shlex.quote(word) for word in _ssh_target(options))
        address = "[%s]" % endpoint["address"] if ":" in str(endpoint["address"]) else endpoint["address"]
        lines.append("  first, in another terminal: %s -N -L %s" % (ssh, shlex.quote("%s:%s:%s" % (port, address, port))))
        # sudo -n: no TTY to ask a password on; without passwordless sudo, read the file on the host (ssh -t).
        key_cmd = "%s sudo -n cat %s | %s" % (ssh, key_file, key_filter(variable))
    if key_file:
        lines.append("  the key:    export KEY=$(%s)" % key_cmd)
    header = ' -H "Authorization: Bearer $KEY"' if key_file else ""
    secret = "<the key>" if key_file else "none"
    return lines + [
        "  curl:   curl -s %s/chat/completions%s -H 'Content-Type: application/json' -d %s" % (
            base, header, shlex.quote(body)),
        "  Python: .venv/bin/python -c %s" % shlex.quote(python),
        "  Continue (~/.continue/config.yaml, under models:): - {name: %s, provider: openai, model: %s, apiBase: "
        "'%s', apiKey: %s}" % (model, model, base, secret),
        "  Open WebUI: OPENAI_API_BASE_URL=%s OPENAI_API_KEY=%s (read at its first start; in a container, "
        "127.0.0.1 is the container: use host.docker.internal or --network host)" % (base, secret),
    ]
