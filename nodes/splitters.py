"""Splitter nodes: recursive, fixed size, character (LangFlow's Split Text), markdown sections, one record
per chunk (sentence, semantic and parent-child splitters live in their own modules).

Every chunk keeps its input document's metadata (except ``record_spans``) and adds ``chunk_index``,
``start`` and ``end`` (character offsets in the input document's text). When the input document holds
several records (``record_spans``), each chunk also gets ``record_ids``: the records it overlaps, so a
comparison can tell which records a chunking strategy cut apart.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from typing_extensions import TypeVar

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document
from flowbuilder.errors import NodeError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str, positive_int, to_int, unescape
from flowbuilder.formats.n8n_table import LC, SPLITTER_OUT, token_chars
from flowbuilder.node import ConfigT, EmptyConfig, Node, RunContext
from flowbuilder.nodes.io import ChunksOut, DocumentsIn
from flowbuilder.nodes.splitting.blocks import HeadingIndex, parse_blocks
from flowbuilder.nodes.splitting.markdown import section_pieces, with_path
from flowbuilder.nodes.splitting.textsplit import (
    DEFAULT_SEPARATORS,
    Chunk,
    KeepSeparator,
    check_sizes,
    split_character,
    split_recursive,
    unescape_separator,
)
from flowbuilder.registry import register_node


class RecordSpans:
    """Which records of a multi-record document a character range overlaps (binary search)."""

    def __init__(self, spans: list[Any]) -> None:
        ordered = sorted((int(s[1]), int(s[2]), str(s[0])) for s in spans)
        self._starts = [s for s, _, _ in ordered]
        self._ends = [e for _, e, _ in ordered]
        self._ids = [i for _, _, i in ordered]
        self._running_max_end: list[int] = []
        best = -1
        for end in self._ends:
            best = max(best, end)
            self._running_max_end.append(best)

    def overlapping(self, start: int, end: int) -> list[str]:
        found: list[str] = []
        # spans are disjoint in practice; the running max keeps this right even if they are not
        index = bisect_right(self._running_max_end, start)
        while index < len(self._starts) and self._starts[index] < end:
            if self._ends[index] > start:
                found.append(self._ids[index])
            index += 1
        return found


def each_document(
    documents: list[Document], ctx: RunContext
) -> Iterator[tuple[Document, dict[str, Any], RecordSpans | None]]:
    """Every document with the metadata its chunks inherit and its record lookup; reports progress."""
    for number, document in enumerate(documents):
        ctx.progress(number, len(documents))
        inherited = {k: v for k, v in document.metadata.items() if k != "record_spans"}
        spans = document.metadata.get("record_spans")
        yield document, inherited, RecordSpans(spans) if spans else None
    ctx.progress(len(documents), len(documents))


MARKDOWN_SUFFIXES = (".md", ".markdown")


def heading_index(document: Document) -> HeadingIndex | None:
    """The heading lookup of a markdown document (by its source name), None for other text or no headings."""
    source = str(document.metadata.get("source", "")).lower()
    if not source.endswith(MARKDOWN_SUFFIXES):
        return None
    index = HeadingIndex(parse_blocks(document.text))
    return index or None


def chunk_documents(documents: list[Document], split: Callable[[str], list[Chunk]], ctx: RunContext) -> list[Document]:
    """Apply ``split(text) -> list[Chunk]`` to every document and build chunk documents (a chunk of a
    markdown file also gets the ``heading_path`` in effect where it starts, for citations)."""
    chunks: list[Document] = []
    for document, inherited, lookup in each_document(documents, ctx):
        headings = heading_index(document)
        for index, piece in enumerate(split(document.text)):
            metadata = {**inherited, "chunk_index": index, "start": piece.start, "end": piece.end}
            if headings is not None:
                metadata["heading_path"] = headings.at(piece.start)
            if lookup is not None:
                metadata["record_ids"] = lookup.overlapping(piece.start, piece.end)
            chunks.append(Document(text=piece.text, metadata=metadata))
    return chunks


def _size_problem(config: BaseModel) -> str | None:
    # the record splitter's config has no sizes, so there is nothing to check
    size, overlap = getattr(config, "chunk_size", None), getattr(config, "chunk_overlap", None)
    if size is None or overlap is None:
        return None
    return check_sizes(size, overlap)


SplitInputsT = TypeVar("SplitInputsT", bound=DocumentsIn, default=DocumentsIn)


class SplitterNode(Node[ConfigT, SplitInputsT, ChunksOut]):
    """What every splitter shares: the ports, the chunk-size check before running, and the summary.

    Subclasses implement :meth:`split_documents`.
    """

    category = "Splitters"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.SPLITS, Capability.LOCAL_ONLY})
    # each document is split on its own, so a stream of records can be split batch by batch
    stream_in: ClassVar[str | None] = "documents"
    stream_out: ClassVar[str | None] = "chunks"

    @classmethod
    def config_problems(cls, config: ConfigT) -> list[tuple[str | None, str]]:
        problem = _size_problem(config)
        return [(None, problem)] if problem else []

    def run(self, inputs: SplitInputsT, ctx: RunContext) -> ChunksOut:
        # checked again here because a node can be run without the graph validation
        problem = _size_problem(self.config)
        if problem:
            raise NodeError(problem)
        return {"chunks": self.split_documents(inputs["documents"], ctx)}

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        raise NotImplementedError(f"{type(self).__name__}.split_documents")

    def summarize(self, outputs: ChunksOut) -> str:
        return f"{len(outputs['chunks'])} chunks"


class RecursiveSplitterConfig(BaseModel):
    """Settings of ``splitter.recursive``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(1000, ge=1, description="Max characters per chunk.")
    chunk_overlap: int = Field(200, ge=0, description="Characters carried over from the previous chunk.")
    separators: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SEPARATORS),
        description="Tried in order: split on the first that occurs, recurse on pieces still too long.",
    )
    keep_separator: bool = Field(True, description="Keep each separator at the start of the following piece.")


@register_node
class RecursiveSplitter(SplitterNode[RecursiveSplitterConfig]):
    """Split text like LangChain's RecursiveCharacterTextSplitter (n8n and LangFlow's default)."""

    type_name = "splitter.recursive"
    capabilities = SplitterNode.capabilities | {Capability.DEFAULT_SPLITTER}
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "splitter.recursive",
                LC + "textSplitterRecursiveCharacterTextSplitter",
                (1,),
                outputs=SPLITTER_OUT,
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=to_int),
                    Param("chunk_overlap", "chunkOverlap", 0, to_ours=to_int),
                ),
                fixed={"options": {}},
                ignore=("options",),
            ),
            Adapter(
                "splitter.recursive",
                LC + "textSplitterTokenSplitter",
                (1,),
                outputs=SPLITTER_OUT,
                export=False,
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=token_chars),
                    Param("chunk_overlap", "chunkOverlap", 0, to_ours=token_chars),
                ),
                note="token sizes read as 4 characters per token (splitter.recursive counts characters)",
            ),
        ),
        "langflow": (
            Adapter(
                "splitter.recursive",
                "RecursiveCharacterTextSplitter",
                display="Recursive Character Text Splitter",
                params=(
                    LF.int_param("chunk_size", "chunk_size", 1000),
                    LF.int_param("chunk_overlap", "chunk_overlap", 200),
                    Param("separators", "separators", to_ours=LF.separators),
                ),
                inputs={"documents": "data_input"},
                outputs={"chunks": "data"},
                in_aliases={"data_inputs": "documents", "documents": "documents"},
                out_aliases={"chunks": "chunks"},
                extra={
                    "outputs": (LF.out("data", "Data", ("Data",), "split_data"),),
                    "handles": {"data_input": ("Document", "Data", "Table", "DataFrame")},
                },
            ),
            Adapter(
                "splitter.recursive",
                "LanguageRecursiveTextSplitter",
                export=False,
                params=(
                    LF.int_param("chunk_size", "chunk_size", 1000),
                    LF.int_param("chunk_overlap", "chunk_overlap", 200),
                ),
                inputs={"documents": "data_input"},
                outputs={"chunks": "data"},
                ignore=("code_language",),
                note="a language-aware splitter: split here with the recursive splitter's default separators",
            ),
        ),
        "flowise": (
            Adapter(
                "splitter.recursive",
                "recursiveCharacterTextSplitter",
                outputs={"chunks": "recursiveCharacterTextSplitter"},
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                    Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                    Param("separators", "separators", to_ours=FW.separators, to_theirs=FW.separators_text),
                ),
            ),
            Adapter(
                "splitter.recursive",
                "tokenTextSplitter",
                outputs={"chunks": "tokenTextSplitter"},
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                    Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                ),
                ignore=("encodingName",),
                note="a token splitter: split here by characters (chunk sizes are read as characters, so "
                "chunks come out shorter than Flowise's)",
            ),
            Adapter(
                "splitter.recursive",
                "codeTextSplitter",
                outputs={"chunks": "codeTextSplitter"},
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                    Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                ),
                ignore=("language",),
                note="a code splitter: split here with the recursive splitter's separators",
            ),
        ),
        "dify": (
            Adapter(
                "splitter.recursive",
                "tool:general_chunker",
                hook="chunker",
                export=False,
                outputs={"chunks": "result"},
                params=(
                    Param("chunk_size", "max_chunk_length", 1024, to_ours=positive_int),
                    Param("chunk_overlap", "chunk_overlap_length", 50, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                    Param(
                        "separators",
                        "delimiter",
                        to_ours=lambda v: [unescape(v), "\n", " ", ""] if nonempty_str(v) else None,
                    ),
                ),
            ),
            Adapter(
                "splitter.recursive",
                "tool:qa_chunker",
                hook="chunker",
                export=False,
                outputs={"chunks": "result"},
                note="a question-and-answer chunker: split here by the recursive splitter (no Q&A pairs)",
            ),
        ),
    }
    display_name = "Recursive Text Splitter"
    aliases = ("Split Text", "Recursive Character Text Splitter", "chunk")
    Config = RecursiveSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config

        def split(text: str) -> list[Chunk]:
            return split_recursive(text, c.chunk_size, c.chunk_overlap, c.separators, c.keep_separator)

        return chunk_documents(documents, split, ctx)


class FixedSplitterConfig(BaseModel):
    """Settings of ``splitter.fixed``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(300, ge=1, description="Characters per chunk (the last one may be shorter).")
    chunk_overlap: int = Field(0, ge=0, description="Characters each chunk repeats from the end of the previous one.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> FixedSplitterConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


def split_fixed(text: str, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    """Windows of ``chunk_size`` characters every ``chunk_size - chunk_overlap`` characters, cut anywhere
    (mid-word included); windows holding only whitespace are dropped."""
    step = chunk_size - chunk_overlap
    chunks: list[Chunk] = []
    position = 0
    while position < len(text):
        end = min(position + chunk_size, len(text))
        if text[position:end].strip():
            chunks.append(Chunk(text[position:end], position, end))
        if end == len(text):
            break
        position += step
    return chunks


@register_node
class FixedSplitter(SplitterNode[FixedSplitterConfig]):
    """Fixed-size chunks: every N characters, no separators (with optional overlap); the baseline."""

    type_name = "splitter.fixed"
    display_name = "Fixed-size Splitter"
    aliases = ("Split Text", "Token Splitter", "chunk")
    Config = FixedSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config
        return chunk_documents(documents, lambda text: split_fixed(text, c.chunk_size, c.chunk_overlap), ctx)


class CharacterSplitterConfig(BaseModel):
    """Settings of ``splitter.character``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    separator: str = Field("\n\n", description="Split on this text (\\n means a newline); pieces are then merged.")
    chunk_size: int = Field(1000, ge=1, description="Max characters per chunk; a longer piece is kept whole.")
    chunk_overlap: int = Field(200, ge=0, description="Characters carried over from the previous chunk.")
    keep_separator: Literal["none", "start", "end"] = Field(
        "none", description="Keep the separator at the start or end of each piece, or drop it."
    )


@register_node
class CharacterSplitter(SplitterNode[CharacterSplitterConfig]):
    """Split on one separator and merge pieces up to the size (LangFlow's Split Text)."""

    type_name = "splitter.character"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "splitter.character",
                LC + "textSplitterCharacterTextSplitter",
                (1,),
                outputs=SPLITTER_OUT,
                params=(
                    Param("separator", "separator", "", to_ours=lambda v: v or "\n\n"),
                    Param("chunk_size", "chunkSize", 1000, to_ours=to_int),
                    Param("chunk_overlap", "chunkOverlap", 0, to_ours=to_int),
                ),
            ),
        ),
        "langflow": (
            Adapter(
                "splitter.character",
                "SplitText",
                display="Split Text",
                params=(
                    Param(
                        "separator",
                        "separator",
                        "\n",
                        to_ours=lambda v: unescape(v) if v else "\n",
                        widget="MessageTextInput",
                    ),
                    LF.int_param("chunk_size", "chunk_size", 1000),
                    LF.int_param("chunk_overlap", "chunk_overlap", 200),
                    Param(
                        "keep_separator",
                        "keep_separator",
                        "False",
                        to_ours=LF.keep_separator_in,
                        to_theirs=LF.keep_separator_out,
                        widget="DropdownInput",
                    ),
                ),
                inputs={"documents": "data_inputs"},
                outputs={"chunks": "dataframe"},
                in_aliases={"data_input": "documents"},
                out_aliases={"chunks": "chunks", "data": "chunks"},
                fixed={"text_key": "text"},
                extra={
                    "outputs": (LF.out("dataframe", "Chunks", ("Table",), "split_text"),),
                    "handles": {"data_inputs": LF.DATA_IN},
                },
            ),
        ),
        "flowise": (
            Adapter(
                "splitter.character",
                "characterTextSplitter",
                outputs={"chunks": "characterTextSplitter"},
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                    Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                    Param("separator", "separator", "\n\n", to_ours=lambda v: unescape(v) if v else None),
                ),
            ),
        ),
    }
    display_name = "Character Text Splitter"
    aliases = ("Split Text", "chunk", "separator")
    Config = CharacterSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config
        separator = unescape_separator(c.separator)
        keep: KeepSeparator = False if c.keep_separator == "none" else c.keep_separator

        def split(text: str) -> list[Chunk]:
            return split_character(text, separator, c.chunk_size, c.chunk_overlap, keep)

        chunks = chunk_documents(documents, split, ctx)
        oversize = sum(1 for chunk in chunks if len(chunk.text) > c.chunk_size)
        if oversize:  # one note instead of LangChain's warning per chunk
            ctx.details["oversize_chunks"] = oversize
            ctx.log(f"{oversize} chunk(s) are longer than {c.chunk_size} characters (a piece is never cut).")
        return chunks


class MarkdownSplitterConfig(BaseModel):
    """Settings of ``splitter.markdown``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(1000, ge=1, description="Max characters per chunk, heading path included.")
    chunk_overlap: int = Field(0, ge=0, description="Characters carried over inside a long section.")
    max_heading_level: int = Field(3, ge=1, le=6, description="Split at headings up to this level (# = 1).")


@register_node
class MarkdownSplitter(SplitterNode[MarkdownSplitterConfig]):
    """Split markdown at headings; each chunk starts with its heading path (a deeper heading it sits under included);
    code blocks and tables stay whole."""

    type_name = "splitter.markdown"
    mappings: ClassVar[Mappings] = {
        "flowise": (
            Adapter(
                "splitter.markdown",
                "markdownTextSplitter",
                also=("htmlToMarkdownTextSplitter",),
                outputs={"chunks": "markdownTextSplitter"},
                out_aliases={"htmlToMarkdownTextSplitter": "chunks"},
                params=(
                    Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                    Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                ),
                ignore=("headerLevels", "splitBy"),
            ),
        ),
    }
    display_name = "Markdown Splitter"
    aliases = ("Split Text", "Markdown Header Text Splitter", "chunk")
    Config = MarkdownSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config
        chunks: list[Document] = []
        oversize = 0
        for document, inherited, lookup in each_document(documents, ctx):
            pieces, big = section_pieces(document.text, c.max_heading_level, c.chunk_size, c.chunk_overlap)
            oversize += big
            for index, piece in enumerate(pieces):
                start, end = piece.chunk.start, piece.chunk.end
                metadata = {**inherited, "chunk_index": index, "start": start, "end": end, "heading_path": piece.path}
                if lookup is not None:
                    metadata["record_ids"] = lookup.overlapping(start, end)
                chunks.append(Document(text=with_path(piece), metadata=metadata))
        if oversize:
            ctx.details["oversize_blocks"] = oversize
            ctx.log(f"{oversize} code block(s) or table(s) are longer than the chunk size and were kept whole.")
        return chunks


@register_node
class RecordSplitter(SplitterNode[EmptyConfig]):
    """One chunk per record: never cuts a record (a multi-record document is cut at its record spans)."""

    type_name = "splitter.record"
    mappings: ClassVar[Mappings] = {
        "flowise": (
            FW.fold("one chunk per record: Flowise's CSV loader already gives one document per row (no splitter)"),
        )
    }
    display_name = "One Chunk per Record"
    aliases = ("Split Text", "chunk", "row")
    Config = EmptyConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        chunks: list[Document] = []
        for document, inherited, _ in each_document(documents, ctx):
            spans = document.metadata.get("record_spans")
            if not spans:
                if document.text.strip():
                    metadata = {**inherited, "chunk_index": 0, "start": 0, "end": len(document.text)}
                    chunks.append(Document(text=document.text, metadata=metadata))
                continue
            index = 0
            for record_id, start, end in sorted(spans, key=lambda s: (int(s[1]), int(s[2]))):
                text = document.text[int(start) : int(end)]
                if not text.strip():
                    continue
                metadata = {**inherited, "record_id": str(record_id), "chunk_index": index, "start": int(start)}
                metadata.update({"end": int(end), "record_ids": [str(record_id)]})
                chunks.append(Document(text=text, metadata=metadata))
                index += 1
        return chunks


class WindowSplitterConfig(BaseModel):
    """Settings of ``splitter.window``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(1200, ge=20, description="Window size in characters.")
    chunk_overlap: int = Field(200, ge=0, description="Characters the next window repeats from this one.")
    lookback: float = Field(
        0.3,
        gt=0,
        le=1,
        description="Where a window may end: the best break (paragraph, then sentence, then space) in this "
        "last share of it.",
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> WindowSplitterConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)")


def _best_break(text: str, low: int, high: int) -> int:
    """Where to end a window within ``text[low:high]``: after the last paragraph break, else after the
    last sentence end, else at the last space; ``high`` (a hard cut) when there is none."""
    region = text[low:high]
    paragraph = region.rfind("\n\n")
    if paragraph >= 0:
        return low + paragraph + 2
    sentences = list(_SENTENCE_END.finditer(region))
    if sentences:
        return low + sentences[-1].end()
    space = max(region.rfind(" "), region.rfind("\n"))
    return low + space + 1 if space >= 0 else high


def split_window(text: str, chunk_size: int, chunk_overlap: int, lookback: float = 0.3) -> list[Chunk]:
    """The RAG Explorer's chunker: windows of ``chunk_size`` characters, each ended at the best break in its
    last ``lookback`` share, the next starting ``chunk_overlap`` characters earlier (at a word start)."""
    chunks: list[Chunk] = []
    position = 0
    while position < len(text):
        limit = min(position + chunk_size, len(text))
        end = limit if limit == len(text) else _best_break(text, position + int(chunk_size * (1 - lookback)), limit)
        start = position
        while start < end and text[start].isspace():
            start += 1
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        if stop > start:
            chunks.append(Chunk(text[start:stop], start, stop))
        if end >= len(text):
            break
        following = max(end - chunk_overlap, position + 1)
        if chunk_overlap:
            # start the overlap at a word, not mid-word
            while following < end and not text[following - 1].isspace():
                following += 1
        position = following
    return chunks


@register_node
class WindowSplitter(SplitterNode[WindowSplitterConfig]):
    """The RAG Explorer's chunker: 1,200-character windows with 200 overlap, each cut at the best paragraph,
    sentence or space break in its last 30%."""

    type_name = "splitter.window"
    display_name = "RAG Explorer Window Splitter"
    aliases = ("Split Text", "chunk", "window")
    Config = WindowSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config
        return chunk_documents(
            documents, lambda text: split_window(text, c.chunk_size, c.chunk_overlap, c.lookback), ctx
        )
