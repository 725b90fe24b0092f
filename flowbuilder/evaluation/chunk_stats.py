"""Chunk statistics: how a splitter's chunks relate to the records they were made from.

The inputs are the documents fed INTO the splitter (a whole text with ``metadata["record_spans"]``, or
one document per record) and the chunks it produced, each with ``start``/``end`` offsets in its input
document's text. A record is *cut* when no single chunk contains its whole span; a chunk *starts at a
record boundary* when its first non-space character is a record's first non-space character.
Leading and trailing whitespace of spans and chunks is ignored (splitters strip it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from flowbuilder.data import Document

TokenCounter = Callable[[str], int | None]


@dataclass(frozen=True)
class RecordSpan:
    """Where one record lies in a document's text (character offsets)."""

    record_id: str
    start: int
    end: int


@dataclass(frozen=True)
class ChunkPlacement:
    """Where chunk number ``chunk`` (its index in the chunk list) lies in input document ``document``."""

    chunk: int
    document: int
    start: int
    end: int


@dataclass(frozen=True)
class ChunkStats:
    """How a flow chunked its records: counts, lengths and the records cut."""

    chunks: int
    length_min: int
    length_mean: float
    length_max: int
    records: int
    records_cut: int
    chunks_at_record_start: int
    chunks_with_labels: int | None
    """Chunks holding at least two ``Column:`` labels; None when the source's columns are unknown."""
    chunks_over_token_limit: int | None
    """Chunks longer than the embedder reads; None when it cannot count tokens."""
    token_limit: int | None
    tokens_max: int | None
    unplaced_chunks: int
    """Chunks that could not be traced to an input document (no offsets and text not found)."""

    @property
    def records_cut_share(self) -> float:
        return self.records_cut / self.records if self.records else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["records_cut_share"] = self.records_cut_share
        return data


def record_spans(document: Document) -> list[RecordSpan]:
    """The records inside ``document``: its ``record_spans``, or the whole text as one record."""
    text = document.text
    raw = document.metadata.get("record_spans")
    spans: list[RecordSpan] = []
    if isinstance(raw, list | tuple) and raw:
        for item in raw:
            if isinstance(item, dict):
                rid, start, end = item.get("record_id"), item.get("start"), item.get("end")
            elif isinstance(item, list | tuple) and len(item) == 3:
                rid, start, end = item
            else:
                continue
            if isinstance(start, int) and isinstance(end, int):
                spans.append(RecordSpan(str(rid), *_trim(text, start, end)))
    else:
        rid = document.metadata.get("record_id") or document.metadata.get("source") or ""
        spans.append(RecordSpan(str(rid), *_trim(text, 0, len(text))))
    return [s for s in spans if s.end > s.start]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    start, end = max(0, start), min(len(text), end)
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _key(document: Document) -> tuple[str, str]:
    return document.source, str(document.metadata.get("record_id") or "")


def place_chunks(inputs: Sequence[Document], chunks: Sequence[Document]) -> list[ChunkPlacement]:
    """Trace every chunk to the input document it came from and its (trimmed) span there.

    Candidates are inputs with the chunk's ``source`` and ``record_id`` (chunks keep their record's
    keys), then the same ``source``, then all inputs; the chunk's ``start``/``end`` must point at its
    own text there. Without offsets the chunk's text is searched for.
    """
    by_key: dict[tuple[str, str], list[int]] = {}
    by_source: dict[str, list[int]] = {}
    for index, doc in enumerate(inputs):
        by_key.setdefault(_key(doc), []).append(index)
        by_source.setdefault(doc.source, []).append(index)
    everything = list(range(len(inputs)))
    placements: list[ChunkPlacement] = []
    for number, chunk in enumerate(chunks):
        candidates = by_key.get(_key(chunk)) or by_source.get(chunk.source) or everything
        placement = _place(number, chunk, inputs, candidates)
        if placement is None and candidates is not everything:
            placement = _place(number, chunk, inputs, everything)
        if placement is not None:
            placements.append(placement)
    return placements


def _place(number: int, chunk: Document, inputs: Sequence[Document], candidates: list[int]) -> ChunkPlacement | None:
    start, end = chunk.metadata.get("start"), chunk.metadata.get("end")
    wanted = chunk.text.strip()
    if isinstance(start, int) and isinstance(end, int):
        fallback: ChunkPlacement | None = None
        for index in candidates:
            text = inputs[index].text
            if end > len(text) or start < 0:
                continue
            s, e = _trim(text, start, end)
            if text[s:e] == wanted or " ".join(text[s:e].split()) == " ".join(wanted.split()):
                return ChunkPlacement(number, index, s, e)
            if fallback is None and len(candidates) == 1:
                fallback = ChunkPlacement(number, index, s, e)
        if fallback is not None:
            return fallback
    if not wanted:
        return None
    for index in candidates:
        found = inputs[index].text.find(wanted)
        if found != -1:
            return ChunkPlacement(number, index, found, found + len(wanted))
    return None


def column_names(documents: Sequence[Document]) -> list[str]:
    """The source's column names, from ``metadata["columns"]`` (a dict of values or a list of names)."""
    names: dict[str, None] = {}
    for doc in documents:
        columns = doc.metadata.get("columns")
        if isinstance(columns, dict | list | tuple):  # iterating a dict gives its keys
            names.update(dict.fromkeys(str(c) for c in columns))
    return [n for n in names if n.strip()]


def count_labels(text: str, columns: Sequence[str]) -> int:
    """How many distinct columns appear as ``Column:`` labels in ``text``."""
    return sum(1 for column in columns if f"{column}:" in text)


def compute_chunk_stats(
    inputs: Sequence[Document],
    chunks: Sequence[Document],
    *,
    count_tokens: TokenCounter | None = None,
    max_tokens: int | None = None,
    columns: Sequence[str] | None = None,
) -> ChunkStats:
    """Statistics of ``chunks`` made from ``inputs`` (see the module docstring for the definitions)."""
    lengths = [len(c.text) for c in chunks]
    placements = place_chunks(inputs, chunks)
    per_input: dict[int, list[ChunkPlacement]] = {}
    for placement in placements:
        per_input.setdefault(placement.document, []).append(placement)

    records = 0
    cut = 0
    at_start = 0
    for index, doc in enumerate(inputs):
        spans = record_spans(doc)
        records += len(spans)
        placed = per_input.get(index, [])
        ranges = sorted((p.start, p.end) for p in placed)
        cut += sum(1 for span in spans if not _contained(span, ranges))
        starts = {span.start for span in spans}
        at_start += sum(1 for p in placed if p.start in starts)

    names = list(columns) if columns is not None else column_names([*inputs, *chunks])
    with_labels = sum(1 for c in chunks if count_labels(c.text, names) >= 2) if names else None

    over: int | None = None
    tokens_max: int | None = None
    if count_tokens is not None and chunks:
        counts = [count_tokens(c.text) for c in chunks]
        known = [n for n in counts if n is not None]
        if known:
            tokens_max = max(known)
            over = sum(1 for n in known if max_tokens is not None and n > max_tokens) if max_tokens else None
    return ChunkStats(
        chunks=len(chunks),
        length_min=min(lengths, default=0),
        length_mean=sum(lengths) / len(lengths) if lengths else 0.0,
        length_max=max(lengths, default=0),
        records=records,
        records_cut=cut,
        chunks_at_record_start=at_start,
        chunks_with_labels=with_labels,
        chunks_over_token_limit=over,
        token_limit=max_tokens,
        tokens_max=tokens_max,
        unplaced_chunks=len(chunks) - len(placements),
    )


def _contained(span: RecordSpan, ranges: list[tuple[int, int]]) -> bool:
    return any(start <= span.start and end >= span.end for start, end in ranges)


def whole_records(inputs: Sequence[Document], chunks: Sequence[Document]) -> list[set[str]]:
    """Per chunk (in order): the ids of the records whose whole span lies inside it.

    A chunk of a one-record document holds its record when it covers the record's whole (trimmed)
    text; an untraceable chunk holds none.
    """
    spans = [record_spans(doc) for doc in inputs]
    held: list[set[str]] = [set() for _ in chunks]
    for placement in place_chunks(inputs, chunks):
        held[placement.chunk] = {
            span.record_id
            for span in spans[placement.document]
            if placement.start <= span.start and placement.end >= span.end
        }
    return held


def _chunk_key(document: Document) -> tuple[str, str]:
    return document.source, " ".join(document.text.split())


class WholeRecordIndex:
    """Which records a *retrieved* chunk holds whole, looked up among the chunks a flow ingested.

    A hit comes back from the store as a copy of an ingested chunk (same text, ``source`` and, where
    the store keeps them, ``start``/``end``); it is matched on those. Chunks that share source and
    text but not offsets pool their records. A hit that matches no ingested chunk (another flow's
    entry in a shared collection) holds no record.
    """

    def __init__(self, inputs: Sequence[Document], chunks: Sequence[Document]) -> None:
        self._by_offsets: dict[tuple[str, str, object, object], set[str]] = {}
        self._by_text: dict[tuple[str, str], set[str]] = {}
        for chunk, held in zip(chunks, whole_records(inputs, chunks), strict=True):
            source, text = _chunk_key(chunk)
            offsets = (source, text, chunk.metadata.get("start"), chunk.metadata.get("end"))
            self._by_offsets.setdefault(offsets, set()).update(held)
            self._by_text.setdefault((source, text), set()).update(held)

    def __call__(self, document: Document) -> frozenset[str]:
        source, text = _chunk_key(document)
        offsets = (source, text, document.metadata.get("start"), document.metadata.get("end"))
        found = self._by_offsets.get(offsets)
        if found is None:
            found = self._by_text.get((source, text), set())
        return frozenset(found)
