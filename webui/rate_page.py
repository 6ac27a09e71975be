"""``/arrival-rate`` on the Locust web UI: see and change the constant arrival rate while it runs.

Locust's own edit dialog changes users, which this kit does not have; this page
changes the one number an open-arrival run is about. GET shows the rate and a
form; POST (form field or JSON ``rate``) changes it. The start form's own rate is
webui/start_form.py's.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from flask import jsonify, redirect, request

from shapes.constant_rate import ConstantRateShape, positive_rate

PATH = "/arrival-rate"

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Arrival rate</title><meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
  background: #f5f7fa; color: #1b2430; }}
header {{ background: #1b2430; color: #fff; padding: 12px 24px; font-weight: 600; }}
main {{ max-width: 560px; margin: 32px auto; background: #fff; border-radius: 8px;
  box-shadow: 0 1px 4px rgba(0, 0, 0, .12); padding: 24px 28px; }}
h1 {{ font-size: 1.4em; margin: 0 0 12px; }}
.now {{ font-size: 2.2em; font-weight: 700; margin: 8px 0 4px; }}
.hint {{ color: #5b6776; font-size: .92em; }}
form {{ display: flex; gap: 8px; align-items: center; margin: 20px 0 8px; }}
input {{ font-size: 1.1em; padding: 6px 10px; width: 8em; border: 1px solid #b8c2cc;
  border-radius: 4px; }}
button {{ font-size: 1em; padding: 7px 18px; border: 0; border-radius: 4px; background: #1976d2;
  color: #fff; cursor: pointer; }}
a {{ color: #1976d2; }}
</style></head><body><header>agent-loadkit</header><main>
<h1>Arrival rate</h1>
<p class="now">Now: <b>{rate}</b> arrivals per second</p>
<p class="hint">Offered on a schedule, whatever the platform answers.</p>
<form method="post"><input name="rate" value="{rate}" inputmode="decimal"> per second
<button type="submit">Set</button></form>
<p class="hint">A change takes effect about a second after it is set, at the same arrival
in every load process.</p>
<p><a href="./">Back to Locust</a></p></main></body></html>"""


def add_rate_page(web_ui, active_shape: Callable[[], object]) -> None:
    """Register the page; it acts on the shape active when it is asked."""
    links = web_ui.template_args.setdefault("extended_csv_files", [])
    links.append({"href": "." + PATH, "title": "Change the arrival rate (while it runs)"})

    @web_ui.app.route(PATH, methods=["GET", "POST"])
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
