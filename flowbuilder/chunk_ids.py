"""Chunk ids: the same chunk always gets the same id, whichever machine makes it.

``<sha256(source)[:16]>#<sha256(source, text, metadata)[:32]>``: a store finds a source's chunks by the id prefix,
never embeds a chunk twice, and a batch written twice (a Ray worker retried) leaves each id once. The vector-store
nodes and the cluster's workers (:mod:`flowbuilder.cluster.worker`) both use these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from flowbuilder.data import Document

__all__ = ["document_id", "source_key", "unique_documents"]


FOLDER_FIELD = "folder"
"""Metadata key of the folder a loader read a file from: a store removes the chunks of files gone from it."""


def folders_of(docs: Iterable[Document]) -> set[str]:
    """The folders (``FOLDER_FIELD``) the documents were read from."""
    return {f for doc in docs if isinstance(f := doc.metadata.get(FOLDER_FIELD), str) and f}


def source_key(source: str) -> str:
    """The id prefix shared by every chunk of one source (``<key>#``), so a store can list them by prefix."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def document_id(doc: Document) -> str:
    """``<source key>#<hash of source, text and metadata>``: the same chunk always gets the same id, so it is
    stored once; an edited chunk gets a new id and the sync removes the old one. Metadata is hashed too, so
    a chunk whose text is unchanged but whose row number or offsets moved (a row above it was removed) is
    written again with its new metadata instead of citing a stale row; its vector comes from the embedding
    cache, so the model does not run again."""
    metadata = json.dumps(doc.metadata, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(f"{doc.source}\n{doc.text}\n{metadata}".encode()).hexdigest()
    return f"{source_key(doc.source)}#{digest[:32]}"


def unique_documents(docs: Iterable[Document], seen: set[str] | None = None) -> tuple[list[str], list[Document], int]:
    """``(ids, docs, duplicates)``: the first document of each id, in order, and how many repeats were dropped.
    ``seen``: ids already taken (earlier batches of a stream); the new ids are added to it."""
    ids: list[str] = []
    kept: list[Document] = []
    seen = set() if seen is None else seen
    duplicates = 0
    for doc in docs:
        if not doc.text.strip():
            continue
        doc_id = document_id(doc)
        if doc_id in seen:
            duplicates += 1
            continue
        seen.add(doc_id)
        ids.append(doc_id)
        kept.append(doc)
    return ids, kept, duplicates
