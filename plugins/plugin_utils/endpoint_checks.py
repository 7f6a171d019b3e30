"""What an IDE plugin or a chat front-end does first, done with the OpenAI Python client they use.

check_endpoint(base_url, endpoint) runs each check against one server (a
llama-server instance or vLLM) and returns one row per check: its name,
"ok", "failed" or "skipped", and what it saw. A check that fails does not
stop the others.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
# Any id below the smallest vocabulary served here: a prompt of N of them is N tokens, with no tokenizer needed.
FILLER_TOKEN = 1000
NO_ANSWER = "no answer"
# The tunnel's end is this machine's loopback: a proxy from the environment (HTTP_PROXY without a NO_PROXY for
# 127.0.0.1) would get the requests, the key with them.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def tls_context(endpoint: Mapping[str, Any]) -> Optional[ssl.SSLContext]:
    """What an HTTPS endpoint's certificate is checked against (the front door's): its authority's certificate, or
    an owner's certificate trusted as it is (partial chain); None for plain HTTP. Reached through the tunnel, the
    name checked is 127.0.0.1, which only the local authority's certificate holds."""
    if not endpoint.get("ca_pem"):
        return None
    context = ssl.create_default_context(cadata=endpoint["ca_pem"])
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.check_hostname = bool(endpoint.get("tls_hostname_checked", True))
    return context


def direct_client(openai: Any, base_url: str, api_key: str, timeout: float, asynchronous: bool = False,
                  tls: Optional[ssl.SSLContext] = None) -> Any:
    """The OpenAI client every check and the benchmark use: no retries (a failure is a finding), and, as DIRECT,
    no proxy from the environment."""
    verify: Any = tls or True
    if asynchronous:
        return openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout,
                                  http_client=openai.DefaultAsyncHttpxClient(trust_env=False, verify=verify))
    return openai.OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout,
                         http_client=openai.DefaultHttpxClient(trust_env=False, verify=verify))


def _opener(endpoint: Mapping[str, Any]) -> urllib.request.OpenerDirector:
    """DIRECT, or for HTTPS, its like that checks the certificate as the client does."""
    context = tls_context(endpoint)
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(
        context=context)) if context else DIRECT


def _health_script() -> Any:
    """The server_systemd role's service-health, the script the hosts' health probes run: it already reads a key
    out of the environment files the roles write (environment_value)."""
    path = Path(__file__).resolve().parents[2] / "roles" / "server_systemd" / "files" / "service-health"
    loader = importlib.machinery.SourceFileLoader("v100_llm_service_health", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def key_from_file(text: str, variable: str) -> str:
    """The API key in a key file: its first line, or VARIABLE="..." of a systemd environment file (read as the
    health probe reads it)."""
    if not variable:
        return (text.splitlines() or [""])[0].strip()
    return _health_script().environment_value(text, variable)


def row(check: str, state: str, detail: str) -> Dict[str, str]:
    return {"check": check, "state": state, "detail": detail}


def _models(client: Any, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    names = sorted(model.id for model in client.models.list().data)
    found = endpoint["model"] in names
    return row("models", "ok" if found else "failed",
               "/v1/models lists %s%s" % (", ".join(names) or "nothing",
                                          "" if found else "; %s is not among them" % endpoint["model"]))


def _chat(client: Any, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    answer = client.chat.completions.create(model=endpoint["model"], max_tokens=32, messages=[
        {"role": "user", "content": "Say hello in one short sentence."}])
    text = (answer.choices[0].message.content or "").strip()
    tokens = answer.usage.completion_tokens if answer.usage else 0
    return row("chat", "ok" if tokens > 0 else "failed",
               "%d tokens: %s" % (tokens, json.dumps(text[:80])) if tokens else "no tokens came back")


def _stream(client: Any, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    started = time.monotonic()
    first, chunks, usage = None, 0, None
    # ignore_eos (llama-server's and vLLM's extension): a model that would stop after a word still streams
    # 16 tokens, so one chunk means buffering, not a short answer.
    for chunk in client.chat.completions.create(model=endpoint["model"], max_tokens=16, stream=True,
                                                stream_options={"include_usage": True},
                                                extra_body={"ignore_eos": True},
                                                messages=[{"role": "user", "content": "Count from one to ten."}]):
        # A reasoning model streams its thinking first, as reasoning_content (llama-server, vLLM).
        if chunk.choices and (chunk.choices[0].delta.content
                              or (chunk.choices[0].delta.model_extra or {}).get("reasoning_content")):
            chunks += 1
            first = first if first is not None else time.monotonic() - started
        usage = chunk.usage or usage
    problems = (["%d content chunk(s): a proxy or the server buffers the stream" % chunks] if chunks < 2 else []) + \
        (["no usage counts in the stream"] if usage is None else [])
    detail = "%d chunks, the first after %.2f s%s" % (
        chunks, first or 0.0, ", usage %d prompt + %d completion tokens" % (usage.prompt_tokens, usage.completion_tokens)
        if usage else "")
    return row("stream", "failed" if problems else "ok", "; ".join([detail] + problems))


def _server_json(base_url: str, endpoint: Mapping[str, Any], path: str) -> Any:
    """One of llama-server's own JSON endpoints (beside /v1), with the key."""
    request = urllib.request.Request(base_url.rsplit("/v1", 1)[0] + path,
                                     headers={"Authorization": "Bearer %s" % endpoint.get("api_key", "")})
    with _opener(endpoint).open(request, timeout=60) as answer:
        return json.load(answer)


def _tool_support(base_url: str, endpoint: Mapping[str, Any]) -> str:
    """Why tools are not offered, "" when they are or the server does not say (llama-server's /props)."""
    if endpoint["kind"] == "front-door":
        return "checked on each server itself"
    if endpoint["kind"] != "llama-server":
        return ""
    caps = _server_json(base_url, endpoint, "/props").get("chat_template_caps", {})
    return "" if caps.get("supports_tools") else "the model's chat template has no tool support (llama-server /props)"


def _drafting(base_url: str, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    """An instance planned to speculate drafts in every slot (llama-server's /slots `speculative`): with a draft
    whose tokenizer does not match, llama-server logs an error at start and serves without drafting
    (tools/server/server-context.cpp:1239-1261 at 0c1e57098)."""
    planned = endpoint["engine"]["speculative"]
    slots = _server_json(base_url, endpoint, "/slots")
    idle = [slot["id"] for slot in slots if not slot.get("speculative")]
    if idle:
        return row("drafting", "failed", "planned to speculate (%s), but slots %s do not draft (/slots): llama-server "
                   "said why when it started (journalctl -u %s)" % (planned, ", ".join(map(str, idle)),
                                                                   endpoint["engine"]["unit"]))
    return row("drafting", "ok", "every slot drafts (%s)" % planned)


def _tools(client: Any, endpoint: Mapping[str, Any], base_url: str) -> Dict[str, str]:
    unsupported = _tool_support(base_url, endpoint)
    if unsupported:
        return row("tool call", "skipped", unsupported)
    messages: List[Dict[str, Any]] = [{"role": "user", "content": "What time is it in Paris? Use the tool."}]
    # vLLM 0.5.x knows named function calling only ("auto" and "required" came later: "required" with 0.8.3,
    # docs.vllm.ai, Tool Calling); llama-server takes "required".
    choice = {"type": "function", "function": {"name": "get_time"}} if endpoint["kind"] == "vllm" else "required"
    try:
        answer = client.chat.completions.create(model=endpoint["model"], max_tokens=128, messages=messages,
                                                tools=[TOOL], tool_choice=choice)
    except Exception as exc:  # pylint: disable=broad-except  # the client's BadRequestError, told by its status
        if endpoint["kind"] == "vllm" and getattr(exc, "status_code", None) == 400:
            return row("tool call", "skipped", "vLLM refused a named tool call: %s" % " ".join(str(exc).split())[:200])
        raise
    calls = answer.choices[0].message.tool_calls or []
    if not calls:
        return row("tool call", "failed", "asked to call get_time, the answer called no tool")
    messages += [answer.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": calls[0].id, "content": "12:00"}]
    final = client.chat.completions.create(model=endpoint["model"], max_tokens=32, messages=messages, tools=[TOOL])
    return row("tool call", "ok", "%s(%s), then %d tokens after its result" % (
        calls[0].function.name, calls[0].function.arguments,
        final.usage.completion_tokens if final.usage else 0))


def _longest_prompt(client: Any, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    length = int(endpoint["prompt_tokens_max"])
    if length <= 0:
        return row("longest prompt", "skipped", "no planned maximum (vLLM sizes an auto max_model_len itself)")
    started = time.monotonic()
    answer = client.completions.create(model=endpoint["model"], prompt=[FILLER_TOKEN] * length, max_tokens=4)
    seen = answer.usage.prompt_tokens if answer.usage else 0
    return row("longest prompt", "ok" if seen >= length else "failed",
               "%d tokens accepted in %.1f s" % (seen, time.monotonic() - started) if seen >= length
               else "%d tokens sent, the server counted %d" % (length, seen))


def _keys(openai: Any, base_url: str, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    if not endpoint.get("api_key"):
        return row("API key", "skipped", "no API key: anyone who reaches the port is served")
    served = []
    try:  # No Authorization header at all (the client always sends one).
        _opener(endpoint).open(base_url + "/models", timeout=60).close()
        served.append("without a key")
    except urllib.error.HTTPError as exc:
        if exc.code != 401:
            served.append("without a key (HTTP %d, not 401)" % exc.code)
    wrong = direct_client(openai, base_url, "not-the-key-" + str(len(endpoint["api_key"])), 60,
                          tls=tls_context(endpoint))
    try:
        wrong.models.list()
        served.append("with a wrong key")
    except openai.AuthenticationError:
        pass
    return row("API key", "failed" if served else "ok",
               "served %s" % " and ".join(served) if served else "401 without a key and with a wrong one")


def _route(client: Any, endpoint: Mapping[str, Any]) -> Dict[str, str]:
    """Through the front door: HAProxy sent the model to a server of its own backend (its X-V100-LLM-Backend)."""
    answer = client.chat.completions.with_raw_response.create(
        model=endpoint["model"], max_tokens=1, messages=[{"role": "user", "content": "Hi"}])
    served = answer.headers.get("x-v100-llm-backend", "")
    return row("route", "ok" if served.split("/")[0] == endpoint["backend"] else "failed",
               "%s went to %s" % (endpoint["model"], served or "a server that HAProxy did not name"))


def check_endpoint(openai: Any, base_url: str, endpoint: Mapping[str, Any], timeout: float) -> List[Dict[str, str]]:
    """Every check of one endpoint, with the openai package given (the controller's)."""
    client = direct_client(openai, base_url, endpoint.get("api_key", ""), timeout, tls=tls_context(endpoint))
    checks: List[Tuple[str, Callable[[], Dict[str, str]]]] = [
        ("models", lambda: _models(client, endpoint)), ("chat", lambda: _chat(client, endpoint)),
        ("stream", lambda: _stream(client, endpoint)), ("tool call", lambda: _tools(client, endpoint, base_url)),
        ("longest prompt", lambda: _longest_prompt(client, endpoint)),
        ("API key", lambda: _keys(openai, base_url, endpoint))]
    if endpoint["kind"] == "front-door":
        checks.append(("route", lambda: _route(client, endpoint)))
    if endpoint["kind"] == "llama-server" and endpoint.get("engine", {}).get("speculative", "off") != "off":
        checks.append(("drafting", lambda: _drafting(base_url, endpoint)))
    rows: List[Dict[str, str]] = []
    for name, check in checks:
        if rows and rows[0]["detail"].startswith(NO_ANSWER):
            rows.append(row(name, "skipped", "no connection"))
            continue
        try:
            rows.append(check())
        except openai.APIConnectionError:
            rows.append(row(name, "failed", "%s on the host's %s port %s: is the server running there?" % (
                NO_ANSWER, endpoint.get("address", "127.0.0.1"), endpoint.get("port"))))
        except (openai.APIError, urllib.error.URLError, OSError, ValueError) as exc:
            rows.append(row(name, "failed", "%s: %s" % (type(exc).__name__, " ".join(str(exc).split())[:300])))
    return rows
