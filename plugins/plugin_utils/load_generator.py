"""Load through a served endpoint, measured from the client's side with the OpenAI client's async API.

It runs offline and downloads nothing: no tokenizer is needed, as a prompt of N tokens is sent as N token ids
(the completions API of llama-server and vLLM takes them), drawn at random per request so that no two
requests share a prefix the server's prompt cache could reuse. Short chat prompts are text. Every request asks
for the same number of tokens and ignores end-of-sequence (llama-server's and vLLM's extension), so each
one generates exactly that many.

Four workloads (plan_requests):
- chat: short chat prompts, at each concurrency: tokens/s summed and per stream against concurrency;
- prompt: one stream, one prompt length after another: time to first token against prompt length;
- ide: prompts of the longer half of the lengths, up to the endpoint's planned maximum, at each concurrency;
- edit: a code edit at each concurrency: a real source file in the prompt (this folder's, one after another, as a
  team edits different files), and the start of the same file with one name changed, so the answer repeats the
  prompt, as a code edit does. Where the server drafts tokens (speculative decoding), its timings' draft_n and
  draft_n_accepted give the acceptance rate.

A failed request (context exceeded, another 4xx, a 5xx, a timeout, an error inside the stream, a short answer)
is counted by kind, and enters the percentiles as a miss (an infinite time, shown "failed"), tokens/s and
goodput as nothing delivered: failures never flatter the averages.
"""
from __future__ import annotations

import asyncio
import math
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.v100.llm.plugins.plugin_utils.endpoint_checks import direct_client

# Token ids inside every vocabulary served here (32k and more), past the special tokens at their start.
PROMPT_TOKEN_IDS = (1000, 9000)
CHAT_TOPICS = ("a sorting algorithm", "the tides", "a unit test", "compound interest", "a hash map",
               "photosynthesis", "a race condition", "the printing press")
# Fewer than the characters per token of code in the tokenizers served here (about 3.5-4): an edit prompt cut
# to a token count by this stays within it.
EDIT_CHARS_PER_TOKEN = 3
# The edit workload's files: this folder's Python sources with a function to rename.
EDIT_SOURCES = tuple(text for text in (path.read_text(encoding="utf-8")
                                       for path in sorted(Path(__file__).parent.glob("*.py")))
                     if re.search(r"^def \w+", text, re.M))


def edit_prompt(tokens: int, index: int) -> str:
    """A code edit of at most `tokens` tokens: the first lines (as many as fit) of source file `index` (in turn),
    then the task (rename its first function to <name>_<index>: each request its own) and the answer's first line,
    for the model to go on with, as an IDE plugin's edit request does."""
    text = EDIT_SOURCES[index % len(EDIT_SOURCES)]
    source = text.splitlines(keepends=True)
    name = re.search(r"^def (\w+)", text, re.M).group(1)
    task = "\n# The same file, with the function %s renamed to %s_%d and nothing else changed:\n%s" % (
        name, name, index, source[0])
    room = max(0, tokens * EDIT_CHARS_PER_TOKEN - len(task))
    lines, size = [], 0
    for line in source:
        if size + len(line) > room:
            break
        lines.append(line)
        size += len(line)
    return "".join(lines) + task


def plan_requests(endpoint: Mapping[str, Any], settings: Mapping[str, Any], seed: int = 0) -> List[Dict[str, Any]]:
    """The levels to run, in order: each with its workload, streams (concurrency) and requests.

    settings: workloads, concurrency, prompt_tokens (lengths), rounds (requests per stream and level); the edit
    workload's prompt is cut to the longest length that fits.
    Prompt lengths above the longest a request can carry are left out, and that longest itself measured instead:
    the endpoint's planned prompt maximum, and at most the context the server gives one request (llama-server's
    slot, vLLM's max_model_len: context_tokens, read from /v1/models) less the generated tokens. An endpoint
    with neither takes the lengths as given.
    """
    rng = random.Random(seed)
    longest = int(endpoint.get("prompt_tokens_max") or 0)
    context = int(endpoint.get("context_tokens") or 0)
    if context:
        room = context - int(settings["generated_tokens"])
        longest = min(longest, room) if longest else room
    asked = {int(n) for n in settings["prompt_tokens"]}
    lengths = sorted({n for n in asked if not longest or n <= longest}
                     | ({longest} if longest and max(asked) > longest else set()))
    rounds = int(settings["rounds"])
    levels: List[Dict[str, Any]] = []

    def tokens(length: int) -> List[int]:
        return [rng.randrange(*PROMPT_TOKEN_IDS) for _ in range(length)]

    for workload in settings["workloads"]:
        if workload == "chat":
            # Each question starts with its level and its number, so that no level's is served from another's
            # cached prompt (llama-server keeps each slot's last one); the chat template's own system prompt,
            # the same for every request, is cached as any client's would be.
            for streams in settings["concurrency"]:
                levels.append({"workload": "chat", "streams": int(streams), "requests": [
                    {"api": "chat", "prompt": "%d-stream level, request %d: in two sentences, explain %s." % (
                        int(streams), index + 1, CHAT_TOPICS[index % len(CHAT_TOPICS)])}
                    for index in range(int(streams) * rounds)]})
        elif workload == "prompt":
            for length in lengths:
                levels.append({"workload": "prompt", "streams": 1, "prompt_tokens": length,
                               "requests": [{"api": "completions", "prompt": tokens(length)} for _ in range(rounds)]})
        elif workload == "ide" and lengths:
            upper = [length for length in lengths if length >= lengths[-1] / 2]
            for streams in settings["concurrency"]:
                levels.append({"workload": "ide", "streams": int(streams), "requests": [
                    {"api": "completions", "prompt": tokens(upper[index % len(upper)])}
                    for index in range(int(streams) * rounds)]})
        elif workload == "edit" and lengths:
            # Each request its own rename, across the levels too.
            for streams in settings["concurrency"]:
                first = sum(len(level["requests"]) for level in levels if level["workload"] == "edit")
                levels.append({"workload": "edit", "streams": int(streams), "requests": [
                    {"api": "completions", "prompt": edit_prompt(lengths[-1], first + index)}
                    for index in range(int(streams) * rounds)]})
    return levels


def failure_kind(status: Optional[int], message: str) -> str:
    """How a failed request is counted: the same words in the JSON, the table and the plots."""
    if status is None:
        return message
    if status == 400 and ("exceed" in message or "context" in message):
        return "context exceeded (400)"
    return "%dxx" % (status // 100)


async def one_request(client: Any, openai: Any, model: str, request: Mapping[str, Any], generated: int,
                      timeout: float) -> Dict[str, Any]:
    """Send one streamed request; its times are seconds from sending."""
    sent = time.monotonic()
    stamps: List[float] = []
    usage = None
    common = {"model": model, "max_tokens": generated, "stream": True, "timeout": timeout,
              "stream_options": {"include_usage": True}, "extra_body": {"ignore_eos": True}, "temperature": 0}
    # Token ids are counted here; a text prompt by the server (usage).
    result: Dict[str, Any] = {"prompt_tokens_sent": len(request["prompt"]) if isinstance(request["prompt"], list)
                              else 0}
    timings: Mapping[str, Any] = {}
    try:
        if request["api"] == "chat":
            stream = await client.chat.completions.create(
                messages=[{"role": "user", "content": request["prompt"]}], **common)
        else:
            stream = await client.completions.create(prompt=request["prompt"], **common)
        async for chunk in stream:
            if chunk.choices and _has_text(chunk.choices[0]):
                stamps.append(time.monotonic() - sent)
            usage = chunk.usage or usage
            # llama-server's last chunk carries its timings (server-task.cpp), with draft_n and draft_n_accepted
            # where it drafted (server-common.cpp:100).
            timings = (chunk.model_extra or {}).get("timings") or timings
    except openai.APIStatusError as exc:
        message = " ".join(str(getattr(exc, "message", exc)).split())[:200]
        return dict(result, ok=False, failure=failure_kind(exc.status_code, message), message=message)
    except openai.APITimeoutError:
        return dict(result, ok=False, failure="timeout", message="no answer within %g s" % timeout)
    except openai.APIConnectionError as exc:
        return dict(result, ok=False, failure="connection", message=" ".join(str(exc).split())[:200])
    except openai.APIError as exc:  # an error event inside a stream already under way (a failed decode)
        return dict(result, ok=False, failure="stream error", message=" ".join(str(exc).split())[:200])
    tokens = usage.completion_tokens if usage else len(stamps)
    result.update(prompt_tokens=usage.prompt_tokens if usage else result["prompt_tokens_sent"], tokens=tokens,
                  ttft=stamps[0] if stamps else None, last=stamps[-1] if stamps else None,
                  draft_tokens=int(timings.get("draft_n") or 0),
                  draft_accepted=int(timings.get("draft_n_accepted") or 0))
    if tokens < generated or not stamps:
        return dict(result, ok=False, failure="short answer",
                    message="%d of %d tokens (the server ignored ignore_eos?)" % (tokens, generated))
    return dict(result, ok=True, failure="")


def _has_text(choice: Any) -> bool:
    if hasattr(choice, "delta"):  # chat: a reasoning model streams its thinking as reasoning_content
        return bool(choice.delta.content or (choice.delta.model_extra or {}).get("reasoning_content"))
    return bool(choice.text)


async def run_level(openai: Any, base_url: str, api_key: str, model: str, level: Mapping[str, Any], generated: int,
                    timeout: float) -> Tuple[List[Dict[str, Any]], float]:
    """Every request of a level, at most `streams` in flight: (their results, the level's wall time)."""
    client = direct_client(openai, base_url, api_key, timeout, asynchronous=True)
    gate = asyncio.Semaphore(level["streams"])

    async def gated(request: Mapping[str, Any]) -> Dict[str, Any]:
        async with gate:
            return await one_request(client, openai, model, request, generated, timeout)

    try:
        # One connection per stream, opened before the clock starts: a new connection through the tunnel starts a
        # transport process (ssh -W, docker exec), which is not the server's time to first token.
        await asyncio.gather(*(client.models.list() for _ in range(level["streams"])), return_exceptions=True)
        started = time.monotonic()
        results = await asyncio.gather(*(gated(request) for request in level["requests"]))
        return list(results), time.monotonic() - started
    finally:
        await client.close()


def _rank(values: Sequence[float], share: float) -> Optional[float]:
    """Nearest-rank percentile; None where it falls on a failed request (an infinite time)."""
    if not values:
        return None
    value = sorted(values)[max(0, math.ceil(share * len(values)) - 1)]
    return None if math.isinf(value) else round(value, 4)


def summarize(results: Sequence[Mapping[str, Any]], wall: float, generated: int,
              targets: Mapping[str, float]) -> Dict[str, Any]:
    """One level's figures (pure): what the JSON, the table and the plots show.

    Inter-token latency (ITL) of a request: the time from its first to its last token over the tokens between;
    tokens/s per stream is its inverse. Goodput: requests that met both targets (time to first token and ITL),
    per second of the level's wall time, and their share of all requests.
    """
    done = [result for result in results if result["ok"]]
    miss = math.inf
    itls = [(result["last"] - result["ttft"]) / (generated - 1) if result["ok"] and generated > 1
            else 0.0 if result["ok"] else miss for result in results]
    ttfts = [result["ttft"] if result["ok"] else miss for result in results]
    per_stream = [1 / itl if 0 < itl < miss else 0.0 for itl in itls]
    met = [result for result, itl in zip(results, itls)
           if result["ok"] and result["ttft"] <= targets["ttft_s"] and itl <= targets["itl_s"]]
    failures = Counter(result["failure"] for result in results if not result["ok"])
    drafted = sum(result.get("draft_tokens", 0) for result in done)
    accepted = sum(result.get("draft_accepted", 0) for result in done)
    example = next((result["message"] for result in results if not result["ok"]), "")
    return {
        "requests": len(results), "ok": len(done), "failed": dict(failures), "failure_example": example,
        "prompt_tokens": round(sum(r.get("prompt_tokens", r["prompt_tokens_sent"]) for r in results)
                               / max(1, len(results))),
        "wall_s": round(wall, 3),
        "ttft_p50_s": _rank(ttfts, 0.5), "ttft_p90_s": _rank(ttfts, 0.9),
        "itl_p50_s": _rank(itls, 0.5), "itl_p90_s": _rank(itls, 0.9),
        "stream_tokens_per_s_p50": round(sorted(per_stream)[(len(per_stream) - 1) // 2], 2) if per_stream else 0.0,
        "summed_tokens_per_s": round(sum(result["tokens"] for result in done) / wall, 2) if wall > 0 else 0.0,
        "goodput_requests_per_s": round(len(met) / wall, 3) if wall > 0 else 0.0,
        "goodput_share": round(len(met) / len(results), 3) if results else 0.0,
        # Speculative decoding: the drafted tokens the server checked, and the share it kept (None: no drafts).
        "draft_tokens": drafted, "draft_accepted": accepted,
        "acceptance": round(accepted / drafted, 3) if drafted else None,
    }


def run_endpoint(openai: Any, base_url: str, endpoint: Mapping[str, Any], settings: Mapping[str, Any],
                 timeout: float) -> List[Dict[str, Any]]:
    """Every level of plan_requests against one endpoint: each level's workload, streams and figures."""
    rows = []
    for level in plan_requests(endpoint, settings):
        results, wall = asyncio.run(run_level(openai, base_url, endpoint.get("api_key", ""), endpoint["model"], level,
                                              int(settings["generated_tokens"]), timeout))
        rows.append(dict({key: level[key] for key in ("workload", "streams")},
                         **summarize(results, wall, int(settings["generated_tokens"]),
                                     settings["targets"][level["workload"]])))
        if level["workload"] == "prompt":
            rows[-1]["prompt_tokens"] = level["prompt_tokens"]
    return rows


def against_baseline(levels: Sequence[Mapping[str, Any]],
                     baseline: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Each level with its speed against the same workload and streams in `baseline` (an earlier measurement of
    the same server, such as plain decoding in the same run): "speedup", tokens/s per stream over the
    baseline's (None where either delivered nothing)."""
    before = {(row["workload"], row["streams"]): row["stream_tokens_per_s_p50"] for row in baseline}
    rows = [dict(row) for row in levels]
    for row in rows:
        plain, speed = before.get((row["workload"], row["streams"])), row["stream_tokens_per_s_p50"]
        if plain is not None:
            row["speedup"] = round(speed / plain, 3) if plain and speed else None
    return rows
