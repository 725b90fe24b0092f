"""Markdown heading sections, and packing a section's blocks into chunks without cutting a code block
or a table, keeping an introducing paragraph and the paragraph that explains a code block with it."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from flowbuilder.nodes.splitting.blocks import Block, HeadingIndex, heading_label, parse_blocks
from flowbuilder.nodes.splitting.textsplit import Chunk, split_recursive


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
    """Cut ``text`` at ATX and setext headings of level <= ``max_level`` (not inside fenced code blocks).

    Text before the first heading is a section with no headings. Deeper headings stay in the body.
    """
    sections: list[Section] = []
    stack: list[Block] = []
    body_start = 0
    for block in parse_blocks(text):
        if block.kind != "heading" or block.level > max_level:
            continue
        sections.append(Section(_path(stack), body_start, block.start))
        while stack and stack[-1].level >= block.level:
            stack.pop()
        stack.append(block)
        body_start = block.end
    sections.append(Section(_path(stack), body_start, len(text)))
    return [s for s in sections if text[s.start : s.end].strip()]


def _path(stack: list[Block]) -> tuple[str, ...]:
    return tuple(heading_label(b) for b in stack)


def block_units(text: str, blocks: list[Block]) -> list[list[Block]]:
    """Group blocks that belong together: a heading with what follows it, a paragraph ending in ':'
    with the code block or table it introduces, and a code block or table with the paragraph after it
    (the sentence that explains the code stays with its paragraph)."""
    units: list[list[Block]] = []
    i = 0
    while i < len(blocks):
        group = [blocks[i]]
        while group[-1].kind == "heading" and i + 1 < len(blocks):
            i += 1
            group.append(blocks[i])
        last = group[-1]
        introduces = last.kind == "text" and text[last.start : last.end].endswith(":")
        if introduces and i + 1 < len(blocks) and blocks[i + 1].atomic:
            i += 1
            group.append(blocks[i])
        if group[-1].atomic and i + 1 < len(blocks) and blocks[i + 1].kind == "text":
            i += 1
            group.append(blocks[i])
        units.append(group)
        i += 1
    return units


def pack_blocks(text: str, start: int, end: int, budget: int, overlap: int) -> tuple[list[Chunk], int]:
    """Chunks of ``text[start:end]`` of at most ``budget`` characters made of whole block units.

    A unit too big for the budget is packed block by block; a single code block or table larger than
    the budget stays whole (counted in the second return value); a long paragraph is split recursively.
    Every chunk is an exact slice of ``text``.
    """
    blocks = parse_blocks(text[start:end], base=start)
    return _pack(text, block_units(text, blocks), budget, overlap)


def _pack(text: str, units: list[list[Block]], budget: int, overlap: int) -> tuple[list[Chunk], int]:
    chunks: list[Chunk] = []
    oversize = 0
    current: tuple[int, int] | None = None

    def flush() -> None:
        nonlocal current
        if current is not None:
            chunks.append(Chunk(text[current[0] : current[1]], current[0], current[1]))
            current = None

    for unit in units:
        unit_start, unit_end = unit[0].start, unit[-1].end
        if unit_end - unit_start > budget:
            flush()
            if len(unit) > 1:
                more, big = _pack(text, [[b] for b in unit], budget, overlap)
                chunks.extend(more)
                oversize += big
            elif unit[0].atomic:
                chunks.append(Chunk(text[unit_start:unit_end], unit_start, unit_end))
                oversize += 1
            else:
                chunks.extend(split_recursive(text, budget, overlap, start=unit_start, end=unit_end))
            continue
        if current is not None and unit_end - current[0] > budget:
            flush()
        current = (current[0] if current else unit_start, unit_end)
    flush()
    return chunks, oversize


@dataclass(frozen=True)
class Piece:
    """A packed chunk of a section and the heading path shown on top of it."""

    chunk: Chunk
    path: str


def section_pieces(text: str, max_level: int, size: int, overlap: int) -> tuple[list[Piece], int]:
    """Sections (:func:`heading_sections`) packed into chunks of at most ``size`` characters with their
    heading path on top (:func:`pack_blocks`; the second value counts blocks kept whole over the budget).

    A piece's path is the one in effect where it starts, deeper headings included: a chunk cut from the
    middle of ``#### Set Cookie`` under ``### Response`` reads ``### Response > #### Set Cookie``, since the
    heading is often the only place that names what its list or table is about. A piece that starts with a
    heading shows that heading itself, so its path stops above it.
    """
    blocks = parse_blocks(text)
    index = HeadingIndex(blocks)
    headings = [b for b in blocks if b.kind == "heading"]
    heading_starts = {b.start for b in headings}
    starts = [b.start for b in headings]  # in order: a section's own headings are found by bisection

    def path_at(offset: int) -> str:
        path = index.at(offset)
        return path.rpartition(" > ")[0] if offset in heading_starts else path

    pieces: list[Piece] = []
    oversize = 0
    for section in heading_sections(text, max_level):
        inner = headings[bisect_left(starts, section.start) : bisect_left(starts, section.end)]
        longest = max((len(index.at(b.end)) for b in inner), default=0)
        prefix_room = max(len(section.path), longest) + 2 if section.headings or inner else 0
        budget = max(1, size - prefix_room)
        chunks, big = pack_blocks(text, section.start, section.end, budget, min(overlap, budget))
        oversize += big
        pieces.extend(Piece(chunk, path_at(chunk.start)) for chunk in chunks)
    return pieces, oversize


def with_path(piece: Piece) -> str:
    """The chunk text as a reader gets it: the heading path, a blank line, then the chunk."""
    return f"{piece.path}\n\n{piece.chunk.text}" if piece.path else piece.chunk.text
