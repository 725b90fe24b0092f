"""Retrieval nodes: search a vector store for a question, or hand the search to an agent as a tool."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import Hit
from flowbuilder.errors import NodeError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str, to_float, to_int
from flowbuilder.formats.n8n_table import LC
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import SearchOut
from flowbuilder.portvalues import Text, Tools
from flowbuilder.registry import register_node
from flowbuilder.services import VectorStore


class VectorRetriever:
    """The Retriever service: a store plus fixed k, min_score and metadata filter."""

    def __init__(
        self, store: VectorStore, k: int = 4, min_score: float | None = None, where: dict[str, Any] | None = None
    ) -> None:
        self.store = store
        self.k = k
        self.min_score = min_score
        self.where = where or None

    def retrieve(self, query: str) -> list[Hit]:
        return self.store.search(query, self.k, self.where, self.min_score)


class RetrieverConfig(BaseModel):
    """Settings of ``retriever.vector``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(4, ge=1, le=1000, description="How many hits to return.")
    min_score: float | None = Field(None, description="Drop hits scoring below this (cosine similarity for Chroma).")
    where: dict[str, Any] = Field(default_factory=dict, description='Metadata filter, e.g. {"source": "a.csv"}.')


class SearchIn(TypedDict):
    """The input ports of ``retriever.vector``."""

    store: Annotated[VectorStore, "The store to search."]
    query: Annotated[Text, "The question."]


class StoreIn(TypedDict):
    """The input ports of ``retriever.tool``."""

    store: Annotated[VectorStore, "The store the tool searches."]


class SearchToolOut(TypedDict):
    """The output ports of ``retriever.tool``."""

    tool: Annotated[Tools, "A search tool for agent.tools."]


@register_node
class VectorRetrieverNode(Node[RetrieverConfig, SearchIn, SearchOut]):
    """Find the k chunks most similar to a question."""

    type_name = "retriever.vector"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "retriever.vector",
                LC + "retrieverVectorStore",
                (1,),
                inputs={"store": "ai_vectorStore"},
                outputs={"retriever": "ai_retriever"},
                export=False,
                params=(Param("k", "topK", 4, to_ours=to_int),),
            ),
        ),
        "flowise": (
            Adapter(
                "retriever.vector",
                "vectorStoreRetriever",
                inputs={"store": "vectorStore", "query": "query"},
                outputs={"hits": "retriever"},
                ignore=("name", "description"),
                extra={"from_label": ("name", "description")},  # export: Flowise requires both (a multi-retrieval
                # chain picks by them); the node's label stands for them
            ),
            Adapter(
                "retriever.vector",
                "similarityThresholdRetriever",
                inputs={"store": "vectorStore", "query": "query"},
                outputs={"hits": "retriever"},
                params=(
                    Param("k", "maxK", 20, to_ours=FW.k),
                    Param(
                        "min_score",
                        "minSimilarityScore",
                        80,
                        to_ours=lambda v: (to_float(v) or 0) / 100,
                        to_theirs=lambda v: None if v is None else round(float(v) * 100, 4),
                    ),
                ),
                ignore=("fetchK",),
            ),
        ),
    }

    capabilities = frozenset({Capability.STORE_RETRIEVER})
    display_name = "Vector Store Retriever"
    aliases = ("retriever", "similarity search", "search", "vector store")
    category = "Retrieval"
    Config = RetrieverConfig

    def run(self, inputs: SearchIn, ctx: RunContext) -> SearchOut:
        retriever = VectorRetriever(inputs["store"], self.config.k, self.config.min_score, self.config.where)
        query = inputs["query"]
        if not query.strip():
            raise NodeError("Input 'query' is empty: connect a chat input or text with the question.")
        hits = retriever.retrieve(query)
        ctx.details["query"] = query
        ctx.details["scores"] = [round(h.score, 4) for h in hits]
        ctx.remark = empty_store_note(retriever.store, hits, ctx, self.config.min_score, self.config.where)
        return {"hits": hits, "retriever": retriever}


def empty_store_note(
    store: VectorStore, hits: list[Hit], ctx: RunContext, min_score: float | None, where: dict[str, Any]
) -> str:
    """No hits over an empty store is a warning (with the store's reason); no hits from a store that
    has chunks is a fine answer, and the summary says why nothing matched."""
    if hits:
        return ""
    count = store.count()
    ctx.details["store_count"] = count
    if count == 0:
        reason = str(getattr(store, "empty_reason", "") or f"collection {store.name} is empty")
        ctx.warn(reason)
        return "empty store"
    why = []
    if min_score is not None:
        why.append(f"none scored {min_score} or more")
    if where:
        why.append(f"none matched the filter {where}")
    return f"the store holds {count} chunks; " + (" or ".join(why) if why else "none matched")


DEFAULT_TOOL_DESCRIPTION = "Search the knowledge base and return the most relevant passages."


class SearchTool:
    """The Tool service of ``retriever.tool``; ``last_hits`` keeps the latest call's hits for the UI."""

    def __init__(self, store: VectorStore, name: str, description: str, k: int = 4) -> None:
        self.store = store
        self.name = name
        self.description = description
        self.k = k
        self.last_hits: list[Hit] = []

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for, in plain words."}},
            "required": ["query"],
            "additionalProperties": False,
        }

    def call(self, arguments: dict[str, Any]) -> str:
        query = arguments.get("query") if isinstance(arguments, dict) else None
        if not isinstance(query, str) or not query.strip():
            return "Error: the tool needs a non-empty string argument 'query'."
        self.last_hits = self.store.search(query, self.k)
        return format_passages(self.last_hits)


def format_passages(hits: list[Hit]) -> str:
    """Numbered passages with source, record and score, as an agent reads them."""
    if not hits:
        return "No relevant passages found."
    blocks = []
    for hit in hits:
        meta = hit.document.metadata
        where = str(meta.get("source") or "unknown source")
        if meta.get("record_id") is not None:
            where += f", {meta['record_id']}"
        elif meta.get("page") is not None:
            where += f", page {meta['page']}"
        blocks.append(f"[{hit.rank}] ({where}; score {hit.score:.3f})\n{hit.document.text.strip()}")
    return "\n\n".join(blocks)


class ToolConfig(BaseModel):
    """Settings of ``retriever.tool``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("search_documents", pattern=r"^[a-zA-Z0-9_-]{1,64}$", description="Tool name the model sees.")
    description: str = Field(
        DEFAULT_TOOL_DESCRIPTION,
        description="Tells the model when to use the tool.",
        json_schema_extra={"multiline": True},
    )
    k: int = Field(4, ge=1, le=100, description="Passages per call.")


@register_node
class RetrieverToolNode(Node[ToolConfig, StoreIn, SearchToolOut]):
    """Let an agent search a vector store as a tool."""

    type_name = "retriever.tool"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            # A store's retrieval roles: exported as modes of the store node, imported from the sub-nodes too.
            Adapter(
                "retriever.tool",
                LC + "toolVectorStore",
                (1, 1.1),
                inputs={"store": "ai_vectorStore"},
                outputs={"tool": "ai_tool"},
                export=False,
                params=(
                    Param("name", "name", "", to_ours=nonempty_str),
                    Param("description", "description", "", to_ours=nonempty_str),
                    Param("k", "topK", 4, to_ours=to_int),
                ),
            ),
        ),
        "langflow": (
            Adapter(
                "retriever.tool",
                "VectorStoreInfo",
                display="VectorStoreInfo",
                export=False,
                inputs={"store": "vectorstore"},
                outputs={"tool": "VectorStoreInfo"},
                params=(
                    Param("name", "vectorstore_name", to_ours=LF.tool_name),
                    Param("description", "vectorstore_description", to_ours=nonempty_str),
                ),
            ),
        ),
        "flowise": (
            Adapter(
                "retriever.tool",
                "retrieverTool",
                inputs={"store": "retriever"},
                outputs={"tool": "retrieverTool"},
                params=(
                    Param(
                        "name", "name", to_ours=lambda v: FW.re.sub("[^a-zA-Z0-9_-]+", "_", str(v or ""))[:64] or None
                    ),
                    Param("description", "description", to_ours=nonempty_str),
                ),
                ignore=("returnSourceDocuments", "retrieverToolMetadataFilter"),
            ),
        ),
    }

    capabilities = frozenset({Capability.STORE_TOOL})
    display_name = "Vector Store Tool"
    aliases = ("Answer questions with a vector store", "retriever tool", "tool")
    category = "Retrieval"
    Config = ToolConfig

    def run(self, inputs: StoreIn, ctx: RunContext) -> SearchToolOut:
        c = self.config
        tool = SearchTool(inputs["store"], c.name, c.description, c.k)
        ctx.details["schema"] = tool.parameters_schema()
        if tool.store.count() == 0:  # an agent would search nothing and answer from its own knowledge
            ctx.warn(str(getattr(tool.store, "empty_reason", "") or f"collection {tool.store.name} is empty"))
        return {"tool": tool}
