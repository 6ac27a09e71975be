"""Locust's own charts, true in open arrival: its Users chart shows the offered rate.

Locust charts users, and in open arrival there are none: its Users chart sat flat at
0 while the schedule ramped, held and burst. Each arrival is one Locust request when
its sample is taken, so Locust's RPS is the completed rate; the chart under it, and
the header's "Users", show the arrivals offered per second over the same seconds, so
the two read against each other (completed falling behind offered is a platform
falling behind). The "Verdict so far" tab says so, since the label cannot.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flask import request

# Locust's page polls this for its charts' next point.
STATS_PATH = "/stats/requests"


def chart_offered_rate(web_ui, offered_rate: Callable[[], float | None]) -> None:
    """Answer Locust's poll with ``offered_rate()`` as its user count while it is not None."""

    @web_ui.app.after_request
    def users_are_the_offered_rate(response):
        if request.path != STATS_PATH or response.status_code != 200:
            return response
        rate = offered_rate()
        if rate is None:
            return response
        payload = response.get_json()
        payload["user_count"] = round(rate, 1)
        response.set_data(json.dumps(payload))
        return response
