"""Readable text from PDF pages: layout-aware extraction, then the repairs chunks and previews need.

pypdf's plain mode emits many PDFs (the course's PRD among them) one word per line, which every chunk,
embedding and hit preview then carries. Its layout mode keeps lines whole but pads them with columns
of spaces. After extraction:

* ligatures (ﬁ, ﬂ, ﬀ, ...) and other compatibility characters are folded (NFKC);
* runs of spaces inside a line become one space (indentation is kept as at most 4 spaces, so bullets
  still read as a list);
* a word hyphenated at a line end is joined (``connec-\\ntion`` -> ``connection``);
* footnote markers glued to the word before them are dropped (``for new users5`` -> ``for new users``,
  ``attempts7.`` -> ``attempts.``): one to three digits right after three or more lower-case letters, at a
  line end or before punctuation. Words that end in digits by name (``html5``, ``base64``, ``python3``,
  ``oauth2`` ...) are kept (:data:`DIGIT_WORDS`);
* lines that repeat at the top or bottom of most pages (running headers and footers, with their
  page numbers generalised) and lone page numbers (``7``, ``Page 7``, ``- 7 -``, ``7 of 12``) are removed.

The loader keeps each page's number in the record's metadata, so removing the printed one loses nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_SPACES = re.compile(r"(?<=\S) {2,}(?=\S)")
_INDENT = re.compile(r"^ +")
_HYPHEN_BREAK = re.compile(r"([A-Za-z]{2,})-\n[ \t]*([a-z]{2,})")
_PAGE_NUMBER = re.compile(r"^\s*(?:page\s+)?[-–—]?\s*\d{1,4}\s*[-–—]?\s*(?:(?:of|/)\s*\d{1,4})?\s*$", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_MARKER = re.compile(r"\b([A-Za-z]*[a-z]{3})(\d{1,3})(?=[.,;:!?)\]]+\s|[.,;:!?)\]]*[ \t]*(?:\n|$))", re.MULTILINE)
DIGIT_WORDS = frozenset(
    {"html5", "css3", "base64", "base32", "base16", "python2", "python3", "utf8", "utf16", "utf32", "ipv4", "ipv6",
     "oauth1", "oauth2", "sha256", "sha384", "sha512", "aes128", "aes256", "http2", "http3", "mpeg2", "mpeg4",
     "ext2", "ext3", "ext4", "win32", "win64", "php7", "php8", "pkcs7", "pkcs8", "pkcs12", "sha1", "sha2", "sha3",
     "tls12", "tls13", "fips140"}
)  # fmt: skip
"""Words whose trailing digits belong to them, never taken for a footnote marker."""
EDGE_LINES = 2
"""How many lines at the top and bottom of a page can be a running header or footer."""
MAX_EDGE_CHARS = 100
"""A longer line is body text, never a header or footer."""


def extract_pages(reader: object) -> list[str]:
    """Each page's text in layout mode (plain mode when layout extraction fails on a page), cleaned."""
    pages: list[str] = []
    for page in getattr(reader, "pages", []):
        try:
            text = page.extract_text(extraction_mode="layout") or ""
        except Exception:  # pypdf's layout mode raises on some malformed fonts; plain mode still reads them
            text = page.extract_text() or ""
        pages.append(text)
    return clean_pages(pages)


def clean_pages(pages: list[str]) -> list[str]:
    tidy = [_tidy(page) for page in pages]
    repeated = _running_lines(tidy)
    return [_drop_edges(page, repeated) for page in tidy]


def _tidy(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    lines = []
    for line in text.split("\n"):
        line = line.rstrip()
        indent = _INDENT.match(line)
        body = _SPACES.sub(" ", line.lstrip())
        lines.append(" " * min(4, len(indent.group(0))) + body if indent and body else body)
    joined = drop_footnote_markers(_HYPHEN_BREAK.sub(r"\1\2", "\n".join(lines)))
    return re.sub(r"\n{3,}", "\n\n", joined).strip("\n")


def drop_footnote_markers(text: str) -> str:
    """``users5`` -> ``users`` at a line end or before punctuation (see the module's docstring)."""

    def keep(match: re.Match[str]) -> str:
        word = match.group(1)
        return match.group(0) if match.group(0).lower() in DIGIT_WORDS else word

    return _MARKER.sub(keep, text)


def _key(line: str) -> str:
    return _DIGITS.sub("#", line.strip().lower())


def _edges(lines: list[str]) -> list[str]:
    """The short lines among the first and last :data:`EDGE_LINES` lines with text."""
    content = [line for line in lines if line.strip()]
    return [line for line in content[:EDGE_LINES] + content[-EDGE_LINES:] if len(line.strip()) <= MAX_EDGE_CHARS]


def _running_lines(pages: list[str]) -> set[str]:
    """Edge lines (digits generalised) found on at least half of the pages, when there are 3 or more."""
    if len(pages) < 3:
        return set()
    counts: Counter[str] = Counter()
    for page in pages:
        counts.update({_key(line) for line in _edges(page.split("\n"))})
    return {key for key, count in counts.items() if count >= max(3, (len(pages) + 1) // 2) and key}


def _drop_edges(page: str, repeated: set[str]) -> str:
    lines = page.split("\n")
    content = [i for i, line in enumerate(lines) if line.strip() and len(line.strip()) <= MAX_EDGE_CHARS]
    with_text = [i for i, line in enumerate(lines) if line.strip()]
    edge = set(with_text[:EDGE_LINES] + with_text[-EDGE_LINES:]) & set(content)
    kept = [
        line
        for i, line in enumerate(lines)
        if i not in edge or not (_key(line) in repeated or _PAGE_NUMBER.match(line))
    ]
    return "\n".join(kept).strip("\n")
