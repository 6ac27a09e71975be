"""How bad input is told: every problem at once, one line each, naming the field, never the
whole value.

The scenario and the fixture are checked field by field before any load, and an
operator who fixes one typo should not meet the next one on the following try, so
their loaders collect every problem and raise them together. A value is shown cut:
an id of a megabyte must not become a line of a megabyte.
"""

from __future__ import annotations

from collections.abc import Iterable

# The most characters of a value a message shows: enough to recognise it, never a wall.
SHOWN_CHARS = 80


def shown(value: object) -> str:
    """``value`` as a message shows it: its repr, cut to SHOWN_CHARS with its length said."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


def label(key: object) -> str:
    """A key as part of a field's name (``workloads.<key>``): as written, cut like ``shown``."""
    text = str(key)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


class BadInput(ValueError):
    """One or more problems with an input; ``problems`` holds one line per problem, each
    naming its field and the fix, and ``str()`` is those lines."""

    def __init__(self, problems: str | list[str]):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class SettingsError(BadInput):
    """An option is wrong; the message names it and the fix."""


class Problems:
    """The problems found so far while checking one input, in the order they were found."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        """Record one problem: a line that starts with the field's name."""
        self.lines.append(line)

    def unknown_keys(self, raw: dict, where: str, known: Iterable[str]) -> None:
        """Record each key of the mapping at ``where`` that is not one of ``known``, naming
        them all as the fix."""
        known = tuple(known)
        for key in raw:
            if key not in known:
                self.add(f"{where}.{label(key)}: unknown; use one of {known}")

    def raise_as(self, error: type[BadInput]) -> None:
        """Raise every problem recorded, as one ``error``; nothing when there is none."""
        if self.lines:
            raise error(self.lines)
