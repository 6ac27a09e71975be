"""A scenario field's number checked: read as the record wants it, or one problem naming the
field and the fix.

Every record of the scenario reads its numbers through these, so a bound is said the same
way in every field (``workloads.api_read.share: -1 is outside 0 to 1e+09; ...``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TypeVar

from inputs.bad_input import Problems, label, shown

# What a field of a checked mapping is read as (known_entries).
T = TypeVar("T")


def number(
    value: object, where: str, fix: str, problems: Problems, *, most: float, least: float = 0.0
) -> float | None:
    """A finite number from least to most (None, and one problem, when it is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.add(f"{where}: {shown(value)} is not a number; {fix}")
        return None
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.inf
    if not math.isfinite(as_float):
        problems.add(f"{where}: {shown(value)} is not a finite number; {fix}")
        return None
    if not least <= as_float <= most:
        problems.add(f"{where}: {value:g} is outside {least:g} to {most:g}; {fix}")
        return None
    return as_float


def positive(value: object, where: str, problems: Problems, *, most: float) -> float | None:
    """A number above 0 and at most ``most`` (None, and one problem, when it is not)."""
    fix = f"give a number above 0, at most {most:g}"
    read = number(value, where, fix, problems, most=most)
    if read == 0:
        problems.add(f"{where}: {shown(value)} must be above 0")
        return None
    return read


def fraction(value: object, where: str, problems: Problems) -> float:
    """A fraction from 0 to 1 (0, and one problem, when it is not)."""
    read = number(value, where, "give a fraction between 0 and 1", problems, most=1.0)
    return 0.0 if read is None else read


def whole(value: object, where: str, least: int, most: int, problems: Problems) -> int | None:
    """A whole number from least to most (None, and one problem, when it is not)."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        problems.add(f"{where}: {shown(value)} is not a whole number from {least} to {most}")
        return None
    return value


def known_entries(
    raw: dict,
    where: str,
    known: Mapping[str, object],
    problems: Problems,
    read: Callable[[object, str], T | None],
) -> dict[str, T]:
    """The entries of the mapping at ``where`` whose keys are ``known``, each value as ``read``
    takes it (value, its field's name); an unknown key is a problem, and a value ``read``
    refused (None, its problem added) is left out."""
    given = {}
    for key, value in raw.items():
        if key not in known:
            problems.add(f"{where}.{label(key)}: unknown; use one of {tuple(known)}")
            continue
        read_value = read(value, f"{where}.{key}")
        if read_value is not None:
            given[key] = read_value
    return given
