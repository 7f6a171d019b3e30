"""What endpoint_benchmark writes for one endpoint: the limit the figures are set against, a Markdown table,
PNG plots and the JSON they are made from."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple


def decode_limit(bandwidth_gbps: Optional[float], model_bytes: Optional[int]) -> Dict[str, Any]:
    """The most tokens/s one stream of plain decoding of a dense model on one GPU at a time can reach: each token
    reads every weight once, so memory bandwidth over the bytes of weights (the KV cache read on top only lowers
    it). With a batch the weights are read once for every stream, so summed tokens/s can pass it; one stream
    cannot. A mixture of experts (only the active experts are read) or a row or tensor split over two GPUs (both
    read at once) can pass it."""
    if not bandwidth_gbps or not model_bytes:
        return {"tokens_per_s": None, "reason": "no memory bandwidth known for this host's GPUs (set "
                                                "benchmark_memory_bandwidth_gbps)" if not bandwidth_gbps
                else "the server does not report its weights' size (vLLM)"}
    return {"tokens_per_s": round(bandwidth_gbps * 1e9 / model_bytes, 1), "memory_bandwidth_gbps": bandwidth_gbps,
            "model_bytes": model_bytes,
            "reason": "%g GB/s over %.2f GB of weights (a dense model, one GPU at a time)" % (
                bandwidth_gbps, model_bytes / 1e9)}


def engine_rows(llama_bench_json: str) -> List[Dict[str, Any]]:
    """llama-bench's -o json (one object per test) as rows: the test (pp512, tg128, as llama-bench names them),
    tokens/s and their standard deviation."""
    rows = []
    for test in json.loads(llama_bench_json):
        name = "pp%d" % test["n_prompt"] if test["n_prompt"] and not test["n_gen"] else \
            "tg%d" % test["n_gen"] if test["n_gen"] and not test["n_prompt"] else \
            "pp%d+tg%d" % (test["n_prompt"], test["n_gen"])
        if test.get("n_depth"):
            name += " @ d%d" % test["n_depth"]
        rows.append({"test": name, "tokens_per_s": round(test["avg_ts"], 2), "stddev": round(test["stddev_ts"], 2)})
    return rows


def _seconds(value: Optional[float]) -> str:
    return "failed" if value is None else "%.2f s" % value if value >= 0.1 else "%.0f ms" % (value * 1000)


def _share(value: Optional[float], limit: Optional[float]) -> str:
    return " (%.0f%%)" % (100 * value / limit) if value is not None and limit else ""


def markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: the limit, the served load's levels, the engine alone."""
    limit = report["limit"]["tokens_per_s"]
    settings = report["settings"]
    lines = [
        "# %s on %s: %s (%s)" % (report["endpoint"], report["host"], report["model"], report["kind"]),
        "",
        "Measured %s from the controller, through the host's own connection, with the OpenAI client. Every "
        "request asks for %d tokens (ignore_eos). Goodput: the requests that met their workload's targets for time "
        "to first token (TTFT) and inter-token latency (ITL), %s. A failed request counts as a miss everywhere." % (
            report["time"], settings["generated_tokens"],
            "; ".join("%s TTFT at most %g s and ITL at most %g s" % (workload, target["ttft_s"], target["itl_s"])
                      for workload, target in sorted(settings["targets"].items())
                      if workload in settings["workloads"])),
        "",
        "One stream of plain decoding cannot pass %s" % (
            "**%.1f tokens/s**: %s." % (limit, report["limit"]["reason"]) if limit
            else "a limit that is not known here: %s." % report["limit"]["reason"]),
        "",
        "| workload | streams | prompt tokens | requests | failed | TTFT p50 | TTFT p90 | ITL p50 | ITL p90 "
        "| tokens/s per stream | tokens/s summed | goodput |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in report["levels"]:
        failed = ", ".join("%d %s" % (count, kind) for kind, count in sorted(row["failed"].items())) or "0"
        lines.append("| %s | %d | %d | %d | %s | %s | %s | %s | %s | %.1f%s | %.1f | %.2f req/s (%.0f%%) |" % (
            row["workload"], row["streams"], row["prompt_tokens"], row["requests"], failed,
            _seconds(row["ttft_p50_s"]), _seconds(row["ttft_p90_s"]), _seconds(row["itl_p50_s"]),
            _seconds(row["itl_p90_s"]), row["stream_tokens_per_s_p50"], _share(row["stream_tokens_per_s_p50"], limit),
            row["summed_tokens_per_s"], row["goodput_requests_per_s"], 100 * row["goodput_share"]))
    compared = [row for row in report["levels"] if row.get("draft_tokens") or "speedup" in row]
    if compared:
        lines += ["", "Speculative decoding (%s), against plain decoding measured in the same run where it was:" % (
            report.get("speculative") or "the server's own setting"), ""]
        lines += ["- %s at %d stream%s: %s; %.1f tokens/s per stream%s" % (
            row["workload"], row["streams"], "" if row["streams"] == 1 else "s",
            "kept %d of %d drafted tokens (%.0f%%)" % (row["draft_accepted"], row["draft_tokens"],
                                                      100 * row["acceptance"]) if row.get("draft_tokens")
            else "drafted nothing", row["stream_tokens_per_s_p50"],
            ", %.2f x plain decoding" % row["speedup"] if row.get("speedup") else "") for row in compared]
    examples = sorted({row["failure_example"] for row in report["levels"] if row["failure_example"]})
    lines += ["", "What a failed request was told: %s" % " | ".join(examples)] if examples else []
    engine = report.get("engine") or {}
    if engine.get("rows"):
        lines += ["", "The engine alone (llama-bench with the instance's settings, the server stopped for it): `%s`"
                  % " ".join(engine["argv"]), "", "| test | tokens/s | of the one-stream limit |",
                  "| --- | ---: | ---: |"]
        lines += ["| %s | %.1f ± %.1f | %s |" % (row["test"], row["tokens_per_s"], row["stddev"],
                                                 _share(row["tokens_per_s"], limit).strip(" ()")
                                                 if row["test"].startswith("tg") else "")
                  for row in engine["rows"]]
    elif engine.get("skipped"):
        lines += ["", "The engine alone: not measured (%s)." % engine["skipped"]]
    return "\n".join(lines) + "\n"


def _plot_levels(axes: Any, levels: Sequence[Mapping[str, Any]], key: str, style: str, color: str,
                 label: str) -> None:
    points = sorted((row["streams"], row[key]) for row in levels)
    if points:
        axes.plot([p[0] for p in points], [p[1] for p in points], style, color=color, label=label)


def plots(report: Mapping[str, Any], stem: Path) -> List[str]:
    """PNG plots beside the JSON: tokens/s against streams, and TTFT against prompt length. Returns their paths."""
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    from matplotlib import pyplot  # pylint: disable=import-outside-toplevel

    written = []
    title = "%s on %s (%s)" % (report["endpoint"], report["host"], report["model"])
    limit = report["limit"]["tokens_per_s"]
    loads = [row for row in report["levels"] if row["workload"] in ("chat", "ide")]
    if loads:
        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        for workload, color in (("chat", "C0"), ("ide", "C1")):
            levels = [row for row in loads if row["workload"] == workload]
            _plot_levels(axes, levels, "summed_tokens_per_s", "o-", color, "%s: summed" % workload)
            _plot_levels(axes, levels, "stream_tokens_per_s_p50", "s--", color, "%s: per stream (median)" % workload)
        if limit:
            axes.axhline(limit, color="grey", linestyle=":", label="one-stream limit: %s" % report["limit"]["reason"])
        axes.set(xscale="log", xlabel="streams at once", ylabel="generated tokens/s", title=title)
        axes.set_xticks(sorted({row["streams"] for row in loads}), labels=sorted({str(row["streams"]) for row in loads},
                                                                                   key=int))
        # Below the axes: inside, it hides the points it names.
        axes.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
        figure.savefig(str(stem) + "-tokens-per-s.png", dpi=100, bbox_inches="tight")
        pyplot.close(figure)
        written.append(str(stem) + "-tokens-per-s.png")
    prompts = sorted((row["prompt_tokens"], row["ttft_p50_s"]) for row in report["levels"]
                     if row["workload"] == "prompt" and row["ttft_p50_s"] is not None)
    if prompts:
        figure, axes = pyplot.subplots(figsize=(7, 4.5))
        axes.plot([p[0] for p in prompts], [p[1] for p in prompts], "o-", label="one stream, median")
        axes.set(xlabel="prompt tokens", ylabel="time to first token (s)", title=title)
        axes.legend(fontsize="small")
        figure.tight_layout()
        figure.savefig(str(stem) + "-ttft.png", dpi=100)
        pyplot.close(figure)
        written.append(str(stem) + "-ttft.png")
    return written


def write(report: Mapping[str, Any], stem: Path) -> Tuple[List[str], str]:
    """stem.json, stem.md and the plots: every path written, and why the plots were not drawn ("" when they were).
    The plots are drawn from the JSON alone, so a controller without matplotlib loses only them (plots() on the
    JSON draws them later)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(str(stem) + ".json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    Path(str(stem) + ".md").write_text(markdown(report))
    written = [str(stem) + ".json", str(stem) + ".md"]
    try:
        return written + plots(report, stem), ""
    except ImportError as exc:
        return written, "no plots: matplotlib is missing on the controller (requirements-controller.txt): %s" % exc
