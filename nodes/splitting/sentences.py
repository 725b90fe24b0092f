"""Sentence units with exact offsets: pysbd segments the prose, code blocks and tables stay whole.

pysbd (rule-based, pure Python, no downloads) handles abbreviations, decimals and initials that a
regex on ". " gets wrong. Its output is re-located in the source text so every unit keeps offsets.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Literal

from flowbuilder.nodes.splitting.blocks import parse_blocks

UnitKind = Literal["sentence", "code", "table", "heading"]


@dataclass(frozen=True, slots=True)
class Unit:
    """``text[start:end]``: one sentence, a whole code block or table, or a heading with what follows it."""

    start: int
    end: int
    kind: UnitKind


def check_language(language: str) -> str:
    """``language`` if pysbd has rules for it; else a ValueError listing the codes it has."""
    from pysbd.languages import LANGUAGE_CODES

    if language not in LANGUAGE_CODES:
        raise ValueError(
            f"pysbd has no sentence rules for '{language}'; use one of: {', '.join(sorted(LANGUAGE_CODES))}"
        )
    return language


@functools.cache
def _segmenter(language: str) -> Any:
    import pysbd

    return pysbd.Segmenter(language=language, clean=False)


def sentence_spans(text: str, start: int, end: int, language: str = "en") -> list[tuple[int, int]]:
    """The sentences of ``text[start:end]`` as offsets into ``text`` (surrounding whitespace excluded)."""
    spans: list[tuple[int, int]] = []
    cursor = start
    for sentence in _segmenter(language).segment(text[start:end]):
        stripped = sentence.strip()
        if not stripped:
            continue
        found = text.find(stripped, cursor, end)
        if found < 0:  # never expected with clean=False; keep the rest whole rather than lose text
            rest = text[cursor:end].strip()
            if rest:
                lead = cursor + text[cursor:end].index(rest[0])
                spans.append((lead, lead + len(rest)))
            return spans
        spans.append((found, found + len(stripped)))
        cursor = found + len(stripped)
    return spans


def sentence_units(text: str, language: str = "en") -> list[Unit]:
    """Every non-blank character of ``text`` in order as units; a heading is merged into the unit after it
    so that no chunk ends on a bare heading."""
    units: list[Unit] = []
    for block in parse_blocks(text):
        if block.kind == "text":
            units.extend(Unit(s, e, "sentence") for s, e in sentence_spans(text, block.start, block.end, language))
        else:
            units.append(Unit(block.start, block.end, block.kind))
    merged: list[Unit] = []
    pending: int | None = None
    for unit in units:
        if unit.kind == "heading":
            pending = unit.start if pending is None else pending
            continue
        merged.append(Unit(pending, unit.end, unit.kind) if pending is not None else unit)
        pending = None
    if pending is not None:  # headings at the very end
        merged.append(Unit(pending, units[-1].end, "heading"))
    return merged


def pack_units(units: list[Unit], chunk_size: int, overlap_units: int = 0) -> list[list[int]]:
    """Greedy packing: groups of consecutive unit indices spanning at most ``chunk_size`` characters
    (a single larger unit is its own group). The last ``overlap_units`` units of a group start the next
    one when they fit."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index, unit in enumerate(units):
        if current and unit.end - units[current[0]].start > chunk_size:
            groups.append(current)
            keep = current[-overlap_units:] if 0 < overlap_units < len(current) else []
            while keep and unit.end - units[keep[0]].start > chunk_size:
                keep = keep[1:]
            current = keep
        current.append(index)
    if current:
        groups.append(current)
    return groups
