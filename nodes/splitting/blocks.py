"""Markdown blocks with exact offsets: headings (ATX and setext), fenced code, tables and text paragraphs.

The structure-aware splitters (markdown, sentence, semantic, parent-child) treat a code block or a
table as one unit that is never cut or sentence-segmented, and use the headings for heading paths.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["heading", "code", "table", "text"]

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*(?:(?<=[ \t])#+[ \t]*)?$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


@dataclass(frozen=True, slots=True)
class Block:
    """``text[start:end]`` (surrounding whitespace excluded); ``level``/``title`` for headings."""

    kind: BlockKind
    start: int
    end: int
    level: int = 0
    title: str = ""

    @property
    def atomic(self) -> bool:
        """Code blocks and tables are kept whole by every structure-aware splitter."""
        return self.kind in ("code", "table")


def parse_blocks(text: str, base: int = 0) -> list[Block]:
    """The blocks of ``text`` in order, with offsets shifted by ``base``.

    A blank line ends a paragraph or table; a fence runs to its closing fence (or the end of the text);
    a line starting with ``|`` is a table row; a single text line underlined with ``===`` or ``---``
    is a setext heading (level 1 or 2), as in CommonMark.
    """
    blocks: list[Block] = []
    kind: BlockKind | None = None
    start = end = lines = 0
    fence: str | None = None

    def close() -> None:
        nonlocal kind
        if kind is not None:
            blocks.append(_trimmed(text, kind, start, end, base))
            kind = None

    for match in _LINE.finditer(text):
        line = match.group().rstrip("\r\n")
        line_start, line_end = match.start(), match.start() + len(line)
        fence_match = _FENCE.match(line)
        if fence is not None:
            end = line_end
            if fence_match:
                marker = fence_match.group(1)
                if marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :].strip():
                    fence = None
                    close()
            continue
        if fence_match:
            close()
            fence, kind, start, end = fence_match.group(1), "code", line_start, line_end
            continue
        if not line.strip():
            close()
            continue
        atx = _ATX.match(line)
        if atx:
            close()
            title = (atx.group(2) or "").strip()
            blocks.append(Block("heading", base + line_start, base + line_end, len(atx.group(1)), title))
            continue
        setext = _SETEXT.match(line)
        if setext and kind == "text" and lines == 1:
            level = 1 if setext.group(1)[0] == "=" else 2
            blocks.append(Block("heading", base + start, base + line_end, level, text[start:end].strip()))
            kind = None
            continue
        line_kind: BlockKind = "table" if line.lstrip().startswith("|") else "text"
        if kind != line_kind:
            close()
            kind, start, lines = line_kind, line_start, 0
        end = line_end
        lines += 1
    close()  # an unclosed fence runs to the end of the text
    return blocks


def _trimmed(text: str, kind: BlockKind, start: int, end: int, base: int) -> Block:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Block(kind, base + start, base + end)


def heading_label(block: Block) -> str:
    """A heading as it appears in a heading path, always in ATX form (``## Roles``)."""
    return f"{'#' * block.level} {block.title}".rstrip()


class HeadingIndex:
    """The heading path in effect at any offset of a text (``# Guide > ## Login``); empty before any heading."""

    def __init__(self, blocks: list[Block]) -> None:
        self._starts: list[int] = []
        self._paths: list[str] = []
        stack: list[Block] = []
        for block in blocks:
            if block.kind != "heading":
                continue
            while stack and stack[-1].level >= block.level:
                stack.pop()
            stack.append(block)
            self._starts.append(block.start)
            self._paths.append(" > ".join(heading_label(b) for b in stack))

    def __bool__(self) -> bool:
        return bool(self._starts)

    def at(self, offset: int) -> str:
        index = bisect_right(self._starts, offset) - 1
        return self._paths[index] if index >= 0 else ""
