"""How a user on the controller uses an endpoint the run set up: the lines verify.yml ends with.

Each command works as printed from the clone on the controller: over SSH
after the port forward it prints first, in the demo's container through
`docker exec`, and on this machine for the local connection. The key is
read where it lives (root only, on the host), never printed.
"""
from __future__ import annotations

import json
import shlex
from typing import List, Mapping

PROMPT = "Hello from a V100 host"


def _ssh_target(options: Mapping[str, object]) -> List[str]:
    target = ["ssh"]
    if options.get("port"):
        target += ["-p", str(options["port"])]
    target += shlex.split(str(options.get("ssh_common_args") or ""))
    user = "%s@" % options["remote_user"] if options.get("remote_user") else ""
    return target + [user + str(options["host"])]


def usage_lines(connection: str, options: Mapping[str, object], endpoint: Mapping[str, object]) -> List[str]:
    """The lines that tell how to reach, call and configure one endpoint."""
    name = connection.rsplit(".", 1)[-1]
    port, model, key_file = endpoint["port"], str(endpoint["model"]), str(endpoint.get("key_file") or "")
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROMPT}]})
    if name in ("docker", "docker_api"):
        container = str(options["remote_addr"])
        # The body goes in as sh's $0: no quoting inside quoting.
        key = ' -H "Authorization: Bearer $(cat %s)"' % key_file if key_file else ""
        curl = 'curl -s %s/v1/chat/completions%s -H "Content-Type: application/json" -d "$0"' % (endpoint["url"], key)
        # Double quotes only in the Python: shlex.quote then needs no escapes.
        stdlib = ('import json, sys, urllib.request; key = %s; request = urllib.request.Request(%s, sys.argv[1]'
                  '.encode(), {"Content-Type": "application/json", "Authorization": "Bearer " + key}); '
                  'print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])' % (
                      "open(%s).readline().strip()" % json.dumps(key_file) if key_file else '""',
                      json.dumps(endpoint["url"] + "/v1/chat/completions")))
        return [
            "  the port is the container's own (%s); from this machine, through docker exec:" % endpoint["url"],
            "  curl:   docker exec %s sh -c %s %s" % (container, shlex.quote(curl), shlex.quote(body)),
            "  Python: docker exec %s python3 -c %s %s" % (container, shlex.quote(stdlib), shlex.quote(body)),
        ]
    python = ('import os, openai; print(openai.OpenAI(base_url="http://127.0.0.1:%s/v1", api_key=os.environ'
              '.get("KEY", "none")).chat.completions.create(model=%s, messages=[{"role": "user", "content": %s}])'
              '.choices[0].message.content)' % (port, json.dumps(model), json.dumps(PROMPT)))
    lines = []
    if name == "local":
        key_cmd = "sudo cat %s" % key_file
    else:
        ssh = " ".join(shlex.quote(word) for word in _ssh_target(options))
        address = "[%s]" % endpoint["address"] if ":" in str(endpoint["address"]) else endpoint["address"]
        lines.append("  first, in another terminal: %s -N -L %s:%s:%s" % (ssh, port, address, port))
        key_cmd = "%s sudo cat %s" % (ssh, key_file)
    if key_file:
        lines.append("  the key:    export KEY=$(%s)" % key_cmd)
    header = ' -H "Authorization: Bearer $KEY"' if key_file else ""
    secret = "<the key>" if key_file else "none"
    return lines + [
        "  curl:   curl -s http://127.0.0.1:%s/v1/chat/completions%s -H 'Content-Type: application/json' -d %s" % (
            port, header, shlex.quote(body)),
        "  Python: .venv/bin/python -c %s" % shlex.quote(python),
        "  Continue (~/.continue/config.yaml, under models:): {name: %s, provider: openai, model: %s, apiBase: "
        "'http://127.0.0.1:%s/v1', apiKey: %s}" % (model, model, port, secret),
        "  Open WebUI: OPENAI_API_BASE_URL=http://127.0.0.1:%s/v1 OPENAI_API_KEY=%s" % (port, secret),
    ]
