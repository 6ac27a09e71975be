"""Stub + LiteLLM's proxy in front of it (platforms/litellm/, litellm 1.110.2) on free loopback
ports, seeded as an OpenAI-compatible endpoint, for ``make demo PLATFORM=openai`` and tests:
the proxy runs from its own environment (``.venv-litellm``, requirements-litellm.txt),
stack/own_venv.py.

An OpenAI endpoint is a model, not an agent (workloads/openai/CONTRACT.md): it answers in
one step, so the shipped scenario, whose agent runs take three, is run with every agent
workload at one step, written beside the stack and named in the demo's first line.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import yaml

from inputs.agent import AGENT_WORKLOADS
from inputs.scenario import DEFAULT_PATH
from stack.local import LocalStack, StackOptions
from stack.own_venv import OwnVenv, running_in_own_venv

# How ``make demo`` names this platform in its first line.
WHAT = "LiteLLM's proxy in front of the stub (the scenario's agent runs at one step: no agent)"

LITELLM = OwnVenv(
    name="openai",
    called="LiteLLM's proxy",
    described=(
        "LiteLLM proxy 1.110.2 (platforms/litellm/, 1 uvicorn process on uvloop, no database, "
        "one model on the stub, /v1/responses bridged onto Chat Completions)"
    ),
    # Said while it builds (make litellm-venv, measured here).
    build="under a minute",
    key_env="LITELLM_KIT_CLIENT_KEY",
    env_prefix="LITELLM_KIT_",
    ready_path="/health/liveliness",
    # Its Prometheus /metrics is an enterprise callback, not served here.
    metrics=False,
    module="platforms.litellm",
    venv="litellm",
)
# What an agent's loop may say beyond the one step a model answers in.
LOOP_KEYS = ("steps", "parallel_tools", "tool_ms")


def one_step_scenario(written: Path, into: Path) -> Path:
    """The scenario at ``written`` with every agent workload's loop taken out (one model call,
    as a model answers), saved as ``into``."""
    raw = yaml.safe_load(written.read_text())
    for name in AGENT_WORKLOADS:
        spec = raw.get("workloads", {}).get(name)
        if isinstance(spec, dict):
            for key in LOOP_KEYS:
                spec.pop(key, None)
    into.write_text(yaml.safe_dump(raw, sort_keys=False))
    return into


@contextlib.contextmanager
def start_stack(options: StackOptions) -> Iterator[LocalStack]:
    """Start stub and proxy, seed it as an OpenAI endpoint; stop both when the block ends."""
    with running_in_own_venv(options, LITELLM) as stack:
        scenario = one_step_scenario(DEFAULT_PATH, options.workdir / "scenario-one-step.yaml")
        yield dataclasses.replace(stack, scenario=scenario)
