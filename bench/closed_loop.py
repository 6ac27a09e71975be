"""An independent closed-loop client: the agent-server bench taken again without the kit.

A figure the kit publishes has to hold when somebody else takes it with another tool. This
is that other tool, kept small enough to read in one sitting: plain asyncio and aiohttp,
and nothing of the kit's (no engine, no dialect, no report code; it reads only the seed's
fixture file for the ids the seed made). Each user sends one whole turn after another, the
next as soon as the last answered, as the seed's bench does:

- **the reference platform**: signs in once (``POST /api/v1/auth/login``, the email given
  and the password from LOAD_PASSWORD), then ``POST /api/v1/agents/{agent}/run``; a turn is
  ok when it answers 2xx with ``"status": "completed"``;
- **opencode**: one session per user, made before its first turn and kept across steps
  (``POST /session``), then ``POST /session/{id}/message``; a turn is ok when it answers
  200 with an assistant message that finished and no ``info.error``.

A step runs ``users`` users for ``--step-s`` seconds; users of a larger step are added to
those already running (each new user's session made just before the step's clock starts),
as the kit's users mode adds them, and users go on from one step into the next; after the
last step none starts a turn, and the turns in flight finish. A turn counts to the step it
started in for latency, to the step it ended in for throughput. Per step it writes turns
per second (successful turns that ended inside the step, over its length) and the
nearest-rank p50 and p95 of the successful turns started in it, with their count and the
failures by kind.

    LOAD_PASSWORD=... python -m bench.closed_loop --platform opencode --fixture F \\
        --users 1,2,4,8 --step-s 45 --out client.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import aiohttp

# A turn still unanswered after this long is a failure ("timed out"), as the kit's
# bench/agent_turns.yaml times out an agent run.
TURN_TIMEOUT_S = 90.0
PLATFORMS = ("reference", "opencode")


@dataclass
class Turn:
    """One turn: when it started and ended (monotonic seconds), and how (``ok`` or why not)."""

    started: float
    ended: float
    outcome: str


@dataclass
class StepResult:
    """What one step measured."""

    users: int
    seconds: float
    started: int
    ok: int
    turns_per_s: float
    p50_ms: float | None
    p95_ms: float | None
    failures: dict[str, int] = field(default_factory=dict)


def nearest_rank(values: list[float], p: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least p% of them at or below."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


class Reference:
    """The reference platform's agent run, signed in once."""

    def __init__(self, http: aiohttp.ClientSession, fixture: dict, email: str) -> None:
        self.http, self.email = http, email
        self.agent = fixture["seeded"]["agent_id"]
        self.org = fixture["seeded"]["org_id"]
        self.headers: dict[str, str] = {}

    async def start(self) -> None:
        form = {"username": self.email, "password": os.environ["LOAD_PASSWORD"]}
        async with self.http.post("/api/v1/auth/login", data=form) as answer:
            answer.raise_for_status()
            token = (await answer.json())["access_token"]
        self.headers = {"Authorization": f"Bearer {token}", "X-Organization-Id": self.org}

    async def user(self, number: int) -> str:
        return str(number)

    async def turn(self, user: str, k: int) -> str:
        body = {"prompt": f"closed-loop turn {k} of user {user}"}
        path = f"/api/v1/agents/{self.agent}/run"
        async with self.http.post(path, json=body, headers=self.headers) as answer:
            if answer.status // 100 != 2:
                return f"HTTP {answer.status}"
            status = (await answer.json()).get("status")
        return "ok" if status == "completed" else f"run {status}"


class OpenCode:
    """opencode's blocking message call, on one session per user."""

    def __init__(self, http: aiohttp.ClientSession, fixture: dict) -> None:
        self.http = http
        seeded = fixture["seeded"]
        self.model = {"providerID": seeded["provider_id"], "modelID": seeded["model_id"]}
        basic = aiohttp.encode_basic_auth("opencode", os.environ["LOAD_PASSWORD"])
        self.auth = {"Authorization": basic}

    async def start(self) -> None:
        return None

    async def user(self, number: int) -> str:
        body = {"title": f"closed-loop user {number}"}
        async with self.http.post("/session", json=body, headers=self.auth) as answer:
            answer.raise_for_status()
            return (await answer.json())["id"]

    async def turn(self, user: str, k: int) -> str:
        body = {"model": self.model, "parts": [{"type": "text", "text": f"closed-loop turn {k}"}]}
        path = f"/session/{user}/message"
        async with self.http.post(path, json=body, headers=self.auth) as answer:
            if answer.status != 200:
                return f"HTTP {answer.status}"
            info = (await answer.json()).get("info") or {}
        if info.get("error"):
            return "run error"
        finished = info.get("role") == "assistant" and info.get("finish") is not None
        return "ok" if finished else "no answer"


async def loop(platform: Reference | OpenCode, user: str, stop: list[float], turns: list[Turn]):
    """One user: a turn after another until the sweep ends (``stop[0]``, read before each)."""
    k = 0
    while time.monotonic() < stop[0]:
        k += 1
        started = time.monotonic()
        try:
            outcome = await asyncio.wait_for(platform.turn(user, k), TURN_TIMEOUT_S)
        except TimeoutError:
            outcome = "timed out"
        except (aiohttp.ClientError, ValueError) as exc:
            outcome = type(exc).__name__
        turns.append(Turn(started, time.monotonic(), outcome))


def measure(users: int, start: float, seconds: float, turns: list[Turn]) -> StepResult:
    """A step's figures from every turn of the run so far."""
    end = start + seconds
    mine = [t for t in turns if start <= t.started < end]
    ok_ms = [(t.ended - t.started) * 1000 for t in mine if t.outcome == "ok"]
    ended_ok = sum(1 for t in turns if t.outcome == "ok" and start <= t.ended < end)
    return StepResult(
        users,
        seconds,
        len(mine),
        len(ok_ms),
        ended_ok / seconds,
        nearest_rank(ok_ms, 50),
        nearest_rank(ok_ms, 95),
        dict(Counter(t.outcome for t in mine if t.outcome != "ok")),
    )


async def sweep(args: argparse.Namespace) -> list[StepResult]:
    """Every step in order, each adding users to those already running; once the last step
    ends no turn starts, and the turns in flight finish before any step is measured."""
    fixture = json.loads(args.fixture.read_text())
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(
        fixture["api_url"], connector=connector, timeout=timeout
    ) as http:
        platform: Reference | OpenCode = (
            Reference(http, fixture, args.email)
            if args.platform == "reference"
            else OpenCode(http, fixture)
        )
        await platform.start()
        turns: list[Turn] = []
        running: list[asyncio.Task] = []
        # Every user reads this one cell before each turn: the end of the sweep reaches all.
        stop = [math.inf]
        starts = []
        for count in args.users:
            for number in range(len(running), count):
                user = await platform.user(number)
                running.append(asyncio.create_task(loop(platform, user, stop, turns)))
            starts.append((count, time.monotonic()))
            await asyncio.sleep(args.step_s)
        stop[0] = time.monotonic()
        await asyncio.gather(*running)
    return [measure(count, start, args.step_s, turns) for count, start in starts]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.closed_loop", description=__doc__)
    parser.add_argument("--platform", required=True, choices=PLATFORMS)
    parser.add_argument("--fixture", required=True, type=Path, help="the seed's fixture file")
    parser.add_argument("--email", default="", help="the reference platform's sign-in email")
    parser.add_argument("--users", required=True, help="the steps' users, e.g. 1,2,4,8")
    parser.add_argument("--step-s", required=True, type=float, help="seconds per step")
    parser.add_argument("--out", required=True, type=Path, help="JSON file to write")
    args = parser.parse_args(argv)
    args.users = [int(u) for u in args.users.split(",")]
    if args.platform == "reference" and not args.email:
        parser.error("--email: the reference platform's sign-in email is needed")
    if "LOAD_PASSWORD" not in os.environ:
        parser.error("export LOAD_PASSWORD: the password the platform was started with")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    steps = asyncio.run(sweep(args))
    args.out.write_text(json.dumps([asdict(s) for s in steps], indent=1) + "\n")
    for s in steps:
        print(
            f"users {s.users:>4}: {s.turns_per_s:6.2f} turns/s, p50 {s.p50_ms} ms, "
            f"p95 {s.p95_ms} ms, {s.ok}/{s.started} ok {s.failures or ''}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
