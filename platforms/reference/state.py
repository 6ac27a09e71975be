"""The long-lived parts of one target process, shared by every request and job.

One plain object on ``app.state`` instead of module globals, so a test can run
two apps in one interpreter and shutdown knows exactly what to close.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from platforms.reference.auth import TokenSigner
from platforms.reference.db import Database
from platforms.reference.metrics import Counts
from platforms.reference.provider import Provider
from platforms.reference.ratelimit import FixedWindowLimiter
from platforms.reference.settings import Settings
from platforms.reference.worker import BackgroundWorker


@dataclass
class AppState:
    """Settings, pool, provider client, token signer, limiters, live counts and the worker."""

    settings: Settings
    db: Database
    provider: Provider
    run_limiter: FixedWindowLimiter
    login_limiter: FixedWindowLimiter
    signer: TokenSigner = field(default_factory=TokenSigner)
    counts: Counts = field(default_factory=Counts)
    # Set once the worker exists: its jobs need this state, so it is made after it.
    worker: BackgroundWorker = field(init=False)
