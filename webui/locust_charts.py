"""Locust's own charts, true in open arrival: its Users chart shows the arrivals in flight.

Locust charts users, and in open arrival there are none: its Users chart sat flat at
0 while hundreds of requests were outstanding. What a user count means in a closed
loop (requests outstanding at once) is, in open arrival, the arrivals due so far that
have no sample yet, so that is what the chart and the header's "Users" show while a
run lasts (the "Verdict so far" tab says so). The request rate needs no change: each
arrival is one Locust request when its sample is taken, so Locust's RPS is the
completed rate and its request count the offered count.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flask import request

# Locust's page polls this for its charts' next point.
STATS_PATH = "/stats/requests"


def chart_in_flight(web_ui, in_flight: Callable[[], int | None]) -> None:
    """Answer Locust's poll with ``in_flight()`` as its user count while it is not None."""

    @web_ui.app.after_request
    def users_are_in_flight(response):
        if request.path != STATS_PATH or response.status_code != 200:
            return response
        count = in_flight()
        if count is None:
            return response
        payload = response.get_json()
        payload["user_count"] = count
        response.set_data(json.dumps(payload))
        return response
