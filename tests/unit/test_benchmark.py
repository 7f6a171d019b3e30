"""The benchmark's load generator with the real OpenAI client, against a stub that replays llama-server's recorded
streams (tests/fixtures/llama-server-api) at a known pace, and its report on recorded llama-bench output."""
import http.server
import json
import math
import threading
import time

import openai
import pytest
from conftest import FIXTURES, RECORDED

from ansible_collections.v100.llm.plugins.plugin_utils.benchmark_report import (
    decode_limit, engine_rows, markdown, write)
from ansible_collections.v100.llm.plugins.plugin_utils.load_generator import (
    EDIT_CHARS_PER_TOKEN, EDIT_SOURCES, against_baseline, edit_prompt, failure_kind, plan_requests, run_endpoint,
    summarize)

API = FIXTURES / "llama-server-api"
CONTEXT = 64  # the stub's slot: a longer prompt gets llama-server's recorded 400
PACE = 0.02  # seconds between streamed events
SETTINGS = {"workloads": ["chat", "prompt", "ide"], "concurrency": [1, 2], "prompt_tokens": [16, 48, 200],
            "generated_tokens": 8, "rounds": 1,
            "targets": {"chat": {"ttft_s": 5, "itl_s": 1}, "prompt": {"ttft_s": 5, "itl_s": 1},
                        "ide": {"ttft_s": 5, "itl_s": 1}, "edit": {"ttft_s": 5, "itl_s": 1}}}
ENDPOINT = {"name": "demo", "kind": "llama-server", "model": "smollm2", "api_key": "", "prompt_tokens_max": 48}


def stub(error_after=None):
    """llama-server's recorded streams, one event every PACE seconds, and its 400 past CONTEXT tokens; with
    error_after, the error event llama-server sends when a decode fails, after that many events
    (tools/server/server-context.cpp at 0c1e57098, send_error inside a stream)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if isinstance(request.get("prompt"), list) and len(request["prompt"]) > CONTEXT:
                body = (API / "context-exceeded.txt").read_text().splitlines()[0].encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            # A text prompt to the completions API is the edit workload's, recorded with speculative decoding on.
            recorded = "chat-stream.sse" if self.path != "/v1/completions" else \
                "completion-speculative-stream.sse" if isinstance(request["prompt"], str) else "completion-stream.sse"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for index, event in enumerate((API / recorded).read_text().split("\n\n")):
                if index == error_after:
                    event = 'data: {"error": {"code": 500, "message": "Compute error.", "type": "server_error"}}'
                if event.strip():
                    time.sleep(PACE)
                    self.wfile.write(event.encode() + b"\n\n")
                    self.wfile.flush()
                if index == error_after:
                    break
            self.close_connection = True

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_lengths_past_the_planned_maximum_are_left_out_and_the_maximum_is_measured():
    levels = plan_requests(ENDPOINT, SETTINGS)
    assert [(level["workload"], level["streams"], len(level["requests"])) for level in levels] == [
        ("chat", 1, 1), ("chat", 2, 2), ("prompt", 1, 1), ("prompt", 1, 1), ("ide", 1, 1), ("ide", 2, 2)]
    assert [level["prompt_tokens"] for level in levels if level["workload"] == "prompt"] == [16, 48]
    assert {len(request["prompt"]) for level in levels if level["workload"] == "ide"
            for request in level["requests"]} == {48}


def test_lengths_leave_room_in_the_servers_context_for_the_answer():
    # vLLM's endpoint: a planned maximum of max_model_len - 16, and max_model_len from /v1/models.
    levels = plan_requests(dict(ENDPOINT, prompt_tokens_max=4080, context_tokens=4096),
                           dict(SETTINGS, workloads=["prompt"], prompt_tokens=[512, 4096], generated_tokens=128))
    assert [level["prompt_tokens"] for level in levels] == [512, 4096 - 128]
    levels = plan_requests(dict(ENDPOINT, prompt_tokens_max=0, context_tokens=1024),
                           dict(SETTINGS, workloads=["prompt"], prompt_tokens=[512]))
    assert [level["prompt_tokens"] for level in levels] == [512]


def test_no_two_prompts_share_a_first_token_the_prompt_cache_could_reuse():
    levels = plan_requests(dict(ENDPOINT, prompt_tokens_max=0), dict(SETTINGS, rounds=8, concurrency=[4]))
    prompts = [request["prompt"] for level in levels if level["workload"] != "chat" for request in level["requests"]]
    assert len({tuple(prompt[:4]) for prompt in prompts}) == len(prompts)
    assert all(1000 <= token < 9000 for prompt in prompts for token in prompt)


def test_the_recorded_streams_are_measured_at_their_pace():
    server = stub()
    try:
        rows = run_endpoint(openai, "http://127.0.0.1:%d/v1" % server.server_address[1], ENDPOINT, SETTINGS, 30)
    finally:
        server.shutdown()
    chat = rows[0]
    assert (chat["requests"], chat["ok"], chat["failed"]) == (1, 1, {})
    # The recorded chat stream: a role event, then 8 tokens; the first token comes with the second event.
    assert 2 * PACE <= chat["ttft_p50_s"] < 2 * PACE + 0.5
    assert PACE * 0.8 <= chat["itl_p50_s"] < PACE + 0.2
    assert chat["prompt_tokens"] == 36  # usage, as recorded
    assert rows[2]["workload"] == "prompt" and rows[2]["prompt_tokens"] == 16 and rows[2]["ok"] == 1


def test_a_prompt_past_the_context_is_counted_as_such_and_as_a_miss():
    server = stub()
    try:
        rows = run_endpoint(openai, "http://127.0.0.1:%d/v1" % server.server_address[1],
                            dict(ENDPOINT, prompt_tokens_max=0), dict(SETTINGS, workloads=["prompt"]), 30)
    finally:
        server.shutdown()
    too_long = rows[-1]
    assert too_long["prompt_tokens"] == 200
    assert too_long["failed"] == {"context exceeded (400)": 1}
    assert "exceeds the available context size" in too_long["failure_example"]
    assert too_long["ttft_p50_s"] is None and too_long["summed_tokens_per_s"] == 0 and too_long["goodput_share"] == 0


def test_an_error_inside_a_started_stream_is_counted_not_raised():
    server = stub(error_after=2)
    try:
        rows = run_endpoint(openai, "http://127.0.0.1:%d/v1" % server.server_address[1], ENDPOINT,
                            dict(SETTINGS, workloads=["chat"], concurrency=[1]), 30)
    finally:
        server.shutdown()
    assert rows[0]["failed"] == {"stream error": 1} and "Compute error" in rows[0]["failure_example"]


def test_failures_enter_the_percentiles_as_misses_and_deliver_nothing():
    done = {"ok": True, "failure": "", "ttft": 1.0, "last": 8.0, "tokens": 8, "prompt_tokens": 10,
            "prompt_tokens_sent": 10}
    failed = {"ok": False, "failure": "timeout", "message": "no answer within 5 s", "prompt_tokens_sent": 10}
    row = summarize([done, done, failed, failed], 10.0, 8, {"ttft_s": 2, "itl_s": 2})
    assert row["ttft_p50_s"] == 1.0 and row["ttft_p90_s"] is None  # the 90th percentile is a failed request
    assert row["itl_p50_s"] == 1.0 and row["stream_tokens_per_s_p50"] == 0.0  # half the streams delivered nothing
    assert row["summed_tokens_per_s"] == 1.6 and row["goodput_share"] == 0.5
    assert row["failed"] == {"timeout": 2}
    assert summarize([done], 10.0, 8, {"ttft_s": 0.5, "itl_s": 2})["goodput_share"] == 0


@pytest.mark.parametrize("status, message, kind", [
    (400, "request (2100 tokens) exceeds the available context size (2048 tokens), try increasing it",
     "context exceeded (400)"),
    (401, "Invalid API Key", "4xx"), (503, "Loading model", "5xx"), (None, "timeout", "timeout")])
def test_failure_kinds(status, message, kind):
    assert failure_kind(status, message) == kind


def test_the_limit_is_bandwidth_over_the_weights_and_says_why_when_unknown():
    limit = decode_limit(900, 16_500_000_000)
    assert limit["tokens_per_s"] == 54.5 and limit["reason"] == "900 GB/s over 16.50 GB of weights (a dense model, one GPU at a time)"
    assert decode_limit(None, 1)["tokens_per_s"] is None
    assert "benchmark_memory_bandwidth_gbps" in decode_limit(None, 1)["reason"]
    assert "vLLM" in decode_limit(900, None)["reason"]


def test_llama_bench_json_as_recorded_on_an_h100():
    rows = engine_rows((RECORDED / "llama-bench_kv-f16-q8_0_depth-0-16384_h100_0c1e570.json").read_text())
    assert rows[0] == {"test": "pp512", "tokens_per_s": 9005.24, "stddev": 1386.19}
    assert [row["test"] for row in rows[:4]] == ["pp512", "tg128", "pp512 @ d16384", "tg128 @ d16384"]


def test_the_report_sets_each_stream_against_the_limit(tmp_path):
    level = summarize([{"ok": True, "failure": "", "ttft": 0.5, "last": 1.2, "tokens": 8, "prompt_tokens": 36,
                        "prompt_tokens_sent": 0}], 1.5, 8, {"ttft_s": 2, "itl_s": 0.5})
    report = {"host": "gpu1", "endpoint": "coder", "kind": "llama-server", "model": "qwen", "url": "http://127.0.0.1:8080",
              "time": "2026-12-07 02:00 UTC", "settings": SETTINGS, "limit": decode_limit(900, 90_000_000_000),
              "levels": [dict(level, workload="chat", streams=1)],
              "engine": {"argv": ["llama-bench"], "rows": [{"test": "tg128", "tokens_per_s": 8.0, "stddev": 0.1}]}}
    text = markdown(report)
    assert "cannot pass **10.0 tokens/s**: 900 GB/s over 90.00 GB of weights (a dense model, one GPU at a time)." in text
    assert "| chat | 1 | 36 | 1 | 0 | 0.50 s | 0.50 s | 0.10 s | 0.10 s | 10.0 (100%) | 5.3 |" in text
    assert "| tg128 | 8.0 ± 0.1 | 80% |" in text
    written, no_plots = write(report, tmp_path / "gpu1-coder")
    assert no_plots == ""
    assert [path.rsplit("/", 1)[1] for path in written] == ["gpu1-coder.json", "gpu1-coder.md",
                                                            "gpu1-coder-tokens-per-s.png"]
    assert json.loads((tmp_path / "gpu1-coder.json").read_text())["levels"][0]["ok"] == 1
    assert (tmp_path / "gpu1-coder-tokens-per-s.png").read_bytes()[:4] == b"\x89PNG"
    assert not math.isnan(report["limit"]["tokens_per_s"])


def test_an_edit_prompt_is_a_source_cut_to_fit_with_its_own_rename_and_the_answers_first_line():
    # The sources in turn: the load generator's is one of them.
    index = next(i for i, text in enumerate(EDIT_SOURCES) if text.startswith('"""Load through a served endpoint'))
    prompt = edit_prompt(400, index + len(EDIT_SOURCES))
    assert len(prompt) <= 400 * EDIT_CHARS_PER_TOKEN
    assert prompt.startswith('"""Load through a served endpoint')
    assert prompt.endswith("with the function edit_prompt renamed to edit_prompt_%d and nothing else changed:\n"
                           "\"\"\"Load through a served endpoint, measured from the client's side with the OpenAI "
                           "client's async API.\n" % (index + len(EDIT_SOURCES)))
    assert len(EDIT_SOURCES) >= 6 and len({edit_prompt(400, i)[:200] for i in range(len(EDIT_SOURCES))}) == len(
        EDIT_SOURCES)
    levels = plan_requests(dict(ENDPOINT, prompt_tokens_max=300), dict(SETTINGS, workloads=["edit"], rounds=2))
    assert [(level["workload"], level["streams"], len(level["requests"])) for level in levels] == [
        ("edit", 1, 2), ("edit", 2, 4)]
    # Each request renames to its own name; each fits the endpoint's longest prompt.
    prompts = [request["prompt"] for level in levels for request in level["requests"]]
    assert len(set(prompts)) == 6 and all(len(prompt) <= 300 * EDIT_CHARS_PER_TOKEN for prompt in prompts)


def test_the_acceptance_of_drafted_tokens_is_read_from_the_servers_timings():
    server = stub()
    try:
        rows = run_endpoint(openai, "http://127.0.0.1:%d/v1" % server.server_address[1], ENDPOINT,
                            dict(SETTINGS, workloads=["edit", "ide"], concurrency=[2], generated_tokens=64), 30)
    finally:
        server.shutdown()
    edit, ide = rows
    # Recorded with --spec-type ngram-mod: 62 tokens drafted, 62 kept, per request.
    assert (edit["ok"], edit["draft_tokens"], edit["draft_accepted"], edit["acceptance"]) == (2, 124, 124, 1.0)
    assert edit["prompt_tokens"] == 260  # the server's count (usage), a text prompt has none of its own
    assert (ide["draft_tokens"], ide["acceptance"]) == (0, None)


def test_a_speculative_type_is_set_against_plain_decoding_of_the_same_run():
    def level(workload, streams, per_stream, drafted=0, kept=0):
        return {"workload": workload, "streams": streams, "stream_tokens_per_s_p50": per_stream,
                "draft_tokens": drafted, "draft_accepted": kept, "acceptance": kept / drafted if drafted else None}
    plain = [level("edit", 1, 70.0), level("edit", 4, 40.0)]
    drafted = against_baseline([level("edit", 1, 105.0, 258, 204), level("edit", 4, 0.0, 0, 0),
                                level("edit", 16, 20.0)], plain)
    assert [row.get("speedup") for row in drafted] == [1.5, None, None]
    assert "speedup" not in drafted[2]  # no plain level to set it against
    report = {"host": "gpu1", "endpoint": "coder-speculative-ngram-mod", "kind": "llama-server", "model": "qwen",
              "url": "http://127.0.0.1:8080", "time": "2026-12-07 02:00 UTC", "settings": SETTINGS,
              "limit": decode_limit(None, None), "speculative": "ngram-mod", "engine": {},
              "levels": [dict(row, requests=1, ok=1, failed={}, failure_example="", prompt_tokens=260, ttft_p50_s=0.5,
                              ttft_p90_s=0.5, itl_p50_s=0.01, itl_p90_s=0.01, summed_tokens_per_s=1.0,
                              goodput_requests_per_s=1.0, goodput_share=1.0) for row in drafted]}
    text = markdown(report)
    assert "Speculative decoding (ngram-mod), against plain decoding measured in the same run where it was:" in text
    assert "- edit at 1 stream: kept 204 of 258 drafted tokens (79%); 105.0 tokens/s per stream, 1.50 x plain " \
           "decoding" in text
    assert "- edit at 4 streams: drafted nothing; 0.0 tokens/s per stream\n" in text
