"""The web UI's Stop button, told apart from every other way a test ends.

Locust stops a test the same way whether the operator pressed Stop or the process
is being shut down (a signal, a quit), but the two mean different things: a Stop
is the operator's choice, which a report must not read as the platform failing,
while a shutdown interrupts the run. The button is the one thing that posts to
``/stop``, so the request itself says which it was.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import request

PATH = "/stop"


def on_stop_button(web_ui, pressed: Callable[[], None]) -> None:
    """Call ``pressed`` when the operator's Stop reaches the web UI, before Locust stops."""

    def before_request() -> None:
        if request.method == "POST" and request.path.rstrip("/").endswith(PATH):
            pressed()

    web_ui.app.before_request(before_request)
