"""Render a Document as Markdown and as one self-contained HTML page, with jinja2.

Both come from the same templates' input, so they carry the same content; the
HTML inlines its CSS and SVG and refers to nothing outside itself. Neither lets
the platform's words become markup: HTML escapes every value as entities, and
Markdown (which passes inline HTML through to whatever renders it) backslash-escapes
``<``, ``>`` and ``&`` in every value, so an error message holding ``<script>`` reads
as text in both.
"""

from __future__ import annotations

import re

import jinja2

from reports.document import Document

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("reports", "templates"),
    autoescape=jinja2.select_autoescape(["html.j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
# The characters that open HTML (a tag, a comment, an entity) in Markdown; CommonMark reads a
# backslash before any of them as the character itself.
_MD_MARKUP = re.compile(r"([<>&])")


def _md(value: object) -> str:
    """A value as Markdown text: what would open HTML backslash-escaped."""
    return _MD_MARKUP.sub(r"\\\1", str(value))


_ENV.filters["md"] = _md
_ENV.filters["md_cell"] = lambda cell: _md(cell).replace("|", "\\|").replace("\n", " ")


def markdown(doc: Document) -> str:
    """The document as Markdown: blocks separated by exactly one blank line."""
    text = _ENV.get_template("document.md.j2").render(doc=doc)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def html(doc: Document) -> str:
    """The document as one HTML file with inline CSS and inline SVG charts."""
    return _ENV.get_template("document.html.j2").render(doc=doc)
