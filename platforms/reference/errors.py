"""Every failure answers with the contract's one error body.

``{"error": {"code", "message", "details"}}`` for our own refusals, FastAPI's
validation errors (422 with ``details.fields``), unknown routes, and anything
unexpected, including a pool timeout (500), so a client never has to guess the
shape of a failure.

Anything unexpected is answered by the handler for ``Exception``, which Starlette
runs in its outermost middleware and then re-raises, as AgenticOS's does: uvicorn
then closes that keep-alive connection without having announced ``Connection:
close`` (and logs the traceback), so a request a client writes on it at that
moment is reset. A pool timeout is such an exception on AgenticOS, so it is here.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

# Stable machine-readable codes for each status this API answers.
CODES = {
    400: "bad_request",
    401: "unauthorized",
    402: "budget_exceeded",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_error",
    503: "service_unavailable",
}


class APIError(Exception):
    """A refusal the API means to give: status, message, optional details and headers."""

    def __init__(
        self,
        status: int,
        message: str,
        details: dict | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details or {}
        self.headers = headers


def error_body(status: int, message: str, details: dict | None = None) -> dict:
    """The contract's error body for ``status``."""
    return {
        "error": {"code": CODES.get(status, "error"), "message": message, "details": details or {}}
    }


def error_response(
    status: int,
    message: str,
    details: dict | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A JSON response carrying the error body."""
    return JSONResponse(error_body(status, message, details), status_code=status, headers=headers)


def _field_name(location: tuple) -> str:
    return ".".join(str(part) for part in location)


def install_error_handlers(app: FastAPI) -> None:
    """Route every exception type the app can raise to the one error body."""

    @app.exception_handler(APIError)
    async def _api_error(_request: Request, exc: APIError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.details, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = {_field_name(err["loc"]): err["msg"] for err in exc.errors()}
        return error_response(422, "the request is not valid", {"fields": fields})

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, PoolTimeoutError):
            return error_response(500, "no database connection available (pool timeout)")
        return error_response(500, "internal error")
