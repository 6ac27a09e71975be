"""The one User class Locust requires, which the shapes never ask it to spawn.

Locust refuses a locustfile without a User. This kit offers load from dispatchers
on an absolute schedule instead, so the shapes request zero users and the UI's
user count stays at zero rather than pretending dispatchers are people.
"""

from locust import User, task
from locust.exception import StopUser


class OpenArrival(User):
    """Placeholder that keeps Locust's loader satisfied; the shapes spawn none of it."""

    @task
    def stop_at_once(self) -> None:
        """Only reachable without this kit's shapes (class picker on "Default"): do no work."""
        raise StopUser()
