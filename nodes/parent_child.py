"""Parent-child splitting: small children are embedded and searched, their parent is what gets returned.

Parents are markdown sections packed whole (code blocks and tables never cut, heading path on top) or
plain recursive chunks; children are recursive chunks inside each parent. Every child carries the
shared multi-view metadata (CONTRACTS.md): ``parent_id``, ``parent_text``, ``view = "child"``, plus
``parent_start``/``parent_end``; its own ``start``/``end`` stay exact offsets into the source text so
the boundary view and citations work. Returning parents instead of children is the retrieval step's
job (dedupe hits by ``parent_id``, text := ``parent_text``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flowbuilder.data import Document
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.node import RunContext
from flowbuilder.nodes.io import ChunksOut
from flowbuilder.nodes.splitters import SplitterNode, each_document, heading_index
from flowbuilder.nodes.splitting.markdown import section_pieces, with_path
from flowbuilder.nodes.splitting.textsplit import Chunk, check_sizes, split_recursive
from flowbuilder.registry import register_node


class ParentChildSplitterConfig(BaseModel):
    """Settings of ``splitter.parent_child``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    parents: Literal["sections", "size"] = Field(
        "sections",
        description="sections: markdown sections (heading path on top, code and tables whole) up to parent_size; "
        "size: recursive chunks of parent_size.",
    )
    parent_size: int = Field(1200, ge=1, description="Max characters per parent.")
    child_size: int = Field(300, ge=1, description="Max characters per child (what gets embedded and searched).")
    child_overlap: int = Field(50, ge=0, description="Characters a child repeats from the previous child.")
    max_heading_level: int = Field(3, ge=1, le=6, description="Sections mode: split at headings up to this level.")

    @model_validator(mode="after")
    def _sizes(self) -> ParentChildSplitterConfig:
        problem = check_sizes(self.child_size, self.child_overlap)
        if problem:
            raise ValueError(problem.replace("chunk_", "child_"))
        if self.child_size > self.parent_size:
            raise ValueError(f"child_size ({self.child_size}) is larger than parent_size ({self.parent_size})")
        return self


@register_node
class ParentChildSplitter(SplitterNode[ParentChildSplitterConfig]):
    """Small child chunks for search, each carrying its parent (section) to return instead."""

    type_name = "splitter.parent_child"
    mappings: ClassVar[Mappings] = {
        "dify": (
            Adapter(
                "splitter.parent_child",
                "tool:parentchild_chunker",
                hook="chunker",
                export=False,
                outputs={"chunks": "result"},
            ),
        ),
    }
    display_name = "Parent-Child Splitter"
    aliases = ("Split Text", "Parent Document", "chunk")
    Config = ParentChildSplitterConfig

    def split_documents(self, documents: list[Document], ctx: RunContext) -> list[Document]:
        c = self.config
        children: list[Document] = []
        parent_count = 0
        for number, (document, inherited, lookup) in enumerate(each_document(documents, ctx)):
            owner = str(document.metadata.get("record_id") or document.metadata.get("source") or f"document{number}")
            headings = heading_index(document)
            index = 0
            for parent_index, (parent, parent_text, path) in enumerate(self._parents(document.text)):
                parent_count += 1
                parent_id = f"{owner}#parent{parent_index}"
                for child in split_recursive(
                    document.text, c.child_size, c.child_overlap, start=parent.start, end=parent.end
                ):
                    metadata: dict[str, Any] = {
                        **inherited,
                        "chunk_index": index,
                        "start": child.start,
                        "end": child.end,
                    }
                    metadata.update(
                        parent_id=parent_id,
                        parent_text=parent_text,
                        parent_start=parent.start,
                        parent_end=parent.end,
                        view="child",
                    )
                    heading_path = path if path is not None else (headings.at(child.start) if headings else None)
                    if heading_path is not None:
                        metadata["heading_path"] = heading_path
                    if lookup is not None:
                        metadata["record_ids"] = lookup.overlapping(child.start, child.end)
                    children.append(Document(text=child.text, metadata=metadata))
                    index += 1
        ctx.details["parents"] = parent_count
        ctx.details["children"] = len(children)
        return children

    def _parents(self, text: str) -> list[tuple[Chunk, str, str | None]]:
        """``(parent span, parent text as returned to the model, heading path or None)`` in order."""
        c = self.config
        if c.parents == "size":
            return [(p, p.text, None) for p in split_recursive(text, c.parent_size, 0)]
        pieces, _ = section_pieces(text, c.max_heading_level, c.parent_size, 0)
        return [(piece.chunk, with_path(piece), piece.path) for piece in pieces]

    def summarize(self, outputs: ChunksOut) -> str:
        chunks = outputs["chunks"]
        parents = {c.metadata.get("parent_id") for c in chunks}
        return f"{len(chunks)} children of {len(parents)} parents"
