"""Markdown heading sections: where each section's body lies and the heading path above it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*(?:(?<=[ \t])#+[ \t]*)?$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


@dataclass(frozen=True)
class Section:
    """A section body ``text[start:end]`` under ``headings`` (``["# Guide", "## Login"]``)."""

    headings: tuple[str, ...]
    start: int
    end: int

    @property
    def path(self) -> str:
        return " > ".join(self.headings)


def heading_sections(text: str, max_level: int) -> list[Section]:
    """Cut ``text`` at ATX headings of level <= ``max_level`` (not inside fenced code blocks).

    Text before the first heading is a section with no headings. Deeper headings stay in the body.
    """
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    body_start = 0
    fence: str | None = None
    for match in _LINE.finditer(text):
        line = match.group().rstrip("\r\n")
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :].strip():
                fence = None
            continue
        if fence is not None:
            continue
        heading = _HEADING.match(line)
        if heading is None or len(heading.group(1)) > max_level:
            continue
        sections.append(Section(_path(stack), body_start, match.start()))
        level = len(heading.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, (heading.group(2) or "").strip()))
        body_start = match.end()
    sections.append(Section(_path(stack), body_start, len(text)))
    return [s for s in sections if text[s.start : s.end].strip()]


def _path(stack: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(f"{'#' * level} {title}".rstrip() for level, title in stack)
