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
    """A message that must not be missed: ``level`` is "bad", "warn" or "good" (the colour its
    border and background take)."""

    text: str
    level: str
    items: tuple[str, ...] = ()
    # Per item, the id of the section holding its evidence ("" for none); may be empty.
    links: tuple[str, ...] = ()
    kind: str = field(default="banner", init=False)

    @property
    def linked_items(self) -> tuple[tuple[str, str], ...]:
        """(item, section id or "") pairs, for templates that link each item to its evidence."""
        links = self.links or ("",) * len(self.items)
        return tuple(zip(self.items, links, strict=True))


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]
    kind: str = field(default="bullets", init=False)


@dataclass(frozen=True)
class Table:
    """A table; ``empty`` is said instead when it has no rows.

    No table is ever cut off: in the HTML every cell wraps, and on a phone a table of
    more than four columns becomes one card per row, each cell under its column's name.
    """

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    empty: str = "None."
    # True: the table spans the page's width, its columns sharing it (short tables that
    # sit on the first screen, whose cells should line up with the banner above them).
    fit: bool = False
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
    """Title, the first screen's blocks (``glance``, before the contents), then the sections."""

    title: str
    subtitle: str
    sections: tuple[Section, ...]
    glance: tuple[Block, ...] = ()
