"""LangChain-identical character splitting with exact character offsets.

n8n and LangFlow both run LangChain's ``CharacterTextSplitter`` / ``RecursiveCharacterTextSplitter``,
so a flow imported from them must produce the very same chunks here. The algorithms below are a
faithful port (``_split_text_with_regex``, ``_merge_splits``, ``_join_docs`` with whitespace
stripping, the recursive separator descent) for *literal* separators, with one addition: every piece
is carried as ``(start, end)`` offsets into the original text, so each chunk knows exactly where it
came from. LangChain's ``add_start_index`` re-finds a chunk with ``str.find``; tracking offsets gives
the same answer on ordinary text and stays right on repetitive text where ``find`` can land early.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

KeepSeparator = bool | Literal["start", "end"]

DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", " ", "")

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk's text and where it lies in the source text (``source[start:end]``)."""

    text: str
    start: int
    end: int


def check_sizes(chunk_size: int, chunk_overlap: int) -> str | None:
    """LangChain's constructor checks, as a message (or None when the sizes are usable)."""
    if chunk_size <= 0:
        return f"chunk_size must be > 0, got {chunk_size}."
    if chunk_overlap < 0:
        return f"chunk_overlap must be >= 0, got {chunk_overlap}."
    if chunk_overlap > chunk_size:
        return f"chunk_overlap ({chunk_overlap}) is larger than chunk_size ({chunk_size}); make it smaller."
    return None


def split_pieces(text: str, base: int, separator: str, keep: KeepSeparator) -> list[Span]:
    """Split ``text`` (found at ``base`` in the source) on a literal separator, like LangChain's
    ``_split_text_with_regex``: empty pieces dropped; with ``keep`` the separator stays attached to
    the following piece (``True``/``"start"``) or the preceding one (``"end"``)."""
    if not separator:
        return [(base + i, base + i + 1) for i in range(len(text))]
    positions: list[int] = []
    sep_len = len(separator)
    found = text.find(separator)
    while found != -1:
        positions.append(found)
        found = text.find(separator, found + sep_len)
    spans: list[Span] = []
    if not keep:
        previous = 0
        for pos in positions:
            spans.append((previous, pos))
            previous = pos + sep_len
        spans.append((previous, len(text)))
    elif keep == "end":
        previous = 0
        for pos in positions:
            spans.append((previous, pos + sep_len))
            previous = pos + sep_len
        spans.append((previous, len(text)))
    else:
        first = positions[0] if positions else len(text)
        spans.append((0, first))
        for index, pos in enumerate(positions):
            following = positions[index + 1] if index + 1 < len(positions) else len(text)
            spans.append((pos, following))
    return [(base + s, base + e) for s, e in spans if e > s]


def merge_pieces(source: str, pieces: list[Span], separator: str, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    """LangChain's ``_merge_splits``: greedily pack pieces joined by ``separator`` into chunks of at most
    ``chunk_size`` characters (a single larger piece stays whole), carrying up to ``chunk_overlap``
    characters of trailing pieces into the next chunk. Whitespace is stripped from each chunk."""
    sep_len = len(separator)
    chunks: list[Chunk] = []
    current: deque[Span] = deque()
    total = 0
    for piece in pieces:
        length = piece[1] - piece[0]
        if current and total + length + sep_len > chunk_size:
            chunk = _join(source, current, separator)
            if chunk is not None:
                chunks.append(chunk)
            while total > chunk_overlap or (total + length + (sep_len if current else 0) > chunk_size and total > 0):
                first = current[0]
                total -= (first[1] - first[0]) + (sep_len if len(current) > 1 else 0)
                current.popleft()
        current.append(piece)
        total += length + (sep_len if len(current) > 1 else 0)
    chunk = _join(source, current, separator)
    if chunk is not None:
        chunks.append(chunk)
    return chunks


def _join(source: str, pieces: deque[Span], separator: str) -> Chunk | None:
    joined = separator.join(source[s:e] for s, e in pieces)
    text = joined.strip()
    if not text:
        return None
    lead = len(joined) - len(joined.lstrip())
    trail = len(joined) - len(joined.rstrip())
    return Chunk(text, _front_offset(pieces, lead, len(separator)), _back_offset(pieces, trail, len(separator)))


def _front_offset(pieces: deque[Span], skip: int, sep_len: int) -> int:
    """Source offset of character ``skip`` of the joined text. A merge separator always sits right
    after its piece in the source (it is the occurrence that ended the piece), so gaps map exactly
    even when LangChain dropped empty pieces and the joined text is no longer a substring."""
    for start, end in pieces:
        if skip < end - start:
            return start + skip
        skip -= end - start
        if skip < sep_len:
            return end + skip
        skip -= sep_len
    return pieces[-1][1]


def _back_offset(pieces: deque[Span], skip: int, sep_len: int) -> int:
    """Source offset just past the joined text minus ``skip`` trailing characters (mirror of the above)."""
    for start, end in reversed(pieces):
        if skip < end - start:
            return end - skip
        skip -= end - start
        if skip < sep_len:
            return start - skip
        skip -= sep_len
    return pieces[0][0]


def split_character(
    text: str, separator: str, chunk_size: int, chunk_overlap: int, keep_separator: KeepSeparator = False
) -> list[Chunk]:
    """``CharacterTextSplitter(separator, chunk_size, chunk_overlap, keep_separator).split_text(text)``."""
    pieces = split_pieces(text, 0, separator, keep_separator)
    return merge_pieces(text, pieces, "" if keep_separator else separator, chunk_size, chunk_overlap)


def split_recursive(
    text: str,
    chunk_size: int,
    chunk_overlap: int,
    separators: list[str] | tuple[str, ...] = DEFAULT_SEPARATORS,
    keep_separator: KeepSeparator = True,
    *,
    start: int = 0,
    end: int | None = None,
) -> list[Chunk]:
    """``RecursiveCharacterTextSplitter(...).split_text(text[start:end])`` with offsets into ``text``."""
    stop = len(text) if end is None else end
    return _recursive(text, start, stop, list(separators) or [""], chunk_size, chunk_overlap, keep_separator)


def _recursive(
    source: str, start: int, end: int, separators: list[str], size: int, overlap: int, keep: KeepSeparator
) -> list[Chunk]:
    text = source[start:end]
    if keep and len(text) < size:
        # shortcut with the same result: kept separators make the pieces tile the text, every piece is
        # shorter than the size and they all fit, so LangChain's split-and-merge yields text.strip()
        stripped = text.strip()
        if not stripped:
            return []
        lead = len(text) - len(text.lstrip())
        return [Chunk(stripped, start + lead, start + lead + len(stripped))]
    separator = separators[-1]
    remaining: list[str] = []
    for index, candidate in enumerate(separators):
        if not candidate:
            separator = candidate
            break
        if candidate in text:
            separator = candidate
            remaining = separators[index + 1 :]
            break
    pieces = split_pieces(text, start, separator, keep)
    merge_separator = "" if keep else separator
    chunks: list[Chunk] = []
    good: list[Span] = []
    for piece in pieces:
        if piece[1] - piece[0] < size:
            good.append(piece)
            continue
        if good:
            chunks.extend(merge_pieces(source, good, merge_separator, size, overlap))
            good = []
        if remaining:
            chunks.extend(_recursive(source, piece[0], piece[1], remaining, size, overlap, keep))
        else:
            # LangChain appends an oversize piece as it is (not stripped)
            chunks.append(Chunk(source[piece[0] : piece[1]], piece[0], piece[1]))
    if good:
        chunks.extend(merge_pieces(source, good, merge_separator, size, overlap))
    return chunks


def unescape_separator(separator: str) -> str:
    r"""How LangFlow's Split Text reads its separator field: ``/n`` and ``/t`` typos fixed, then the
    escape ``\n`` turned into a newline (we also accept ``\t`` and ``\r``)."""
    if separator == "/n":
        return "\n"
    if separator == "/t":
        return "\t"
    return separator.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
