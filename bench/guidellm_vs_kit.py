"""The kit and GuideLLM side by side: the same LiteLLM proxy in front of the same stub, the same
streamed chat turns at the same constant rate, each tool's own figures (issue 44, "Checked
against GuideLLM").

    .venv/bin/python -m bench.guidellm_vs_kit [--rate 4] [--seconds 30]

Starts the openai demo's stack (stub + LiteLLM's proxy, stack/openai.py), then runs, one after
the other, the kit (``loadkit run --rate R --run-time T``: constant rate, chat turns only,
none cancelled, one step) and GuideLLM (``guidellm run``, profile ``constant`` at R for T
seconds, Chat Completions streamed, the kit's own turn texts from a file, no tokenizer) and
prints, from each tool's own output, time to first token, inter-token latency and request
latency percentiles, and each tool's CPU per completed request: the whole process tree's,
from start to exit, read from ``getrusage(RUSAGE_CHILDREN)`` around it (so each tool's start
and its report are in it: GuideLLM imports torch, the kit builds its HTML report).

GuideLLM runs from its own environment (``make guidellm-venv``: guidellm 0.8.1, pinned in
requirements-guidellm.txt; it brings torch, about 6 GB), offline (the Hugging Face switches
set, its log and results in the work directory), and is given the proxy's key on its command
line: a key made for this throwaway proxy, never the operator's LOAD_PASSWORD. The figures
printed are for the machine they ran on, which is said first (its load average before and
after): take published figures on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from inputs.fixture import PASSWORD_ENV
from reports.summary import PercentilesRecord, read_summary
from stack.local import LOCUST, StackOptions, child_env
from stack.openai import start_stack
from stack.processes import ROOT, run_captured
from workloads.corpus import turn_message

GUIDELLM = ROOT / ".venv-guidellm" / "bin" / "guidellm"
# The stub's pace for both tools: a 0.1 s first token, then 31 more 20 ms apart (0.72 s a turn).
STUB_ARGS = ("--first-token-ms", "100", "--token-ms", "20", "--tokens", "32")
# GuideLLM reaches no hub: no tokenizer is asked for, the prompts are a local file.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
PERCENTILES = (50, 95, 99)
# Prompts in GuideLLM's file: more than one run at the fastest rate asked sends.
PROMPTS = 10_000
TOOL_TIMEOUT_S = 900


def chat_only(written: Path, into: Path) -> Path:
    """The stack's scenario with chat turns alone, none cancelled: what GuideLLM offers."""
    raw = yaml.safe_load(written.read_text())
    for name, spec in raw["workloads"].items():
        spec["share"] = 1 if name == "chat_stream" else 0
    raw["chat_cancel_share"] = 0
    into.write_text(yaml.safe_dump(raw, sort_keys=False))
    return into


def cpu_of(run: Callable[[], None]) -> float:
    """CPU seconds (user + system) the children ``run`` started and waited for used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def kit_figures(run_dir: Path) -> dict[str, object]:
    """The kit's own figures, as its summary.json states them: completed chat turns' time to
    first token, inter-token latency and latency (nearest rank, the report's)."""
    chat = read_summary(run_dir).whole_run.workloads["chat_stream"]

    def cut(spread: PercentilesRecord) -> dict[int, float | None]:
        return dict(zip(PERCENTILES, (spread.p50, spread.p95, spread.p99), strict=True))

    return {
        "completed": chat.ok,
        "other": chat.calls - chat.ok,
        "ttft_ms": cut(chat.ttft_ms),
        "itl_ms": cut(chat.itl_ms),
        "latency_ms": cut(chat.latency_ms),
    }


def guidellm_figures(report: Path) -> dict[str, object]:
    """GuideLLM's own figures from its JSON report's successful requests."""
    metrics = json.loads(report.read_text())["benchmarks"][0]["metrics"]

    def cut(name: str, scale: float = 1.0) -> dict[int, float]:
        shown = metrics[name]["successful"]["percentiles"]
        return {p: shown[f"p{p:02d}"] * scale for p in PERCENTILES}

    totals = metrics["request_totals"]
    return {
        "completed": totals["successful"],
        "other": totals["incomplete"] + totals["errored"],
        "ttft_ms": cut("time_to_first_token_ms"),
        "itl_ms": cut("inter_token_latency_ms"),
        "latency_ms": cut("request_latency", 1000.0),
    }


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def table(kit: dict, guide: dict, cpu: dict[str, float]) -> str:
    """The two tools' figures side by side."""
    lines = [f"{'':24}{'kit':>12}{'GuideLLM':>12}"]
    lines.append(f"{'completed turns':24}{kit['completed']:>12}{guide['completed']:>12}")
    lines.append(f"{'other turns':24}{kit['other']:>12}{guide['other']:>12}")
    for figure in ("ttft_ms", "itl_ms", "latency_ms"):
        for p in PERCENTILES:
            row = [f"{figure[:-3]} p{p} ms"]
            for tool in (kit, guide):
                shown = tool[figure]
                row.append(f"{shown[p]:>12.1f}")
            lines.append(f"{row[0]:24}" + "".join(row[1:]))
    for name, tool in (("kit", kit), ("GuideLLM", guide)):
        per = 1000 * cpu[name] / max(1, tool["completed"])
        lines.append(f"{name + ' CPU':24}{cpu[name]:>10.1f} s  = {per:.1f} ms per completed turn")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.guidellm_vs_kit", description=__doc__)
    parser.add_argument("--rate", type=float, default=4.0, help="arrivals a second (default 4)")
    parser.add_argument("--seconds", type=int, default=30, help="each tool's run (default 30)")
    args = parser.parse_args(argv)
    if not GUIDELLM.exists():
        print(f"{GUIDELLM} is missing: make guidellm-venv", file=sys.stderr)
        return 2
    # A key for this throwaway proxy alone: it goes on GuideLLM's command line.
    os.environ[PASSWORD_ENV] = f"bench-{secrets.token_hex(16)}"
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)", flush=True)
    with tempfile.TemporaryDirectory(prefix="guidellm-vs-kit-") as scratch:
        work = Path(scratch)
        options = StackOptions(workdir=work / "stack", stub_args=STUB_ARGS, platform="openai")
        with start_stack(options) as stack:
            assert stack.scenario is not None
            scenario = chat_only(stack.scenario, work / "chat-only.yaml")
            run_dir = work / "kit"
            kit_command = [*LOCUST, "--headless", *stack.locust_options(), "--scenario"]
            kit_command += [str(scenario), "--rate", f"{args.rate:g}"]
            kit_command += ["--run-time", f"{args.seconds}s", "--run-dir", str(run_dir)]
            kit_command += ["--only-summary"]
            prompts = work / "prompts.txt"
            prompts.write_text("".join(turn_message(k) + "\n" for k in range(PROMPTS)))
            report = work / "guidellm.json"
            key = os.environ[PASSWORD_ENV]
            backend = f"kind=openai_http,target={stack.target.url},model=stub,api_key={key}"
            guide_command = [str(GUIDELLM), "run", "--backend", backend]
            guide_command += ["--profile", f"kind=constant,rate={args.rate:g}"]
            guide_command += ["--constraint", f"kind=max_duration,seconds={args.seconds}"]
            guide_command += ["--data", f"kind=text_file,path={prompts}"]
            guide_command += ["--output", f"kind=json,path={report}"]
            guide_command += ["--disable-console-interactive"]
            guide_env = {
                **os.environ,
                **OFFLINE,
                "GUIDELLM__LOGGING__LOG_FILE": str(work / "guidellm.log"),
                "GUIDELLM__DEFAULT_RESULTS_DIR": str(work),
            }
            cpu = {
                "kit": cpu_of(lambda: _ran(kit_command, child_env(), "the kit")),
                "GuideLLM": cpu_of(lambda: _ran(guide_command, guide_env, "GuideLLM")),
            }
            print(f"stack: {stack.topology}")
            print(f"rate {args.rate:g}/s for {args.seconds} s each, one after the other")
            print(table(kit_figures(run_dir), guidellm_figures(report), cpu))
    print(f"load average after: {load_average()}")
    return 0


def _ran(command: list[str], env: dict[str, str], who: str) -> None:
    """Run one tool to its end; RuntimeError with its last words if it made no output."""
    done = run_captured(command, env, TOOL_TIMEOUT_S)
    if done.returncode not in (0, 1, 2):
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{who} exited {done.returncode}: " + " | ".join(tail))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
