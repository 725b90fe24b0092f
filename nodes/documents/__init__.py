"""Readers for the document formats ``loader.file`` understands beyond CSV/JSON/PDF/text.

Each reader is a maintained library plus a thin adapter (see docs/decisions/0015-document-formats.md for why these
libraries): mammoth (.docx), python-pptx (.pptx), odfdo (.odt), BeautifulSoup + markdownify (.html, .htm, and the
chapters of an .epub read with ebooklib), openpyxl (.xlsx, .xlsm) and xlrd (.xls). Text documents come out as
Markdown-like text (:mod:`.markdown`); workbooks as rows of cells (:mod:`.sheets`). Every reader works within the
limits of :mod:`.safety` and turns any failure of its library into one :class:`~flowbuilder.errors.NodeError`
line naming the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from flowbuilder.nodes.documents.office import Section, read_docx, read_odt, read_pptx
from flowbuilder.nodes.documents.web import read_epub, read_html

DOCUMENT_READERS: dict[str, Callable[[Path], list[Section]]] = {
    ".docx": read_docx,
    ".pptx": read_pptx,
    ".odt": read_odt,
    ".html": read_html,
    ".htm": read_html,
    ".epub": read_epub,
}
"""Text documents: each file gives one or more sections (a slide, a chapter) of Markdown-like text."""
SHEET_EXTENSIONS = (".xlsx", ".xlsm", ".xls")
TABLE_EXTENSIONS = (".csv", ".tsv")
TEXT_EXTENSIONS = (".txt", ".md", ".markdown")
SUPPORTED_EXTENSIONS = (*TABLE_EXTENSIONS, ".json", ".pdf", *TEXT_EXTENSIONS, *SHEET_EXTENSIONS, *DOCUMENT_READERS)
"""Every extension ``loader.file`` reads, in the order messages list them."""

__all__ = [
    "DOCUMENT_READERS",
    "SHEET_EXTENSIONS",
    "SUPPORTED_EXTENSIONS",
    "TABLE_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "Section",
    "supported_text",
]


def supported_text() -> str:
    """``.csv, .tsv, .xlsx, ...``: what messages and the file picker list."""
    return ", ".join(SUPPORTED_EXTENSIONS)
