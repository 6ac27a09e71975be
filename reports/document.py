"""A report as plain data: sections of paragraphs, tables, banners and charts.

The Markdown and the HTML are rendered from the same document, so they cannot
drift apart: the HTML adds the charts' drawings, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reports.charts import Chart


@dataclass(frozen=True)
class Paragraph:
    text: str
    kind: str = field(default="paragraph", init=False)


@dataclass(frozen=True)
class Heading:
    text: str
    kind: str = field(default="heading", init=False)


@dataclass(frozen=True)
class Banner:
    """A message that must not be missed: ``level`` is "invalid", "warning" or "verdict"."""

    text: str
    level: str
    items: tuple[str, ...] = ()
    kind: str = field(default="banner", init=False)


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]
    kind: str = field(default="bullets", init=False)


@dataclass(frozen=True)
class Table:
    """A table; ``empty`` is said instead when it has no rows."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    empty: str = "None."
    kind: str = field(default="table", init=False)


@dataclass(frozen=True)
class Figure:
    """A chart: drawn in the HTML, named (with a pointer to the HTML) in the Markdown."""

    chart: Chart
    kind: str = field(default="figure", init=False)


Block = Paragraph | Heading | Banner | Bullets | Table | Figure


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Document:
    title: str
    subtitle: str
    sections: tuple[Section, ...]
