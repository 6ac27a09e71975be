"""``/arrival-rate`` on the Locust web UI: see and change the constant arrival rate while it runs.

Locust's own edit dialog changes users, which this kit does not have; this page
changes the one number an open-arrival run is about. GET shows the rate and a
form; POST (form field or JSON ``rate``) changes it.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from flask import jsonify, redirect, request

from shapes.constant_rate import ConstantRateShape, positive_rate

PAGE = """<!doctype html><title>Arrival rate</title>
<h1>Arrival rate</h1>
<p>Now: <b>{rate}</b> arrivals per second.
A change takes effect about a second after it is set.</p>
<form method="post"><input name="rate" value="{rate}" size="8"> per second
<button type="submit">Set</button></form>
<p><a href="./">Back to Locust</a></p>"""


def add_rate_page(web_ui, active_shape: Callable[[], object]) -> None:
    """Register the page on the web UI; it acts on whichever shape is active when called."""

    @web_ui.app.route("/arrival-rate", methods=["GET", "POST"])
    @web_ui.auth_required_if_enabled
    def arrival_rate():
        """The form (GET), or a new rate (POST) applied to the constant-rate shape."""
        shape = active_shape()
        if not isinstance(shape, ConstantRateShape):
            message = "the four-phase shape is active; start locust with --rate to set a rate"
            return jsonify({"success": False, "message": message}), 409
        if request.method == "GET":
            return PAGE.format(rate=html.escape(f"{shape.rate or 0:g}"))
        payload = request.get_json(silent=True) or request.form
        rate = positive_rate(payload.get("rate"))
        if rate is None:
            message = f"rate: {payload.get('rate')!r} is not a number above 0"
            return jsonify({"success": False, "message": message}), 400
        shape.set_rate(rate)
        if request.form:
            return redirect(request.path)
        return jsonify({"success": True, "rate": rate})
