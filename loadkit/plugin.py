"""What a platform package outside the kit is written with: the one module it imports.

A team whose agent server is none of the kit's writes a small Python distribution that
registers a ``PLATFORM`` record under the entry-point group ``loadkit.platforms``
(docs/your-platform.md walks through one, examples/echo-platform/ is it). Everything such
a package needs is named here, so it depends on one module of the kit, not on where the
kit keeps each part: the record and the dialect it fills in (engine/seam.py), how the run
signs in (engine/sign_in.py), what a dialect is written with (engine/dialect_kit.py,
workloads/answers.py), the words of the prompts (workloads/corpus.py) and the agent's tool
for the loop (engine/agent_plan.py).
"""

from __future__ import annotations

from engine.agent_plan import ANY_TOOL, AgentTool
from engine.dialect_kit import (
    BAD_FRAME,
    STREAM_ENDED,
    cancel_asked,
    detail_result,
    error_frame,
    event_stream_turn,
    words,
)
from engine.http import HttpCall
from engine.samples import CANCELLED, FAILED, OK, Result
from engine.seam import (
    Attempt,
    Conversation,
    Deployment,
    Dialect,
    Platform,
    PreflightError,
    Probe,
    SeedError,
    Seeding,
    SeedOption,
    SeedSetup,
    Setup,
    Skip,
    Turn,
)
from engine.sign_in import NO_SIGN_IN, BasicKey, Credential, KeyHeader, SignIn
from engine.sse import StreamedAnswer
from workloads.answers import decoder, fits, held
from workloads.corpus import run_prompt, turn_message

__all__ = [
    "ANY_TOOL",
    "BAD_FRAME",
    "CANCELLED",
    "FAILED",
    "NO_SIGN_IN",
    "OK",
    "STREAM_ENDED",
    "AgentTool",
    "Attempt",
    "BasicKey",
    "Conversation",
    "Credential",
    "Deployment",
    "Dialect",
    "HttpCall",
    "KeyHeader",
    "Platform",
    "PreflightError",
    "Probe",
    "Result",
    "SeedError",
    "SeedOption",
    "SeedSetup",
    "Seeding",
    "Setup",
    "SignIn",
    "Skip",
    "StreamedAnswer",
    "Turn",
    "cancel_asked",
    "decoder",
    "detail_result",
    "error_frame",
    "event_stream_turn",
    "fits",
    "held",
    "run_prompt",
    "turn_message",
    "words",
]
