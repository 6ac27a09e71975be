"""What this kit adds to Locust's web UI: the arrival-rate page and the live verdict tab.

Locust's own controls speak of users; an open-arrival run is about a rate and
about whether thresholds hold at it, so these are the two things added.
"""
