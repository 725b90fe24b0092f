"""The one rule for "this text holds the fact", shared by ``compare``, ``eval``, ``tune`` and the pages.

Before comparing, text and fact are *folded* the same way:

* Unicode NFKC (PDF ligatures such as "ﬁ" become "fi", full-width letters plain ones), lower case;
* markdown markup is dropped: ``**bold**``, ``_em_``, ```code```, heading ``#``s, table pipes (all
  punctuation), a link or image keeps its text and loses its target (``[Billing](billing.md)`` ->
  ``billing``), HTML tags (``<kbd>``, ``<br>``) and MyST roles (``{ref}`pip freeze``` -> ``pip freeze``) go;
* every run of punctuation and whitespace is one space, so "Recovery-codes!" reads "recovery codes".

The fact must then appear as whole words: "10 recovery codes" is not in "100 recovery codes".
One allowance: a footnote marker that PDF text glues to a word ("users5", "security6",
"attempts7") does not hide the word; a fact word of three or more letters matches the same word
followed by one to three digits. The reverse never holds, so "ipv6" is not found in "ipv4".
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_LINK = re.compile(r"!?\[([^\]\n]{0,500})\](?:\([^)\n]{0,2000}\)|\[[^\]\n]{0,200}\])")
_ROLE = re.compile(r"\{[A-Za-z][\w:.-]{0,30}\}(?=`)")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]{0,30}(?:\s[^<>\n]{0,500})?/?>")
_WORD = re.compile(r"[^\W_]+")
MARKER_DIGITS = 3
"""A footnote marker glued to a word has at most this many digits."""


@dataclass(frozen=True)
class Folded:
    """Folded text (`` word word ... ``, one space around every word) and where each word came from."""

    text: str
    starts: tuple[int, ...]
    """Per word: its offset in the NFKC text."""
    ends: tuple[int, ...]
    offsets: tuple[int, ...]
    """Per word: its offset in :attr:`text`."""

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The NFKC-text span of the folded text's ``[start, end)`` (whole words)."""
        first = bisect.bisect_right(self.offsets, start) - 1
        last = bisect.bisect_left(self.offsets, end) - 1
        return self.starts[max(first, 0)], self.ends[max(last, 0)]


def _hidden(text: str) -> list[tuple[int, int]]:
    """Spans of markup that is not text: link targets and HTML tags."""
    spans = [(m.end(1) + 1, m.end()) for m in _LINK.finditer(text)]
    spans += [(m.start(), m.end()) for m in _HTML_TAG.finditer(text)]
    spans += [(m.start(), m.end()) for m in _ROLE.finditer(text)]
    return sorted(spans)


@lru_cache(maxsize=8192)
def fold_words(text: str) -> Folded:
    """``text`` folded (see the module's docstring), with each word's place in the NFKC text."""
    nfkc = unicodedata.normalize("NFKC", text)
    hidden = _hidden(nfkc) if ("[" in nfkc or "<" in nfkc or "{" in nfkc) else []
    words: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    index = 0
    for match in _WORD.finditer(nfkc):
        start = match.start()
        while index < len(hidden) and hidden[index][1] <= start:
            index += 1
        if index < len(hidden) and hidden[index][0] <= start < hidden[index][1]:
            continue
        words.append(match.group(0).lower())
        starts.append(start)
        ends.append(match.end())
    offsets: list[int] = []
    at = 1
    for word in words:
        offsets.append(at)
        at += len(word) + 1
    return Folded(" " + " ".join(words) + " ", tuple(starts), tuple(ends), tuple(offsets))


def fold(text: str) -> str:
    """``text`` as facts are matched in: `` word word ... `` (see the module's docstring)."""
    return fold_words(text).text


@lru_cache(maxsize=4096)
def fact_pattern(fact: str) -> re.Pattern[str] | None:
    """The folded fact as a pattern over folded text (None for a fact with no words)."""
    words = fold(fact).split()
    if not words:
        return None
    parts = [re.escape(w) + (f"\\d{{0,{MARKER_DIGITS}}}" if w.isalpha() and len(w) >= 3 else "") for w in words]
    return re.compile(" " + " ".join(parts) + " ")


def holds_fact(text: str, fact: str | None) -> bool:
    """Whether ``text`` holds ``fact`` as whole words under the folding rules (False for no fact)."""
    pattern = fact_pattern(fact) if fact else None
    return pattern is not None and pattern.search(fold(text)) is not None


def fact_spans(text: str, fact: str) -> list[tuple[int, int]]:
    """Where ``fact`` is in ``text``: spans of the NFKC text, one per occurrence."""
    pattern = fact_pattern(fact)
    if pattern is None:
        return []
    folded = fold_words(text)
    spans = []
    at = 0
    while (match := pattern.search(folded.text, at)) is not None:
        spans.append(folded.span(match.start() + 1, match.end() - 1))
        at = match.end() - 1
    return spans
