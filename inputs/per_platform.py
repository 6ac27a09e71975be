"""Values a scenario sets for one platform apart from the rest, each with the reason.

A workload's share and a threshold's limit may differ by platform (opencode has no
uploads; LangGraph's in-memory queue sets a floor the others lack). Either is written
``{platform: {<value>, why}}`` and the why is required: a value that differs without a
reason is a workload quietly left out, or a limit moved to pass.
"""

from __future__ import annotations

import math

from msgspec import Struct

from inputs.bad_input import Problems, label
from inputs.numbers import number


class PlatformShare(Struct, frozen=True, omit_defaults=True):
    """One platform's own share of a workload, with the reason it differs (0: the platform
    does not offer it, as opencode has no uploads)."""

    platform: str
    share: float
    why: str

    @classmethod
    def read(
        cls, raw: object, where: str, most: float, problems: Problems
    ) -> tuple[PlatformShare, ...]:
        """A workload's own shares by platform: {name: {share, why}}."""
        own = _by_platform(raw, where, "share", "give a share of 0 or more", most, problems)
        return tuple(cls(*value) for value in own)


class PlatformLimit(Struct, frozen=True, omit_defaults=True):
    """One platform's own limit for a threshold, with the reason it differs from the rest."""

    platform: str
    limit: float
    why: str

    @classmethod
    def read(
        cls, raw: object, where: str, fix: str, problems: Problems
    ) -> tuple[PlatformLimit, ...]:
        """A threshold's own limits by platform: {name: {limit, why}}, ``fix`` the limit's unit."""
        own = _by_platform(raw, where, "limit", fix, math.inf, problems)
        return tuple(cls(*value) for value in own)


def _by_platform(
    raw: object, where: str, key: str, fix: str, most: float, problems: Problems
) -> list[tuple[str, float, str]]:
    """{platform: {<key>, why}} as (platform, value, why), each bad entry one problem."""
    if not isinstance(raw, dict):
        problems.add(f"{where}: expected a mapping {{platform: {{{key}, why}}}}")
        return []
    values = []
    for name, spec in raw.items():
        at = f"{where}.{label(name)}"
        if not isinstance(spec, dict) or not str(spec.get("why") or "").strip():
            problems.add(f"{at}: expected {{{key}, why}}, the why saying what sets it apart")
            continue
        value = number(spec.get(key), f"{at}.{key}", fix, problems, most=most)
        if value is not None:
            values.append((str(name), value, str(spec["why"])))
    return values
