"""Words of a text as keyword search sees them (shared by the BM25 index and Qdrant's sparse vectors)."""

from __future__ import annotations

import re
from functools import cache

TOKEN = re.compile(r"(?u)\b\w\w+\b")
"""Words of two or more letters or digits (scikit-learn's and bm25s' default pattern)."""


def tokenize(text: str, stopwords: frozenset[str]) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in stopwords]


@cache
def english_stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)
