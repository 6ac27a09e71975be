"""What AgenticOS did with the work a run's 202s accepted: uploads indexed, webhooks run.

Called on the master after the run has drained, and reads only what AgenticOS
0.0.247 offers. Uploads are followed through the collection's documents list
(``status`` ``done`` or ``error``, the reason in ``error_message``). Webhook
deliveries are followed through the trigger's run-log conversation: its
``conversation_id`` is in the agent's trigger list (there is no GET of one
trigger: 405), and ``GET /runs?conversation_id=`` lists the runs its fires
became. A run there names neither its prompt nor the delivery that started it,
but its transcript (``GET /runs/{id}/transcript``, read once per run) echoes the
delivery's body, load run id and arrival index included: so each delivery is
matched to its own run, and a run left from an earlier load run's backlog is
told apart and left out, as are the fires the seed and preflight send. A run that
ended without a user turn in its transcript is paired, in start order, with the
deliveries no run names.

Each kind of accepted work is followed on its own, by whole-list reads (one
paged request set per kind per poll, never one per arrival; a transcript once
per run), until all has settled or the grace period is over. A read that never
succeeds costs only the arrivals that depended on it: they are "not verifiable",
with the failed read as the detail (``GET /api/v1/rag/documents answered HTTP
405: ...``), so the report can say why. Nothing the platform does not show is counted as processed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

from engine.dialect_kit import words
from engine.followups import FAILED_AFTER, NOT_FINISHED, NOT_VERIFIABLE, PROCESSED, FollowUp
from engine.seam import Accepted, Setup
from inputs.fixture import in_path
from workloads.agenticos.client import AgenticOSClient
from workloads.agenticos.seed import AgenticOSSeeded
from workloads.followup import followed
from workloads.setup_client import APIError, APIUnreachable

# Seconds between polls: a settled upload is seen within this, and each poll costs the
# platform one read of the documents list and one of the trigger's runs, at most.
POLL_S = 1.0
# Document and run states that mean "not finished yet"; anything else has settled.
PENDING = frozenset({"processing", "pending", "queued", "running", "in_progress"})
# Settled states that mean the work was done.
DONE = frozenset({"done", "completed", "success", "succeeded"})
# A fire's user turn echoes the delivery's body: the load run and the arrival index it names.
_LOAD_RUN = re.compile(r'"run_id":\s*"([^"]+)"')
_INDEX = re.compile(r'"index":\s*(\d+)')
# Turns read of one run's transcript: a fire has two (the delivery, the answer).
TRANSCRIPT_TURNS = 10
# A run that ended without its transcript showing a user turn (paired in start order).
UNNAMED = -1
# The workloads whose accepted work AgenticOS shows the end of.
UPLOAD, DELIVERY = "ingest", "trigger_fire"
NOT_SHOWN = "AgenticOS shows nothing of what became of this workload's accepted work"
NO_TRIGGER = "the fixture names no trigger (the seed could not create one)"


class Unreadable(Exception):
    """A list read answered, but without what the follow-up needs from it; the text says so."""


class Followed:
    """One kind of accepted work, followed on its own: each arrival's state as last read, and
    why no read of it has succeeded yet (None once one has)."""

    def __init__(
        self,
        arrivals: list[tuple[int, str, str]],
        reader: Callable[[Followed], None],
        unread: str = "never read",
    ) -> None:
        self.arrivals = sorted(arrivals)
        self._reader = reader
        self.unread: str | None = unread
        # Per arrival index: its FollowUp as last read (one still working as NOT_FINISHED).
        self.seen: dict[int, FollowUp] = {}
        # A refusal that asking again will not change: this kind is read no more.
        self.refused = False

    def pending(self) -> bool:
        """Whether any arrival may still settle (never seen, or last seen still working)."""
        return not self.refused and any(
            k not in self.seen or self.seen[k].state == NOT_FINISHED for k, *_ in self.arrivals
        )

    def read(self) -> None:
        """One read; a failure is kept as the reason and tried again at the next poll, unless
        the platform refused it for good (a 4xx other than 408 and 429, or no run log)."""
        try:
            self._reader(self)
        except (APIUnreachable, APIError, Unreadable) as exc:
            if self.unread is not None:
                self.unread = words(str(exc))
            self.refused = isinstance(exc, Unreadable) or (
                isinstance(exc, APIError)
                and 400 <= exc.status < 500
                and exc.status not in (408, 429)
            )
        else:
            self.unread = None

    def results(self, grace_s: float) -> list[FollowUp]:
        """Every arrival: as last read (one still working: not finished in grace), or, when no
        read ever succeeded, not verifiable with the reason."""
        out = []
        for k, w, ref in self.arrivals:
            if self.unread is not None:
                out.append(FollowUp(k, w, ref, NOT_VERIFIABLE, self.unread))
                continue
            last = self.seen.get(k, FollowUp(k, w, ref, NOT_FINISHED, "not listed by the platform"))
            if last.state == NOT_FINISHED:
                last = last._replace(detail=f"{last.detail} {grace_s:g} s after the run")
            out.append(last)
        return out


def follow_up(
    setup: Setup[AgenticOSSeeded],
    /,
    *,
    run_id: str,
    start_epoch: float,
    accepted: list[Accepted],
    grace_s: float,
) -> list[FollowUp]:
    """One FollowUp per accepted arrival: polled until all settle or ``grace_s`` runs out."""
    pending, others = followed(accepted, (UPLOAD, DELIVERY), NOT_SHOWN)
    deadline = time.monotonic() + grace_s
    own = setup.seeded
    with AgenticOSClient(setup.fixture.api_url, setup.auth) as client:
        email, password = setup.email, setup.secret
        uploads = Followed(
            [a for a in pending if a[1] == UPLOAD],
            _signed(client, email, password, lambda kind: _read_uploads(client, own, kind)),
        )
        deliveries = Followed(
            [a for a in pending if a[1] == DELIVERY],
            _signed(client, email, password, _RunLog(client, own, run_id, start_epoch).read),
            "never read" if own.trigger_id else NO_TRIGGER,
        )
        kinds = [uploads] + ([deliveries] if own.trigger_id else [])
        while True:
            for kind in kinds:
                if kind.pending():
                    kind.read()
            if not any(kind.pending() for kind in kinds) or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
    return [*others, *uploads.results(grace_s), *deliveries.results(grace_s)]


def _signed(
    client: AgenticOSClient, email: str, password: str, reader: Callable[[Followed], None]
) -> Callable[[Followed], None]:
    """The reader, read again after a fresh sign-in when the platform answers 401: a long
    grace outlives AgenticOS's 30-minute access token."""

    def read(kind: Followed) -> None:
        try:
            reader(kind)
        except APIError as exc:
            if exc.status != 401:
                raise
            client.sign_in(email, password)
            reader(kind)

    return read


def _delivery(delivery: FollowUp, run: dict | None) -> FollowUp:
    """A delivery as its run shows it: none yet, still running, done, or ended otherwise."""
    if run is None:
        return delivery._replace(state=NOT_FINISHED, detail="no run yet in the trigger's log")
    status = str(run.get("status", ""))
    if status in DONE:
        return delivery._replace(state=PROCESSED)
    if status in PENDING:
        return delivery._replace(state=NOT_FINISHED, detail=f"its run still {status}")
    why = run.get("error") or f"run {status}"
    return delivery._replace(state=FAILED_AFTER, detail=words(str(why)))


def _read_uploads(client: AgenticOSClient, own: AgenticOSSeeded, uploads: Followed) -> None:
    """Read the documents list once: each accepted upload as the platform shows it now."""
    wanted = {ref: (k, w) for k, w, ref in uploads.arrivals}
    for doc in client.list_all("/rag/documents", collection_name=own.collection_name):
        ref = str(doc.get("id") or doc.get("document_id"))
        if ref not in wanted:
            continue
        k, workload = wanted.pop(ref)
        status = str(doc.get("status", ""))
        if status in DONE:
            uploads.seen[k] = FollowUp(k, workload, ref, PROCESSED)
        elif status in PENDING:
            uploads.seen[k] = FollowUp(k, workload, ref, NOT_FINISHED, f"still {status}")
        else:
            why = doc.get("error_message") or f"status {status}"
            uploads.seen[k] = FollowUp(k, workload, ref, FAILED_AFTER, words(str(why)))
        if not wanted:
            return


class _RunLog:
    """The trigger's run-log conversation: found once in the trigger list, then its runs since
    the run began, read afresh at each poll, each named once by the delivery its transcript
    echoes."""

    def __init__(
        self, client: AgenticOSClient, own: AgenticOSSeeded, run_id: str, start_epoch: float
    ) -> None:
        self._client = client
        self._own = own
        self._run_id = run_id
        self._started_from = datetime.fromtimestamp(start_epoch, UTC).isoformat()
        self._conversation: str | None = None
        # Per platform run: the index of this load run's delivery its transcript echoes, None
        # for any other fire, UNNAMED for one that ended with no user turn. A run still going
        # whose transcript shows no user turn yet is absent, and read again.
        self._named: dict[str, int | None] = {}

    def read(self, deliveries: Followed) -> None:
        """Each delivery as its run shows it now (one without a run: not run yet)."""
        if self._conversation is None:
            self._conversation = self._find_conversation()
        # Oldest first, so a run that starts while the pages are read joins the last page
        # instead of shifting every page under the reader (by id too, should one repeat).
        listed = self._client.list_all(
            "/runs",
            conversation_id=self._conversation,
            started_from=self._started_from,
            descending="false",
        )
        runs = sorted(
            {str(r.get("id")): r for r in listed}.values(),
            key=lambda r: str(r.get("started_at") or ""),
        )
        by_index: dict[int, dict] = {}
        unnamed = []
        for run in runs:
            if str(run["id"]) not in self._named:
                self._name(run)
            index = self._named.get(str(run["id"]), UNNAMED)
            if index == UNNAMED:
                unnamed.append(run)
            elif index is not None:
                by_index[index] = run
        left = [d for d in deliveries.arrivals if d[0] not in by_index]
        # A run whose transcript shows no user turn is paired, in start order, with the
        # deliveries no run names: the counts stay exact.
        by_index.update({k: run for (k, _, _), run in zip(left, unnamed, strict=False)})
        for k, workload, ref in deliveries.arrivals:
            deliveries.seen[k] = _delivery(FollowUp(k, workload, ref, ""), by_index.get(k))

    def _name(self, run: dict) -> None:
        """Read one run's transcript for the delivery its first user turn echoes: one of this
        load run's (its index), or anything else (None: another load run's, or a fire the
        seed or preflight sent). A run that ended with no user turn is UNNAMED."""
        run_id = str(run["id"])
        transcript = self._client.get(f"/runs/{in_path(run_id)}/transcript", limit=TRANSCRIPT_TURNS)
        for turn in transcript.get("items", []):
            if turn.get("role") != "user":
                continue
            content = str(turn.get("content") or "")
            load_run, index = _LOAD_RUN.search(content), _INDEX.search(content)
            mine = load_run is not None and load_run.group(1) == self._run_id
            self._named[run_id] = int(index.group(1)) if mine and index is not None else None
            return
        if str(run.get("status", "")) not in PENDING:
            self._named[run_id] = UNNAMED

    def _find_conversation(self) -> str:
        """The trigger's ``conversation_id``, from the agent's trigger list."""
        path = f"/agents/{in_path(self._own.agent_id)}/triggers"
        listed = self._client.list_all(path)
        found = next((t for t in listed if str(t.get("id")) == self._own.trigger_id), None)
        if found is None or not found.get("conversation_id"):
            what = "is not" if found is None else "has no conversation_id"
            raise Unreadable(f"the trigger {what} in GET {self._client.prefix}{path}")
        return str(found["conversation_id"])
