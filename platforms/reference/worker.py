"""The background worker: indexes uploads and executes webhook routine runs.

AgenticOS hands both to a worker so the API can answer 202 at once; the target
does the same with in-process asyncio queues. Jobs are ids of rows already
committed, so a restart loses nothing: documents still ``processing`` and runs
still ``queued`` are queued again at startup.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy import select

from platforms.reference.db import Database
from platforms.reference.models import Document, Run

log = logging.getLogger("platforms.reference")

# Concurrent jobs per queue: enough to keep up with a burst without letting the
# worker alone exhaust the database pool the API also needs.
INGEST_CONSUMERS = 2
ROUTINE_CONSUMERS = 4
# Seconds shutdown waits for cancelled jobs to unwind before leaving them behind.
STOP_WAIT_S = 5.0

Job = Callable[[str], Awaitable[None]]


class BackgroundWorker:
    """Two queues (ingest, routine) of row ids, each drained by a few consumer tasks."""

    def __init__(self, db: Database, index_document: Job, execute_routine: Job) -> None:
        self.db = db
        self.jobs = {"ingest": index_document, "routine": execute_routine}
        self.queues: dict[str, asyncio.Queue[str]] = {name: asyncio.Queue() for name in self.jobs}
        self._tasks: list[asyncio.Task] = []
        self._stopping = False

    def enqueue(self, queue: str, row_id: str) -> None:
        """Queue the job for a committed row."""
        self.queues[queue].put_nowait(row_id)

    def depths(self) -> dict[str, int]:
        """Jobs waiting per queue, for /metrics."""
        return {name: queue.qsize() for name, queue in self.queues.items()}

    async def start(self) -> None:
        """Requeue unfinished work from the database, then start the consumers."""
        async with self.db.session() as session:
            pending = select(Document.id).where(Document.status == "processing")
            for doc_id in (await session.execute(pending)).scalars():
                self.enqueue("ingest", doc_id)
            queued = select(Run.id).where(Run.status == "queued")
            for run_id in (await session.execute(queued)).scalars():
                self.enqueue("routine", run_id)
        consumers = {"ingest": INGEST_CONSUMERS, "routine": ROUTINE_CONSUMERS}
        for name, count in consumers.items():
            self._tasks += [asyncio.create_task(self._consume(name)) for _ in range(count)]

    async def _consume(self, name: str) -> None:
        queue, job = self.queues[name], self.jobs[name]
        while not self._stopping:
            row_id = await queue.get()
            try:
                await job(row_id)
            except Exception as exc:
                log.error("%s job %s failed: %s: %s", name, row_id, type(exc).__name__, exc)
            finally:
                queue.task_done()

    async def stop(self) -> None:
        """Cancel the consumers, waiting a bounded time; unfinished rows resume at next start."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        _done, lingering = await asyncio.wait(self._tasks, timeout=STOP_WAIT_S)
        if lingering:
            log.warning("%d background jobs still unwinding at shutdown", len(lingering))
