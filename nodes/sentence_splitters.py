"""Sentence-based splitters: sentence packing and semantic chunking.

Both see a document as units (:mod:`flowbuilder.nodes.splitting.sentences`): pysbd sentences of the prose, and
each code block or table whole, so a table is never sentence-split or mashed into the prose around
it. Sentence packing fills chunks with whole units up to a size; semantic chunking embeds every unit
with the flow's embedder and cuts where neighbouring units stop being similar.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from flowbuilder.data import Document
from flowbuilder.node import RunContext
from flowbuilder.nodes.io import ChunksOut, DocumentsIn
from flowbuilder.nodes.splitters import SplitterNode, chunk_documents
from flowbuilder.nodes.splitting.sentences import Unit, check_language, pack_units, sentence_units
from flowbuilder.nodes.splitting.textsplit import Chunk
from flowbuilder.registry import register_node
from flowbuilder.services import Embedder

MAX_DETAIL_ROWS = 500  # inspect-only data stays small on large corpora


def _span(text: str, start: int, end: int) -> Chunk:
    return Chunk(text[start:end], start, end)


class SentenceSplitterConfig(BaseModel):
    """Settings of ``splitter.sentence``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(500, ge=1, description="Max characters per chunk; a longer sentence or table stays whole.")
    overlap_sentences: int = Field(0, ge=0, le=20, description="Sentences repeated at the start of the next chunk.")
    language: str = Field("en", description="Language of the sentence rules (pysbd codes: en, de, fr, es, ...).")

    _language = field_validator("language")(check_language)


@register_node
class SentenceSplitter(SplitterNode[SentenceSplitterConfig]):
    """Whole sentences (pysbd) packed up to a size; code blocks and tables stay whole units."""

    type_name = "splitter.sentence"
    display_name = "Sentence Splitter"
    aliases = ("Split Text", "chunk")
    Config = SentenceSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config

        def split(text: str) -> list[Chunk]:
            units = sentence_units(text, c.language)
            groups = pack_units(units, c.chunk_size, c.overlap_sentences)
            return [_span(text, units[group[0]].start, units[group[-1]].end) for group in groups]

        chunks = chunk_documents(documents, split, ctx)
        oversize = sum(1 for chunk in chunks if len(chunk.text) > c.chunk_size)
        if oversize:
            ctx.details["oversize_chunks"] = oversize
            ctx.log(
                f"{oversize} chunk(s) hold one sentence, code block or table longer than {c.chunk_size} characters."
            )
        return chunks


class SemanticSplitterConfig(BaseModel):
    """Settings of ``splitter.semantic``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    breakpoint: Literal["percentile", "threshold"] = Field(
        "percentile",
        description="percentile: cut at the document's least similar neighbour pairs; threshold: cut below a fixed "
        "similarity.",
    )
    percentile: float = Field(
        25.0, ge=0, le=100, description="Cut where similarity is in this lowest percent of the document's pairs."
    )
    threshold: float = Field(
        0.5, ge=-1, le=1, description="Cut where cosine similarity is below this (threshold mode)."
    )
    min_chunk_size: int = Field(150, ge=0, description="Never cut a chunk shorter than this many characters.")
    max_chunk_size: int = Field(1000, ge=1, description="Cut before a chunk grows past this many characters.")
    language: str = Field("en", description="Language of the sentence rules (pysbd codes).")

    _language = field_validator("language")(check_language)

    @model_validator(mode="after")
    def _sizes(self) -> SemanticSplitterConfig:
        if self.min_chunk_size > self.max_chunk_size:
            raise ValueError(
                f"min_chunk_size ({self.min_chunk_size}) is larger than max_chunk_size ({self.max_chunk_size})"
            )
        return self


class SemanticIn(DocumentsIn):
    """The input ports of ``splitter.semantic``."""

    embedder: Annotated[Embedder, "Embeds the sentences (use the flow's own embedder)."]


@register_node
class SemanticSplitter(SplitterNode[SemanticSplitterConfig, SemanticIn]):
    """Embed sentences with the flow's embedder and cut where neighbour similarity drops."""

    type_name = "splitter.semantic"
    display_name = "Semantic Splitter"
    aliases = ("Split Text", "Semantic Chunker", "chunk")
    Config = SemanticSplitterConfig

    def run(self, inputs: SemanticIn, ctx: RunContext) -> ChunksOut:
        return {"chunks": self.split_with(inputs["documents"], inputs["embedder"], ctx)}

    def split_with(self, documents: list[Document], embedder: Embedder, ctx: RunContext) -> list[Document]:
        c = self.config
        reasons: list[tuple[str, float | None]] = []  # per chunk, in the order chunk_documents emits them

        def split(text: str) -> list[Chunk]:
            units = sentence_units(text, c.language)
            if not units:
                return []
            similarities = self._neighbour_similarities(text, units, embedder)
            groups = self._groups(units, similarities, self._cutoff(similarities))
            reasons.extend((reason, similarity) for _, _, reason, similarity in groups)
            return [_span(text, units[first].start, units[last].end) for first, last, _, _ in groups]

        chunks = chunk_documents(documents, split, ctx)
        cuts: list[dict[str, Any]] = []
        for chunk, (reason, similarity) in zip(chunks, reasons, strict=True):
            chunk.metadata["cut_reason"] = reason
            if similarity is not None:
                chunk.metadata["cut_similarity"] = round(similarity, 4)
            if chunk.metadata["chunk_index"] and len(cuts) < MAX_DETAIL_ROWS:
                source = str(chunk.metadata.get("source", ""))
                cuts.append({"source": source, "offset": chunk.metadata["start"], "reason": reason})
        ctx.details["cuts"] = cuts
        ctx.details["breakpoint"] = (
            f"{c.percentile:g}th percentile of each document's neighbour similarities"
            if c.breakpoint == "percentile"
            else f"similarity below {c.threshold:g}"
        )
        return chunks

    @staticmethod
    def _neighbour_similarities(text: str, units: list[Unit], embedder: Embedder) -> np.ndarray:
        if len(units) < 2:
            return np.zeros(0, dtype=np.float32)
        vectors = np.asarray(embedder.embed_documents([text[u.start : u.end] for u in units]), dtype=np.float32)
        vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return np.einsum("ij,ij->i", vectors[:-1], vectors[1:])

    def _cutoff(self, similarities: np.ndarray) -> float:
        if self.config.breakpoint == "threshold" or similarities.size == 0:
            return self.config.threshold
        return float(np.percentile(similarities, self.config.percentile))

    def _groups(
        self, units: list[Unit], similarities: np.ndarray, cutoff: float
    ) -> list[tuple[int, int, str, float | None]]:
        """``(first unit, last unit, why the chunk starts here, similarity to the previous unit)`` per chunk."""
        c = self.config
        label = f"{c.percentile:g}th percentile {cutoff:.3f}" if c.breakpoint == "percentile" else f"{cutoff:g}"
        groups: list[tuple[int, int, str, float | None]] = []
        first, reason, before = 0, "start of document", None
        for index in range(1, len(units)):
            similarity = float(similarities[index - 1])
            length = units[index - 1].end - units[first].start
            why = None
            if similarity < cutoff and length >= c.min_chunk_size:
                why = f"similarity {similarity:.3f} < {label}"
            elif units[index].end - units[first].start > c.max_chunk_size:
                why = f"max_chunk_size {c.max_chunk_size} reached (similarity {similarity:.3f})"
            if why is not None:
                groups.append((first, index - 1, reason, before))
                first, reason, before = index, why, similarity
        groups.append((first, len(units) - 1, reason, before))
        return groups
