#!/usr/bin/env python3
"""An IDE-like load on llama-server: issue 35's GPU acceptance of the role's slot and prompt-cache defaults.

Three settings, one after another, each a fresh llama-server on the role's planned command line
(tests/gpu/ide-bench.sh plans it through the roles): "role default" (the planned argv: slots that each hold
a 16,384-token prompt and a 4,096-token answer, --cache-ram 0), "role default --cache-ram 8192"
(llama-server's own prompt cache, its default upstream) and "-c 122880 -np 6" (--ctx-size and --parallel
replaced by hand; last: the cheapest to run again alone if the time budget cut it). Every setting also gets
-lv 4, a log level only: the prompt cache's saves and their times are trace lines. For each: wait for
/health, two short warm-up requests, one /tokenize of random words to learn tokens per word (the model's
weights are random, so the words only set the length), then

A. IDE burst: 16 requests at once to /completion, distinct prompts of 12,000-16,000 tokens, 256 tokens
   each (ignore_eos), streamed. A request succeeded with HTTP 200 and 256 tokens; the others are counted
   by HTTP status with an example of the server's message (400 "exceeds the available context size" for a
   slot too short). Time to first token (TTFT): from sending to the first streamed event that carries a
   token (the 200 comes earlier, when the prompt starts). Generated tokens/s: all tokens of the 16 over the
   burst's wall time, from the first send to the last answer.
B. Right after the burst: 16 one-line requests at once, 32 tokens each, streamed: TTFT p50/p90. With the
   prompt cache on, starting a request first saves the idle slots' states to host RAM (--cache-idle-slots,
   on by default), 1.6-2.0 GiB each after the burst; issue 35 measured 7-111 s there, 0.27-1.06 s without.
C. Prefix reuse: 2 users per slot (at most 24), each with its own ~6,000-token prompt, sent once (round 0),
   then re-sent in rounds 1-3 with ~100 more tokens appended each round (cache_prompt), one request after
   another, 16 tokens each, streamed. Per request the server's timings.prompt_n (prompt tokens processed:
   neither kept in the slot nor restored from the cache) and TTFT; per round the mean processed over the
   mean prompt length and TTFT p50. More users than slots: without the cache a user's slot has been taken
   by the time they re-send. C starts no request after REUSE_BUDGET_S (25) seconds or after the deadline
   below; its table says how many requests ran.

From each server's log (kept whole in /tmp/ide-server-SETTING.log) the lines about n_slots/n_ctx_slot, the
prompt cache, "making room" and slot selection go to OUTDIR/server-SETTING.log, and the prompt cache's
saves, their MiB, the time of its updates and the "making room for prompt cache entry" lines are counted.
One table per setting, a summary at the end, everything in OUTDIR/ide-bench.json (written after each
setting; a run of some settings keeps the others from an earlier run of the same plan, marked "earlier").
One setting's failure is printed (FAILED) and the next one still runs.
Usage: ide_bench.py PLAN.json OUTDIR [SETTING ...]   (SETTING: default, cache, np6; all three by default)
IDE_BENCH_DEADLINE (epoch seconds, optional): no setting starts after it and phase C ends at it.
"""
from __future__ import annotations

import http.client
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from slots_bench import PORT, call, replaced, stop_server, wait_healthy  # beside this file

# (key, title, argv changes), in the order they run.
SETTINGS = (
    ("default", "role default", {}),
    ("cache", "role default --cache-ram 8192", {"--cache-ram": "8192"}),
    ("np6", "-c 122880 -np 6", {"--ctx-size": "122880", "--parallel": "6"}),
)
LOG_ARGS = ["-lv", "4"]  # trace lines: prompt cache saves and update times; nothing per token
TIMEOUT = 600
BURST, BURST_TOKENS, BURST_MIN, BURST_MAX = 16, 256, 12000, 16000
SHORT, SHORT_TOKENS = 16, 32
REUSE_USERS_MAX, REUSE_BASE, REUSE_EDIT, REUSE_ROUNDS, REUSE_TOKENS = 24, 6000, 100, 3, 16
REUSE_BUDGET_S = 25  # per setting: keeps the whole of ide-bench.sh within its budget on an H100
LOG_MARKS = ("n_ctx_slot", "n_slots", "prompt cache", "making room", "saving prompt", "in the cache",
             "cache size limit", "selected slot", "exceeds the available context", "failed to")
WORDS = """def return self class import from value index buffer config server client request response token
slot cache prompt model layer tensor weight batch stream thread queue lock event handler error status module
package function method object string number list dict tuple array vector matrix kernel device memory host port
socket timeout retry logger debug trace format parse render update delete insert select table column schema
query result cursor commit branch merge rebase patch diff hunk line file path folder user group role task plan
check verify assert test fixture mock stub sample random seed hash digest key alpha beta gamma delta kappa
sigma omega window panel button editor selection completion suggestion snippet refactor rename extract inline
yield async await lambda while for if else elif try except finally raise with pass break continue none true
false""".split()


def text(rng, count):
    """count random words in lines of 6-14, some joined as identifiers or calls: varied tokens, no meaning."""
    lines = []
    while count > 0:
        words = []
        for _ in range(min(count, rng.randint(6, 14))):
            word, roll = rng.choice(WORDS), rng.random()
            if roll < 0.1:
                word = "%s_%s" % (word, rng.choice(WORDS))
            elif roll < 0.15:
                word = "%s(%d)" % (word, rng.randrange(1000))
            words.append(word)
        lines.append(" ".join(words))
        count -= len(words)
    return "\n".join(lines)


def error_message(body):
    """The server's error JSON (bytes or a dict) -> its message, short."""
    try:
        data = json.loads(body) if isinstance(body, bytes) else body
        error = data.get("error", data)
        return str(error.get("message", error) if isinstance(error, dict) else error)[:200]
    except (ValueError, AttributeError):
        return repr(body[:200])


def stream(body):
    """POST /completion with stream on -> status, ttft (s; None without a token), tokens (generated),
    prompt (its tokens), timings (the final event's), error (None, or a message) and seconds."""
    request = urllib.request.Request("http://127.0.0.1:%d/completion" % PORT,
                                     data=json.dumps(dict(body, stream=True)).encode(),
                                     headers={"Content-Type": "application/json"})
    result = {"status": None, "ttft": None, "tokens": 0, "prompt": None, "timings": {}, "error": None}
    start = time.time()
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            result["status"] = answer.status
            for raw in answer:  # server-sent events: "data: {...}" lines, a blank line between them
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: "):])
                if "error" in event:  # an error after the 200
                    result["error"] = error_message(event)
                    break
                if result["ttft"] is None and (event.get("tokens") or event.get("content")):
                    result["ttft"] = time.time() - start
                if event.get("stop"):
                    result.update(tokens=event.get("tokens_predicted", 0), prompt=event.get("tokens_evaluated"),
                                  timings=event.get("timings", {}))
    except urllib.error.HTTPError as error:  # 400 and the like: the body says why
        result["status"], result["error"] = error.code, error_message(error.read())
    except (OSError, ValueError, http.client.HTTPException) as error:  # refused, timed out, cut, a bad line
        result["error"] = "%s: %s" % (type(error).__name__, error)
    result["seconds"] = time.time() - start
    return result


def at_once(bodies):
    """Send every body at once, one thread each -> (results in order, seconds from the first send to the
    last answer)."""
    results = [None] * len(bodies)

    def one(index):
        try:
            results[index] = stream(bodies[index])
        except Exception as error:  # a bug here must not hang the burst
            results[index] = {"status": None, "ttft": None, "tokens": 0, "prompt": None, "timings": {},
                              "error": "%s: %s" % (type(error).__name__, error), "seconds": 0.0}

    threads = [threading.Thread(target=one, args=(index,), daemon=True) for index in range(len(bodies))]
    start = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, time.time() - start


def rank(values, share):
    """The share-quantile of values (nearest rank), None for none."""
    values = sorted(value for value in values if value is not None)
    return values[max(0, math.ceil(share * len(values)) - 1)] if values else None


def seconds(value):
    return "-" if value is None else "%.2f s" % value


def summary(results, wall, tokens):
    """A phase's requests -> succeeded (200 and every token), failed by status, TTFT p50/p90, tokens/s."""
    good, failures = [], {}
    for r in results:
        if r["status"] == 200 and not r["error"] and r["tokens"] == tokens:
            good.append(r)
        else:
            entry = failures.setdefault(str(r["status"] or "no answer"), {"count": 0, "example": ""})
            entry["count"] += 1
            entry["example"] = entry["example"] or r["error"] or "%d of %d tokens" % (r["tokens"], tokens)
    prompts = [r["prompt"] for r in results if r["prompt"]]
    return {"ok": len(good), "failed": len(results) - len(good), "failures": failures,
            "ttft_p50": rank([r["ttft"] for r in good], 0.5), "ttft_p90": rank([r["ttft"] for r in good], 0.9),
            "ttft_max": rank([r["ttft"] for r in good], 1.0), "tokens_per_s": sum(r["tokens"] for r in results) / wall,
            "wall_s": wall, "prompt_tokens": [min(prompts), max(prompts)] if prompts else None,
            "requests": [{key: r[key] for key in ("status", "ttft", "tokens", "prompt", "error", "seconds")}
                         for r in results]}


def print_phase(label, phase):
    print("  %-9s %2d ok, %d failed; TTFT p50 %s, p90 %s, max %s; %.1f generated tokens/s in %.1f s%s" % (
        label, phase["ok"], phase["failed"], seconds(phase["ttft_p50"]), seconds(phase["ttft_p90"]),
        seconds(phase["ttft_max"]), phase["tokens_per_s"], phase["wall_s"],
        "; prompts %d-%d tokens" % tuple(phase["prompt_tokens"]) if phase["prompt_tokens"] else ""))
    for status, entry in phase["failures"].items():
        print("            failed %s x %d: %s" % (status, entry["count"], entry["example"]))


def reuse(users, per_word, stop_at):
    """Phase C: users re-send their prompts with edits, one request after another, until stop_at."""
    rounds, prompts, start = [], [None] * users, time.time()
    for number in range(REUSE_ROUNDS + 1):
        done = []
        for user in range(users):
            if time.time() > stop_at:
                break
            rng = random.Random("user %d round %d" % (user, number))
            if number == 0:
                prompts[user] = "User %d's workspace, file %d of %d:\n%s" % (
                    user, user, users, text(rng, round(REUSE_BASE / per_word)))
            else:
                prompts[user] += "\n// edit %d by user %d\n%s" % (number, user, text(rng, round(REUSE_EDIT / per_word)))
            r = stream({"prompt": prompts[user], "n_predict": REUSE_TOKENS, "ignore_eos": True, "cache_prompt": True})
            done.append({"user": user, "status": r["status"], "error": r["error"], "ttft": r["ttft"],
                         "prompt": r["prompt"], "prompt_n": r["timings"].get("prompt_n"),
                         "cache_n": r["timings"].get("cache_n")})
        ok = [r for r in done if r["status"] == 200 and not r["error"] and r["prompt_n"] is not None]
        rounds.append({"round": number, "sent": len(done), "ok": len(ok),
                       "prompt_n_mean": statistics.mean(r["prompt_n"] for r in ok) if ok else None,
                       "prompt_mean": statistics.mean(r["prompt"] for r in ok) if ok else None,
                       "ttft_p50": rank([r["ttft"] for r in ok], 0.5), "ttft_p90": rank([r["ttft"] for r in ok], 0.9),
                       "requests": done})
        if len(done) < users:
            break
    sent = sum(r["sent"] for r in rounds)
    return {"users": users, "rounds": rounds, "cut": sent < users * (REUSE_ROUNDS + 1), "seconds": time.time() - start}


def log_summary(log_path, kept_path):
    """Keep the server log's slot and prompt cache lines in kept_path and count the cache's work."""
    kept, counts = [], {"making_room": 0, "saves": 0, "saved_mib": 0.0, "cache_updates": 0, "cache_update_ms": 0.0,
                        "cache_update_ms_max": 0.0, "slot_by_lru": 0, "slot_by_lcp": 0, "slots_line": ""}
    size = 0.0  # the last save's MiB: taken back when the cache skips it
    with open(log_path, errors="replace") as log:
        for line in log:
            if not any(mark in line for mark in LOG_MARKS):
                continue
            kept.append(line)
            saved = re.search(r"saving prompt with length \d+, total state size = ([\d.]+) MiB", line)
            took = re.search(r"prompt cache update took ([\d.]+) ms", line)
            if "making room for prompt cache entry" in line:
                counts["making_room"] += 1
            elif saved:
                size = float(saved.group(1))
                counts["saves"] += 1
                counts["saved_mib"] += size
            elif "already in the cache, skipping" in line or "exceeds cache size limit" in line:
                counts["saves"] -= 1
                counts["saved_mib"] -= size
            elif took:
                counts["cache_updates"] += 1
                counts["cache_update_ms"] += float(took.group(1))
                counts["cache_update_ms_max"] = max(counts["cache_update_ms_max"], float(took.group(1)))
            elif "selected slot by LRU" in line:
                counts["slot_by_lru"] += 1
            elif "selected slot by LCP" in line:
                counts["slot_by_lcp"] += 1
            elif "n_slots" in line and not counts["slots_line"]:
                counts["slots_line"] = line.strip()
    with open(kept_path, "w") as out:
        out.writelines(kept)
    return counts


def run(key, row, argv, out, deadline):
    """One setting: fills row as it goes (what was measured stays when a later phase fails)."""
    slots = int(argv[argv.index("--parallel") + 1])
    ctx = int(argv[argv.index("--ctx-size") + 1])
    row.update(argv=argv + LOG_ARGS, slots=slots, ctx_per_slot=ctx // slots,
               cache_ram_mib=int(argv[argv.index("--cache-ram") + 1]))
    print("== %s: -c %d -np %d (%d tokens a slot), --cache-ram %s" % (
        row["title"], ctx, slots, ctx // slots, row["cache_ram_mib"]))
    log_path = "/tmp/ide-server-%s.log" % key
    start = time.time()
    with open(log_path, "w") as log:
        server = subprocess.Popen(argv + LOG_ARGS, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(server, PORT)
        row["start_s"] = time.time() - start
        at_once([{"prompt": "Warm-up %d: say hello." % index, "n_predict": 16, "ignore_eos": True}
                 for index in range(2)])
        sample = text(random.Random("calibration"), 4000)
        row["tokens_per_word"] = per_word = len(call("/tokenize", {"content": sample})["tokens"]) / 4000
        bursts = []
        for index in range(BURST):  # 12,000 to 16,000 tokens, evenly spread
            words = round((BURST_MIN + (BURST_MAX - BURST_MIN) * index / (BURST - 1)) / per_word)
            bursts.append({"prompt": "// burst file %d of %d\n%s" % (index, BURST, text(random.Random(
                "burst %d" % index), words)), "n_predict": BURST_TOKENS, "ignore_eos": True, "cache_prompt": True})
        shorts = [{"prompt": "Question %d of %d after the burst: name a prime number above %d." % (
            index, SHORT, index * 7919), "n_predict": SHORT_TOKENS, "ignore_eos": True, "cache_prompt": True}
            for index in range(SHORT)]
        print("  started in %.1f s; %.2f tokens a word" % (row["start_s"], per_word))
        row["burst"] = summary(*at_once(bursts), BURST_TOKENS)
        print_phase("A burst", row["burst"])
        row["short"] = summary(*at_once(shorts), SHORT_TOKENS)
        print_phase("B short", row["short"])
        users = min(REUSE_USERS_MAX, 2 * slots)
        row["reuse"] = reuse(users, per_word, min(time.time() + REUSE_BUDGET_S, deadline))
        print("  C reuse   %d users on %d slots, ~%d-token prompts, +%d a round, one at a time (%.1f s%s)" % (
            users, slots, REUSE_BASE, REUSE_EDIT, row["reuse"]["seconds"],
            ", cut at the time budget" if row["reuse"]["cut"] else ""))
        for entry in row["reuse"]["rounds"]:
            print("            round %d: %2d of %d sent, %2d ok; processed %s of %s prompt tokens; TTFT p50 %s, "
                  "p90 %s" % (entry["round"], entry["sent"], users, entry["ok"],
                              "-" if entry["prompt_n_mean"] is None else "%.0f" % entry["prompt_n_mean"],
                              "-" if entry["prompt_mean"] is None else "%.0f" % entry["prompt_mean"],
                              seconds(entry["ttft_p50"]), seconds(entry["ttft_p90"])))
    except Exception:  # the server's last words say more than the client's error
        with open(log_path, errors="replace") as log:
            for line in log.readlines()[-6:]:
                print("    server: " + line.rstrip())
        raise
    finally:
        stop_server(server)
        row["log"] = log_summary(log_path, os.path.join(out, "server-%s.log" % key))
        counts = row["log"]
        print("  log: %s" % counts["slots_line"])
        print("  prompt cache: %d saves (%.0f MiB), %d x making room, %d updates at slot choice taking %.1f s "
              "(longest %.1f s); slots chosen by LRU %d, by prefix %d" % (
                  counts["saves"], counts["saved_mib"], counts["making_room"], counts["cache_updates"],
                  counts["cache_update_ms"] / 1000, counts["cache_update_ms_max"] / 1000, counts["slot_by_lru"],
                  counts["slot_by_lcp"]))


def print_summary(rows):
    print("\n%-30s %-9s %-19s %-9s %-19s %-26s %s" % (
        "setting", "A ok/fail", "A TTFT p50 / p90", "A gen t/s", "B TTFT p50 / p90",
        "C processed/prompt by round", "making room"))
    for row in (rows[key] for key, _, _ in SETTINGS if key in rows):
        title = row["title"] + (" (earlier)" if row.get("earlier") else "")
        if "burst" not in row or "short" not in row:
            print("%-30s %s" % (title, row.get("failed") or row.get("skipped") or "no figures"))
            continue
        burst, short = row["burst"], row["short"]
        rounds = " ".join("%.0f/%.0f" % (entry["prompt_n_mean"], entry["prompt_mean"])
                          for entry in row.get("reuse", {}).get("rounds", []) if entry["prompt_n_mean"] is not None)
        print("%-30s %2d/%-6d %-19s %-9.1f %-19s %-26s %s" % (
            title, burst["ok"], burst["failed"], "%s / %s" % (seconds(burst["ttft_p50"]), seconds(burst["ttft_p90"])),
            burst["tokens_per_s"], "%s / %s" % (seconds(short["ttft_p50"]), seconds(short["ttft_p90"])),
            rounds or "-", row.get("log", {}).get("making_room", "-")))


def main(plan_path, out, only):
    plan = json.load(open(plan_path))
    instance, memory = plan["instances"][0], (plan.get("memory") or [{}])[0]
    deadline = float(os.environ.get("IDE_BENCH_DEADLINE") or "inf")
    print("plan: -c %s -np %s; %s; %s" % (instance["ctx_size"], instance["parallel"], instance.get("slot_choice"),
                                          instance.get("prompt_cache")))
    print("      %s" % memory.get("message", ""))
    result = {"plan": {"argv": instance["argv"], "ctx_size": instance["ctx_size"], "parallel": instance["parallel"],
                       "slot_choice": instance.get("slot_choice"), "memory": memory.get("message")},
              "settings": {}}
    rows, path = result["settings"], os.path.join(out, "ide-bench.json")
    try:  # a run of some settings keeps an earlier run's others (same plan)
        earlier = json.load(open(path))
    except (OSError, ValueError):
        earlier = {}
    if earlier.get("plan", {}).get("argv") == instance["argv"]:
        rows.update((key, dict(row, earlier=True)) for key, row in earlier.get("settings", {}).items())
    for key, title, changes in SETTINGS:
        if only and key not in only:
            continue
        if time.time() > deadline:
            print("== %s: SKIPPED, the time budget (IDE_BENCH_DEADLINE) was spent" % title)
            rows.setdefault(key, {"title": title, "skipped": "SKIPPED: out of time"})
            continue
        rows[key] = row = {"title": title}
        try:
            run(key, row, replaced(instance["argv"], changes), out, deadline)
        except Exception as error:  # whatever went wrong, the next setting still runs
            row["failed"] = "FAILED: %s: %s" % (type(error).__name__, error)
            print("  " + row["failed"])
        with open(path, "w") as saved:
            json.dump(result, saved, indent=1)
    print_summary(rows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], set(sys.argv[3:]))
