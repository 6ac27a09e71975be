"""One ``/event`` subscription per load process, its events handed by session id to the turns
waiting on them: what one opencode client with many sessions does (CONTRACT.md, "One event
stream per load process").

opencode serve's ``/event`` carries every session of the instance. A subscription per chat
turn, as the dialect first made, had the load process receive, frame and search each event
once per turn in flight, so its CPU per turn grew with the turns in flight and the generator,
not opencode, became the bottleneck (issue 48). Here the process holds one subscription:
one reader frames each event once, reads its session id (a msgspec decode of that one field)
and hands it to the inbox of the turn that runs in that session; an event of no waiting
session is dropped unread past that. opencode 1.18.33's per-session route
(``/api/session/{id}/event``) is no way round it: it sends nothing for a session of the
classic API, and carries no token deltas even for its own sessions.

A turn joins before it sends its prompt and waits, inside its own time, until the stream is
live (its first event in), so none of its events can come before it listens. When the stream
breaks, every turn waiting on it is told why, in the words a turn's own stream used
(engine/dialect_kit.py), and stops; the next turn opens a new subscription. A subscription
no turn waits on is closed after LINGER_S, as the transport retires an idle connection, so
nothing of it outlives the load.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import gevent
import msgspec
from gevent.event import AsyncResult
from gevent.queue import SimpleQueue

from engine.dialect_kit import CONNECTION_RESET, STREAM_ENDED, broken_stream, redirected
from engine.http import IDLE_S, HttpCall, HttpTransport
from engine.http1 import Answer, ExchangeError, failure_detail
from engine.samples import FAILED, Result
from engine.sse import Event

# A subscription with no turn waiting on it is closed after this long idle, as the transport
# closes a keep-alive connection idle this long: the next turn opens a new one.
LINGER_S = IDLE_S


class _Where(msgspec.Struct):
    """The one field the reader reads of an event: whose session it is (none: the server's)."""

    sessionID: str | None = None


class _Envelope(msgspec.Struct):
    """An event as opencode sends it, ``{"type", "properties": {"sessionID", ...}}``, every
    other field skipped unread."""

    properties: _Where


_ENVELOPE = msgspec.json.Decoder(_Envelope)


class Unsubscribed(Exception):
    """The subscription a turn waited on could not be made; ``result`` is the turn's sample,
    named as a turn's own subscription was (a redirect, a refusal in the server's words, the
    stream ended or broke before its first event, or no connection)."""

    def __init__(self, result: Result):
        super().__init__(result.detail)
        self.result = result


class Inbox:
    """One turn's events, as the reader hands them over, in the order the server sent them;
    when the stream ends or breaks, ``why`` (engine/dialect_kit.py's words) and no more."""

    __slots__ = ("_queue", "key", "why")

    def __init__(self, session: str):
        # The session id as bytes: what a frame that is not an event names it by.
        self.key = session.encode()
        self._queue: SimpleQueue[Event | str] = SimpleQueue()
        self.why = STREAM_ENDED

    def __iter__(self) -> Iterator[Event]:
        """The turn's events until the stream ends or breaks (``why`` then says how)."""
        while True:
            item = self._queue.get()
            if isinstance(item, str):
                self.why = item
                return
            yield item

    def put(self, item: Event | str) -> None:
        """An event of the turn's session, or why there will be no more."""
        self._queue.put(item)


class SessionEvents:
    """The load process's one subscription to ``/event`` (``call``), opened by the first turn
    that finds none live and shared by every turn until it breaks or idles out. ``refused``
    names a status other than 200 in the server's words."""

    def __init__(
        self, http: HttpTransport, call: HttpCall, refused: Callable[[int, bytes], Result]
    ):
        self._http = http
        self._call = call
        self._refused = refused
        self._current: _Subscription | None = None

    @contextmanager
    def watching(self, session: str, socket_timeout_s: float) -> Iterator[Inbox]:
        """The inbox of ``session``'s events, once the subscription is live; Unsubscribed when
        it could not be made. ``socket_timeout_s`` is the socket's backstop if this turn opens
        it. The turn is no longer waited on when the block ends, however it ended."""
        subscription = self._current
        if subscription is None or subscription.over:
            subscription = _Subscription(self._http, self._call, self._refused, socket_timeout_s)
            self._current = subscription
        inbox = subscription.join(session)
        try:
            failed = subscription.connected.get()
            if failed is not None:
                raise Unsubscribed(failed)
            yield inbox
        finally:
            subscription.leave(session, inbox)

    def close(self) -> None:
        """Close the subscription now (a test's or a bench's end); a later turn opens another."""
        if self._current is not None:
            self._current.close()


class _Subscription:
    """One ``/event`` connection's life: the reader greenlet that opened it and routes its
    events, and the turns waiting on it, by session."""

    def __init__(
        self,
        http: HttpTransport,
        call: HttpCall,
        refused: Callable[[int, bytes], Result],
        socket_timeout_s: float,
    ):
        self.waiting: dict[str, Inbox] = {}
        # None once the stream is live; else the sample of every turn that waited on it.
        self.connected: AsyncResult[Result | None] = AsyncResult()
        # Set, without yielding, the moment nothing more will reach a turn that joins.
        self.over = False
        self._idle_since = 0.0
        self._closer: gevent.Greenlet | None = None
        self._reader = gevent.spawn(self._read, http, call, refused, socket_timeout_s)

    def join(self, session: str) -> Inbox:
        """Wait on ``session``'s events from now on (one turn per session at a time)."""
        inbox = self.waiting[session] = Inbox(session)
        return inbox

    def leave(self, session: str, inbox: Inbox) -> None:
        """The turn in ``session`` no longer waits; with none left, the idle clock starts."""
        if self.waiting.get(session) is inbox:
            del self.waiting[session]
        if not self.waiting and not self.over:
            self._idle_since = time.monotonic()
            if self._closer is None:
                self._closer = gevent.spawn_later(LINGER_S, self._close_if_idle)

    def close(self) -> None:
        """End the subscription: its reader stops and its connection closes."""
        self.over = True
        self._reader.kill(block=False)

    def _close_if_idle(self) -> None:
        self._closer = None
        if self.waiting or self.over:
            return
        left = self._idle_since + LINGER_S - time.monotonic()
        if left > 0:
            self._closer = gevent.spawn_later(left, self._close_if_idle)
        else:
            self.close()

    def _read(
        self,
        http: HttpTransport,
        call: HttpCall,
        refused: Callable[[int, bytes], Result],
        socket_timeout_s: float,
    ) -> None:
        """Open the stream, wait for its first event, then route every event until it ends;
        whatever ends it, every turn waiting is told why (``_end``)."""
        status, live = 0, False
        why = STREAM_ENDED
        try:
            with http.stream(call, socket_timeout_s) as answer:
                if 300 <= answer.status < 400:
                    self.connected.set(redirected(Answer(answer.status, b"", answer.location)))
                    return
                if answer.status != 200:
                    self.connected.set(refused(answer.status, answer.read()))
                    return
                status = 200
                events = answer.events()
                # The stream is live once its first event (server.connected) is in.
                if next(events, None) is not None:
                    live = True
                    self.connected.set(None)
                    self._route(events)
        except (ConnectionResetError, BrokenPipeError) as exc:
            why = CONNECTION_RESET if status else failure_detail(exc)
        except ExchangeError as exc:
            why = broken_stream(exc) if status else exc.detail
        except Exception as exc:
            # Anything else (no connection, the socket's backstop): named, so no turn hangs.
            why = failure_detail(exc)
        finally:
            self._end(live, Result(status, FAILED, why))

    def _route(self, events: Iterator[Event]) -> None:
        """Each event to the inbox of the turn waiting on its session, if any. A frame that
        is not an event (not a JSON object with object ``properties``) goes to every turn
        whose session id it holds, whose own reading names it (``bad frame``)."""
        waiting = self.waiting
        for event in events:
            try:
                session = _ENVELOPE.decode(event.data).properties.sessionID
            except msgspec.DecodeError:
                for named in waiting.values():
                    if named.key in event.data:
                        named.put(event)
                continue
            if session is not None and (inbox := waiting.get(session)) is not None:
                inbox.put(event)

    def _end(self, live: bool, failed: Result) -> None:
        """Nothing more will come: turns reading the live stream are told ``failed.detail``
        and stop; turns still waiting for it to go live get ``failed`` as their sample
        (unless it was already refused)."""
        self.over = True
        if live:
            for inbox in self.waiting.values():
                inbox.put(failed.detail)
        elif not self.connected.ready():
            self.connected.set(failed)
        self.waiting.clear()
