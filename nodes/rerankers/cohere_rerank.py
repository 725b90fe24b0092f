"""``reranker.cohere``: Cohere's hosted rerank models through the official ``cohere`` SDK (v2 API)."""

from __future__ import annotations

import time
from typing import ClassVar

from pydantic import Field

from flowbuilder.errors import FlowbuilderError, ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str, to_int
from flowbuilder.formats.n8n_table import LC
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.base import scrub
from flowbuilder.nodes.rerankers.common import (
    RerankConfig,
    RerankedOut,
    RerankerNode,
    RerankIn,
    question,
    reorder,
    score_table,
)
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot


class CohereRerankConfig(RerankConfig):
    """Settings of ``reranker.cohere``: the saved config, and the inspector's form."""

    model: str = Field("rerank-v3.5", description="Cohere rerank model, e.g. rerank-v3.5 or rerank-english-v3.0.")
    base_url: str = Field(
        "", description="API address; empty = Cohere's public API.", json_schema_extra={"advanced": True}
    )
    timeout: float = Field(60.0, gt=0, description="Seconds to wait for Cohere before giving up.")
    max_retries: int = Field(
        2, ge=0, description="Retries after a rate limit or a server error.", json_schema_extra={"advanced": True}
    )
    max_tokens_per_doc: int | None = Field(
        None,
        ge=1,
        description="Cohere truncates longer passages (its default is 4096).",
        json_schema_extra={"advanced": True},
    )


@register_node
class CohereReranker(RerankerNode[CohereRerankConfig]):
    """Rerank hits with Cohere's rerank API (relevance scores 0-1)."""

    type_name = "reranker.cohere"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            # n8n wires a reranker into a store (ai_reranker, useReranker); the "reranker" hook puts ours after
            # the store's retriever.
            Adapter(
                "reranker.cohere",
                LC + "rerankerCohere",
                (1,),
                outputs={"hits": "ai_reranker"},
                hook="reranker",
                params=(
                    Param("model", "modelName", "rerank-v3.5", keep=True),
                    Param("keep", "topN", 3, to_ours=to_int),
                ),
            ),
        ),
        "langflow": (
            # LangFlow's Cohere Rerank (an LCCompressorComponent): the store's results and the question in,
            # the best top_n out.
            Adapter(
                "reranker.cohere",
                "CohereRerank",
                also=("CohereRerankComponent",),
                display="Cohere Rerank",
                params=(
                    Param("model", "model", "rerank-english-v3.0", to_ours=nonempty_str, widget="DropdownInput"),
                    LF.int_param("keep", "top_n", 3),
                ),
                inputs={"hits": "search_results", "query": "search_query"},
                outputs={"hits": "reranked_documents"},
                extra={
                    "outputs": (LF.out("reranked_documents", "Reranked Documents", ("JSON",), "compress_documents"),),
                    "handles": {"search_results": ("Data", "JSON"), "search_query": LF.MESSAGE},
                    "secret": "api_key",
                },
            ),
        ),
        "flowise": (
            Adapter(
                "reranker.cohere",
                "cohereRerankRetriever",
                inputs={"hits": "baseRetriever", "query": "query"},
                outputs={"hits": "retriever"},
                params=(
                    Param("model", "model", "rerank-v3.5", to_ours=nonempty_str),
                    Param("keep", "topK", 4, to_ours=FW.k),
                ),
                ignore=("maxChunksPerDoc",),
            ),
        ),
    }
    display_name = "Cohere Rerank"
    aliases = ("rerank", "reranker", "Reranker Cohere")
    Config = CohereRerankConfig
    credential_slots = (CredentialSlot("api_key", "cohere", description="Cohere API key (COHERE_API_KEY)."),)

    def run(self, inputs: RerankIn, ctx: RunContext) -> RerankedOut:
        config = self.config
        hits, query = inputs["hits"], question(inputs)
        candidates = hits[: config.candidates]
        ctx.details["query"] = query
        ctx.details["model"] = config.model
        if not candidates:
            ctx.details["scores"] = []
            return {"hits": []}
        api_key = ctx.secret("api_key")
        started = time.perf_counter()
        try:
            import cohere

            client = cohere.ClientV2(api_key=api_key, base_url=config.base_url or None, timeout=config.timeout)
            response = client.rerank(
                model=config.model,
                query=query,
                documents=[hit.document.text for hit in candidates],
                top_n=len(candidates),
                max_tokens_per_doc=config.max_tokens_per_doc,
                request_options={"max_retries": config.max_retries},
            )
        except FlowbuilderError:
            raise
        except Exception as exc:  # the SDK raises one class per status and httpx errors for the network
            raise _cohere_error(exc, api_key, config.base_url) from None
        ctx.details["seconds"] = round(time.perf_counter() - started, 3)
        scores = [0.0] * len(candidates)
        returned = set()
        for result in response.results:
            if not 0 <= result.index < len(candidates):
                raise ProviderError("Cohere", f"rerank returned index {result.index} for {len(candidates)} documents")
            scores[result.index] = float(result.relevance_score)
            returned.add(result.index)
        if len(returned) != len(candidates):
            raise ProviderError(
                "Cohere", f"rerank scored {len(returned)} of {len(candidates)} documents; cannot rank the rest"
            )
        ctx.details["scores"] = score_table(candidates, scores)
        return {"hits": reorder(candidates, scores, config.keep)}


def _cohere_error(exc: Exception, api_key: str, base_url: str) -> ProviderError:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    detail = body.get("message") if isinstance(body, dict) else None
    detail = scrub(str(detail or exc), api_key)
    where = base_url or "api.cohere.com"
    if status == 401:
        return ProviderError("Cohere", f"the API key was refused (401): {detail}. Bind a valid key to slot 'api_key'.")
    if status == 404:
        return ProviderError("Cohere", f"not found (404): {detail}. Check the model name and base_url.")
    if status == 429:
        return ProviderError("Cohere", f"rate limited (429): {detail}. Wait, or lower the number of candidates.")
    if status is not None:
        return ProviderError("Cohere", f"rerank failed ({status}): {detail}")
    name = type(exc).__name__
    if "Timeout" in name:
        return ProviderError(
            "Cohere", f"no answer from {where} within the timeout; raise 'timeout' or check the server."
        )
    if "Connect" in name:
        return ProviderError("Cohere", f"cannot reach {where} ({name}); check base_url and the network.")
    return ProviderError("Cohere", f"{name}: {detail}")
