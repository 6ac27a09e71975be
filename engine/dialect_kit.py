"""What the platforms' dialects are written with, so every platform names a broken turn, a
redirect and its own words alike: the seam (engine/seam.py) is the contract, this is the
shared help for implementing it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from engine.http import BACKSTOP_TIMEOUT_S, HttpCall, HttpTransport
from engine.http1 import CLOSED_IN_BODY, Answer, ExchangeError, failure_detail
from engine.samples import FAILED, Result, classify
from engine.seam import Attempt, Turn
from engine.sse import StreamedAnswer

# The platform's words are kept to this many characters: enough to say what broke,
# short enough for a table cell.
WORDS_MAX = 80
# Ids in a message would make every failure its own group; they read as <id>.
_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SPACE = re.compile(r"\s+")

# How a chat turn that broke is named, in the same words on every platform:
# the platform ended the stream in good order (a WebSocket close frame, the end of
# the event stream's body) without the turn's final frame,
STREAM_ENDED = "stream ended before complete"
# the connection closed (a FIN) without that, or was reset (an RST),
CONNECTION_CLOSED = "connection closed before complete"
CONNECTION_RESET = "connection reset before complete"
# a frame or event that is not a JSON object, a stop (or cancel) nobody asked for.
BAD_FRAME = "bad frame: not a JSON object"
STOPPED_UNASKED = "stopped unasked"


def error_frame(data: object) -> str:
    """``error frame: <message>``, the reason a chat turn failed as the platform gave it."""
    message = data.get("message") if isinstance(data, dict) else None
    return f"error frame: {words(str(message))}" if message else "error frame"


def broken_stream(exc: ExchangeError) -> str:
    """How a streamed turn whose body broke is named: the connection closed (a FIN inside
    the body), else the stream was not one (a bad chunk, a line past the bound)."""
    if exc.detail == CLOSED_IN_BODY:
        return CONNECTION_CLOSED
    return f"bad event stream: {words(exc.detail)}"


def redirected(answer: Answer) -> Result:
    """A 3xx, failed and named by where it pointed (``HTTP 302 to /login``): the kit never
    follows one, since that would send the request a second time, elsewhere."""
    if answer.location is None:
        return Result(answer.status, FAILED, f"HTTP {answer.status}, no Location", len(answer.body))
    detail = f"HTTP {answer.status} to {words(answer.location)}"
    return Result(answer.status, FAILED, detail, len(answer.body))


def event_stream_turn(
    http: HttpTransport,
    call: HttpCall,
    attempt: Attempt,
    timeout_s: float,
    refused: Callable[[int, bytes], Result],
    read: Callable[[StreamedAnswer, Turn], Result],
) -> Result:
    """A chat turn streamed as server-sent events on the kit's own connection (agno,
    LangGraph): a 3xx is ``redirected``, another status than 200 is ``refused`` in the
    platform's words, and a 200's events are ``read`` by the platform's dialect. How the
    body breaks is named here, alike on every such platform: a reset, a closed connection
    or a bad stream; a break before the status line as the HTTP transport names it."""
    sent = attempt.sent()
    try:
        with http.stream(call, socket_backstop_s(timeout_s)) as answer:
            if 300 <= answer.status < 400:
                return redirected(Answer(answer.status, b"", answer.location))
            if answer.status != 200:
                return refused(answer.status, answer.read())
            turn = Turn(attempt, sent, 200)
            try:
                return read(answer, turn)
            except (ConnectionResetError, BrokenPipeError):
                return turn.failed(CONNECTION_RESET)
            except ExchangeError as exc:
                return turn.failed(broken_stream(exc))
    except ExchangeError as exc:
        return Result(0, FAILED, exc.detail)


def cancel_asked(http: HttpTransport, call: HttpCall, accepted: tuple[int, ...]) -> Result | None:
    """Ask the platform to cancel a streamed run with ``call``: None when it answered one of
    ``accepted``, else what went wrong, named as the cancel's (``cancel: HTTP 500``), not
    mistaken for the stream's own break."""
    try:
        answer = http.send(call)
        status, body = answer.status, answer.body
    except Exception as exc:
        return Result(0, FAILED, f"cancel: {failure_detail(exc)}")
    if status in accepted:
        return None
    return Result(status, FAILED, f"cancel: HTTP {status}", len(body))


def socket_backstop_s(timeout_s: float) -> float:
    """A chat socket's own timeout: a backstop only, well past the turn's timeout, so that the
    dispatcher's deadline (counted from the send) always ends a silent turn as ``timed out``
    instead of racing it and leaving a failure named by the socket's exception."""
    return max(BACKSTOP_TIMEOUT_S, 2 * timeout_s)


def words(text: str) -> str:
    """The platform's words, on one line, ids masked, trimmed to WORDS_MAX characters."""
    text = _ID.sub("<id>", _SPACE.sub(" ", text).strip())
    return text if len(text) <= WORDS_MAX else text[: WORDS_MAX - 3].rstrip() + "..."


def detail_result(status: int, body: bytes, *, plain_text: bool = False) -> Result:
    """What the status alone says (2xx ok, 429 shed, else failed), a failure in the platform's
    words: FastAPI's and Starlette's ``{"detail": ...}`` as ``HTTP 500: <detail>``; with
    ``plain_text``, a body that is not JSON is taken as the words."""
    result = classify(status, len(body))
    if result.outcome != FAILED:
        return result
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        is_text = plain_text and body[:1] not in (b"{", b"[")
        detail = body.decode("utf-8", "replace").strip() if is_text else None
    if detail:
        result = result._replace(detail=f"HTTP {status}: {words(str(detail))}")
    return result
