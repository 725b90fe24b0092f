"""HTML to Markdown-like text: the one shape every text document is turned into before chunking.

Word (.docx, through mammoth), web pages and e-book chapters all become HTML first, then this converter (markdownify
over BeautifulSoup) writes ATX headings (``## Title``), ``-`` lists with their nesting, and tables as pipe tables
whose first row is the header (one table row per line, so a person and the markdown-aware splitter read it as
rows). What never helps retrieval goes: scripts, styles, navigation, the site's footer, images (their alt text
stays), link targets that lead nowhere (in-page anchors, ``javascript:``, ``data:``).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from markdownify import MarkdownConverter

_DROPPED = ["script", "style", "noscript", "template", "svg", "nav", "iframe", "object", "embed", "head", "button"]
_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING = re.compile(r"[ \t]+\n")
_ONE_SPACE_INDENT = re.compile(r"^ (?=\S)", re.M)  # left by an inline element at a line start; means nothing


class _Converter(MarkdownConverter):
    def convert_img(self, el: Any, text: str, parent_tags: Any) -> str:
        alt = " ".join(str(el.attrs.get("alt") or "").split())
        return f" {alt} " if alt else ""

    def convert_a(self, el: Any, text: str, parent_tags: Any) -> str:
        href = str(el.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "data:", "mailto:")) or href == text.strip():
            return text
        return str(super().convert_a(el, text, parent_tags))  # type: ignore[misc]  # missing from its stubs


def html_to_markdown(html: Any) -> str:
    """Markdown-like text of ``html`` (a string or a BeautifulSoup tree)."""
    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    if isinstance(html, str | bytes):
        with warnings.catch_warnings():  # an e-book's XHTML chapters are read as HTML on purpose
            warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
            soup = BeautifulSoup(html, "lxml")
    else:
        soup = html
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    body = soup.find("body")
    for footer in body.find_all("footer", recursive=False) if body is not None else []:
        footer.decompose()  # the site's footer (an article's own footer, inside <article> or <main>, stays)
    converter = _Converter(
        heading_style="ATX",
        bullets="-",
        escape_asterisks=False,
        escape_underscores=False,
        table_infer_header=True,
        strip_document="strip",
        wrap=True,  # whitespace in running text (line breaks of the HTML source included) becomes one space
        wrap_width=None,  # ... and no line is wrapped again
    )
    text = converter.convert_soup(soup)
    return tidy(text)


def tidy(text: str) -> str:
    """No trailing spaces, at most one blank line in a row, pipe-table cells without alignment padding."""
    text = _TRAILING.sub("\n", text.replace("\r\n", "\n").replace("\xa0", " "))
    text = _ONE_SPACE_INDENT.sub("", text)
    lines = [_compact_row(line) if line.startswith("|") else line for line in text.split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def _compact_row(line: str) -> str:
    cells = [" ".join(cell.split()) for cell in line.strip().strip("|").split("|")]
    if all(re.fullmatch(r":?-+:?", cell) for cell in cells if cell):
        cells = ["---" for _ in cells]
    return "| " + " | ".join(cells) + " |"
