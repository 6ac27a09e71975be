"""The one User class Locust requires, which the shapes never ask it to spawn.

Locust refuses a locustfile without a User. This kit offers load from dispatchers
on an absolute schedule instead, so the shapes request zero users and the UI's
user count stays at zero rather than pretending dispatchers are people.
"""

from locust import User, task


class OpenArrival(User):
    """Placeholder that keeps Locust's loader satisfied; zero of them ever run."""

    @task
    def nothing(self) -> None:
        """Never runs: the shapes ask for zero users."""
