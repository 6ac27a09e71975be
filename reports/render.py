"""Render a Document as Markdown and as one self-contained HTML page, with jinja2.

Both come from the same templates' input, so they carry the same content; the
HTML inlines its CSS and SVG and refers to nothing outside itself.
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
_ENV.filters["md_cell"] = lambda cell: str(cell).replace("|", "\\|").replace("\n", " ")


def markdown(doc: Document) -> str:
    """The document as Markdown: blocks separated by exactly one blank line."""
    text = _ENV.get_template("document.md.j2").render(doc=doc)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def html(doc: Document) -> str:
    """The document as one HTML file with inline CSS and inline SVG charts."""
    return _ENV.get_template("document.html.j2").render(doc=doc)
