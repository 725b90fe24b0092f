"""``query.rewrite``: multi-query retrieval. A chat model writes n rewordings of the question; the
original and every variant are searched and the hit lists are merged with Reciprocal Rank Fusion.

Why the node searches itself instead of handing a list of queries downstream: every retriever in
Flowbuilder takes one question, and the merge needs all the ranked lists anyway. So the node takes
what to search (a ``retriever`` service, e.g. retriever.vector's ``retriever`` output, or a vector
store) and outputs the merged ``hits``, the ``queries`` it ran (one per line) and a ``retriever``
service that does the whole rewrite-search-merge for any question (for an agent's tool).

Each merged hit carries one leg per query that found it: ``legs["q0"]`` is the original question,
``legs["q1"]``... the variants (``"q1/r2"`` when several retrievers are connected), with the rank
and score in that list; ``score`` is the RRF sum and ``explain`` shows it ("1/61 + 1/63"). The merge is
retriever.fusion's :func:`flowbuilder.nodes.hybrid.fusion.fuse`, so the two nodes rank alike.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import Hit
from flowbuilder.errors import NodeError, ProviderError
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.hybrid.fusion import fuse
from flowbuilder.nodes.llms.structured import ask, list_schema
from flowbuilder.nodes.prompts import render_template
from flowbuilder.portvalues import Hits, Text
from flowbuilder.registry import register_node
from flowbuilder.services import ChatModel, Retriever, VectorStore

DEFAULT_REWRITE_PROMPT = (
    "You help a search engine. Write {n} different rewordings of the question below, each one a full "
    "question that asks for the same thing with other words (synonyms, the terms a manual would use). "
    "Write one per line, with no numbering and nothing else.\n\n"
    "Question: {question}"
)

_BULLET = re.compile(
    r"^\s*(?:[-*•]|\d+[.)]|\(\d+\)|(?:q|query|question|variant|rewording|version)\s*\d+\s*[:.)-])\s*",
    re.IGNORECASE,
)


def parse_variants(reply: str, original: str, n: int) -> list[str]:
    """Up to ``n`` distinct variants from a model's reply: one per line, numbering and quotes removed,
    lines repeating the original (or each other) dropped."""
    seen = {_norm(original)}
    variants: list[str] = []
    for line in reply.splitlines():
        text = _BULLET.sub("", line.strip().strip("*_")).strip().strip("*_\"'“”` ").strip()
        if not text or text.endswith(":") or _norm(text) in seen:
            continue  # blank lines and a preamble such as "Here are 3 rewordings:"
        seen.add(_norm(text))
        variants.append(text)
        if len(variants) == n:
            break
    return variants


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("?.! ")


class QueryRewriteConfig(BaseModel):
    """Settings of ``query.rewrite``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(3, ge=1, le=10, description="How many rewordings the model writes (the original is kept too).")
    prompt: str = Field(
        DEFAULT_REWRITE_PROMPT,
        description="Prompt for the rewordings; {question} and {n} are filled in.",
        json_schema_extra={"multiline": True},
    )
    k: int = Field(4, ge=1, le=1000, description="Hits per query when searching a connected vector store.")
    keep: int = Field(4, ge=1, le=1000, description="How many merged hits to output.")
    rrf_k: int = Field(60, ge=1, description="RRF constant: each list adds 1/(rrf_k + rank).")
    if_model_fails: Literal["fail", "continue"] = Field(
        "fail",
        description="When the model cannot be reached or writes no usable rewording: fail, or search the original "
        "question alone (a warning).",
    )


class UnusableRewordingError(NodeError):
    """The model answered, but nothing in its reply is a rewording (a tiny model copying the question)."""


class MultiQueryRetriever:
    """The Retriever service: rewrite, search every query with every retriever, merge with RRF."""

    def __init__(self, model: ChatModel, retrievers: Sequence[Retriever], config: QueryRewriteConfig) -> None:
        self.model = model
        self.retrievers = list(retrievers)
        self.config = config
        self.reply_format = ""
        """"text", or "json" when the model was held to a JSON schema (llm.local)."""
        self.last: dict[str, Any] = {}
        """What the latest call did (prompt, reply, queries, per-leg hits), for the inspector."""

    def rewrite(self, question: str) -> tuple[list[str], str, str]:
        """(queries with the original first, the prompt sent, the model's reply)."""
        prompt = render_template(self.config.prompt, {"question": question, "n": str(self.config.n)})
        answer = ask(self.model, prompt, list_schema("rewordings", self.config.n), "rewordings")
        self.reply_format = answer.mode
        reply = answer.text
        variants = parse_variants(reply, question, self.config.n)
        if not variants:
            preview = " ".join(reply.split())[:120] or "(empty)"
            raise UnusableRewordingError(
                f"the model wrote no usable rewording (one per line expected); it replied: {preview}. "
                "Check the prompt or the model."
            )
        return [question, *variants], prompt, reply

    def retrieve(self, query: str) -> list[Hit]:
        started = time.perf_counter()
        failure = ""
        self.reply_format = ""
        try:
            queries, prompt, reply = self.rewrite(query)
        except (ProviderError, UnusableRewordingError) as exc:
            if self.config.if_model_fails == "fail":
                raise
            failure = str(exc)
            queries, prompt, reply = [query], "", ""
        rewrite_seconds = time.perf_counter() - started
        lists: list[tuple[str, list[Hit]]] = []
        for qi, text in enumerate(queries):
            for ri, retriever in enumerate(self.retrievers, start=1):
                leg = f"q{qi}" if len(self.retrievers) == 1 else f"q{qi}/r{ri}"
                lists.append((leg, retriever.retrieve(text)))
        merged = fuse(
            [hits for _, hits in lists],
            method="rrf",
            k=self.config.rrf_k,
            names=[leg for leg, _ in lists],
            keep=self.config.keep,
        )
        self.last = {
            "reply_format": self.reply_format,
            "prompt": prompt,
            "reply": reply,
            "queries": {f"q{i}": text for i, text in enumerate(queries)},
            "legs": {leg: [_label(h) for h in hits] for leg, hits in lists},
            "rewrite_seconds": round(rewrite_seconds, 3),
            "seconds": round(time.perf_counter() - started, 3),
        }
        if failure:
            self.last["model_failed"] = failure
        elif len(queries) - 1 < self.config.n:
            self.last["note"] = f"the model wrote {len(queries) - 1} usable rewordings of {self.config.n} asked"
        return merged


def _label(hit: Hit) -> str:
    meta = hit.document.metadata
    where = meta.get("record_id") or meta.get("source") or hit.id
    return f"{hit.rank}. {where} ({hit.score:.3f})"


class _StoreRetriever:
    def __init__(self, store: VectorStore, k: int) -> None:
        self.store = store
        self.k = k

    def retrieve(self, query: str) -> list[Hit]:
        return self.store.search(query, self.k)


class RewriteIn(TypedDict):
    """The input ports of ``query.rewrite``."""

    query: Annotated[Text, "The question."]
    model: Annotated[ChatModel, "The chat model that writes the rewordings."]
    retriever: NotRequired[
        Annotated[list[Retriever], "What to search with every query (retriever.vector's 'retriever' output, ...)."]
    ]
    store: NotRequired[Annotated[VectorStore, "Or a vector store, searched for the config's k hits per query."]]


class RewriteOut(TypedDict):
    """The output ports of ``query.rewrite``."""

    hits: Annotated[Hits, "Merged hits of all queries, best RRF score first."]
    queries: Annotated[Text, "The original question and its rewordings, one per line."]
    retriever: Annotated[Retriever, "The same rewrite-search-merge as a service."]


@register_node
class QueryRewrite(Node[QueryRewriteConfig, RewriteIn, RewriteOut]):
    """Multi-query: an LLM rewords the question n times; all are searched and merged (RRF)."""

    type_name = "query.rewrite"
    mappings: ClassVar[Mappings] = {
        "flowise": (
            Adapter(
                "query.rewrite",
                "multiQueryRetriever",
                inputs={"store": "vectorStore", "model": "model", "query": "query"},
                outputs={"hits": "retriever"},
                ignore=("modelPrompt",),
            ),
        ),
    }
    display_name = "Query Rewriter"
    aliases = ("Multi Query Retriever", "rewrite", "HyDE", "LLM")
    category = "Retrieval"
    Config = QueryRewriteConfig
    cacheable = False

    def run(self, inputs: RewriteIn, ctx: RunContext) -> RewriteOut:
        config = self.config
        query = inputs["query"]
        if not query.strip():
            raise NodeError("Input 'query' is empty: connect a chat input or text with the question.")
        model = inputs["model"]
        retrievers = list(inputs.get("retriever", []))
        store = inputs.get("store")
        if store is not None:
            retrievers.append(_StoreRetriever(store, config.k))
        if not retrievers:
            raise NodeError(
                "Nothing to search: connect a retriever (retriever.vector's 'retriever' output) to 'retriever' "
                "or a vector store to 'store'."
            )
        service = MultiQueryRetriever(model, retrievers, config)
        try:
            hits = service.retrieve(query.strip())
        finally:
            ctx.details.update(service.last)
        ctx.details["rewriter"] = f"{model.provider}/{model.model}"
        if service.last.get("model_failed"):
            ctx.warn(f"no rewordings, searched the original question only: {service.last['model_failed']}")
        queries = "\n".join(service.last.get("queries", {}).values())
        return {"hits": hits, "queries": queries, "retriever": service}
