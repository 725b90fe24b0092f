"""``embedder.cohere``: embeddings from Cohere (embed-english-v3.0 and friends) through the official SDK.

Cohere's embed models want to know what a text is for (``input_type``): passages to store are embedded
as ``search_document``, questions as ``search_query``. The two are different vectors for the same text,
so each side has its own model id in the embedding cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import OFFLINE_EMBEDDER, Adapter, Mappings, Param, nonempty_str, to_float
from flowbuilder.formats.n8n_table import LC
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.embedders.remote import (
    CacheSetting,
    InFlightSetting,
    RemoteEmbedder,
    RetriesSetting,
    TimeoutSetting,
    remote_options,
)
from flowbuilder.nodes.io import EmbedderOut, NoInputs
from flowbuilder.nodes.llms.base import scrub
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot

PROVIDER = "cohere"
DEFAULT_BASE_URL = "https://api.cohere.com"
DEFAULT_MODEL = "embed-english-v3.0"
MAX_BATCH = 96
"""Cohere's limit of texts per embed request."""
KNOWN_DIMENSIONS = {
    "embed-v4.0": 1536,
    "embed-english-v3.0": 1024,
    "embed-multilingual-v3.0": 1024,
    "embed-english-light-v3.0": 384,
    "embed-multilingual-light-v3.0": 384,
    "embed-english-v2.0": 4096,
    "embed-english-light-v2.0": 1024,
    "embed-multilingual-v2.0": 768,
}
DOCUMENT, QUERY = "search_document", "search_query"


class CohereEmbedder(RemoteEmbedder):
    """The Embedder service of ``embedder.cohere``. The key lives only in the client object.

    Documents go out as ``search_document``; :meth:`embed_query` hands questions to a twin that sends
    ``search_query`` through the same client (and keeps its vectors under its own cache id)."""

    provider = PROVIDER
    max_tokens = 512

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str = "",
        batch_size: int = MAX_BATCH,
        timeout: float = 60,
        cache_dir: Path | None = None,
        max_in_flight: int = 4,
        max_retries: int = 5,
        input_type: str = DOCUMENT,
        _documents: CohereEmbedder | None = None,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url or DEFAULT_BASE_URL,
            model_id=f"cohere/{model}" + ("" if input_type == DOCUMENT else f"#{input_type}"),
            dimension=KNOWN_DIMENSIONS.get(model),
            batch_size=min(batch_size, MAX_BATCH),
            timeout=timeout,
            cache_dir=cache_dir,
            max_in_flight=max_in_flight,
            max_retries=max_retries,
        )
        self.input_type = input_type
        self._api_key = api_key
        self._documents = _documents
        self._query_side: CohereEmbedder | None = None
        if input_type == DOCUMENT:
            self._query_side = CohereEmbedder(
                api_key=api_key,
                model=model,
                base_url=self.base_url,
                batch_size=self.batch_size,
                timeout=timeout,
                cache_dir=cache_dir,
                max_in_flight=max_in_flight,
                max_retries=max_retries,
                input_type=QUERY,
                _documents=self,
            )

    def embed_query(self, text: str) -> list[float]:
        if self._query_side is None:
            return super().embed_query(text)
        vector = self._query_side.embed_query(text)
        self._dimension = self._dimension or len(vector)
        return vector

    def _make_client(self) -> Any:
        if self._documents is not None:  # the query twin shares the documents' client
            return self._documents._get_client()
        import cohere

        # max_retries=0: RemoteEmbedder retries 429 and 5xx itself, honouring Retry-After across the requests in flight.
        return cohere.ClientV2(api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0)

    def _request(self, texts: list[str]) -> list[list[float]]:
        response = self._get_client().embed(
            model=self.model, input_type=self.input_type, texts=texts, embedding_types=["float"]
        )
        vectors = response.embeddings.float_
        if vectors is None:
            raise ProviderError(PROVIDER, f"{self.base_url} returned no float embeddings for model '{self.model}'.")
        return [list(vector) for vector in vectors]

    def _status(self, exc: Exception) -> tuple[int | None, Mapping[str, str] | None]:
        status = getattr(exc, "status_code", None)
        headers = getattr(exc, "headers", None)
        if isinstance(status, int):
            return status, headers if isinstance(headers, Mapping) else None
        return super()._status(exc)

    def _error(self, exc: Exception) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        where = self.base_url
        status, _ = self._status(exc)
        body = getattr(exc, "body", None)
        detail = body.get("message") if isinstance(body, dict) else None
        detail = scrub(str(detail or type(exc).__name__), self._api_key)
        if status == 401:
            return ProviderError(
                PROVIDER,
                f"{where} rejected the API key (401): bind a valid key to the node's `api_key` slot (provider cohere).",
            )
        if status == 403:
            return ProviderError(PROVIDER, f"the API key may not use model '{self.model}' (403): {detail}")
        if status == 404:
            known = ", ".join(sorted(KNOWN_DIMENSIONS))
            return ProviderError(
                PROVIDER, f"model '{self.model}' does not exist at {where} (404); embedding models: {known}."
            )
        if status == 429:
            return ProviderError(
                PROVIDER,
                f"rate limit exceeded at {where} (429, after retries): {detail}. Wait and run again, or lower "
                "max_in_flight / batch_size (a trial key allows few calls a minute).",
            )
        if status is not None:
            return ProviderError(PROVIDER, f"{where} answered {status}: {detail}")
        name = type(exc).__name__
        if "Timeout" in name:
            return self._timeout_error()
        if "Connect" in name:
            return ProviderError(
                PROVIDER, f"{where} is not reachable: check the network and `base_url`, or use the local embedder."
            )
        return ProviderError(PROVIDER, f"embedding at {where} failed: {name}")


class CohereEmbedderConfig(BaseModel):
    """Settings of ``embedder.cohere``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        DEFAULT_MODEL,
        description="Cohere embed model: embed-english-v3.0 (1024-d), embed-multilingual-v3.0, "
        "embed-english-light-v3.0 (384-d), embed-v4.0 (1536-d).",
    )
    base_url: str = Field("", description=f"Empty = {DEFAULT_BASE_URL}; or a compatible server.")
    batch_size: int = Field(MAX_BATCH, ge=1, le=MAX_BATCH, description="Texts per request (Cohere allows 96).")
    cache: CacheSetting = True
    timeout: TimeoutSetting = 60
    max_in_flight: InFlightSetting = 4
    max_retries: RetriesSetting = 5


@register_node
class CohereEmbedderNode(Node[CohereEmbedderConfig, NoInputs, EmbedderOut]):
    """Embeddings from Cohere's embed models (needs an API key)."""

    type_name = "embedder.cohere"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "embedder.cohere",
                LC + "embeddingsCohere",
                (1,),
                outputs={"embedder": "ai_embedding"},
                params=(Param("model", "modelName", "embed-english-v2.0", keep=True),),
                ignore=("notice",),
                local=OFFLINE_EMBEDDER,
            ),
        ),
        "langflow": (
            Adapter(
                "embedder.cohere",
                "CohereEmbeddings",
                also=("CohereEmbeddingsComponent",),
                display="Cohere Embeddings",
                **LF.EMBEDDINGS_OUT,
                params=(
                    Param("model", "model_name", "embed-english-v2.0", widget="DropdownInput"),
                    Param(
                        "timeout",
                        "request_timeout",
                        to_ours=lambda v: to_float(v) or None,
                        widget="FloatInput",
                        kind="float",
                    ),
                ),
                ignore=("truncate", "max_retries", "user_agent"),
                extra={
                    "outputs": (LF.out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),),
                    "secret": "api_key",
                },
                local=OFFLINE_EMBEDDER,
            ),
        ),
        "flowise": (
            FW.service(
                "embedder.cohere",
                "cohereEmbeddings",
                "embedder",
                local=OFFLINE_EMBEDDER,
                params=(Param("model", "modelName", "embed-english-v2.0", to_ours=nonempty_str),),
                ignore=("inputType",),
            ),
        ),
        "dify": (
            Adapter(
                "embedder.cohere",
                "embedding:cohere",
                params=(Param("model", "model", to_ours=nonempty_str),),
                export=False,
                local=OFFLINE_EMBEDDER,
            ),
        ),
    }
    display_name = "Cohere Embeddings"
    aliases = ("Embeddings", "embedding model", "Embeddings Cohere")
    category = "Embedders"
    Config = CohereEmbedderConfig
    credential_slots = (CredentialSlot("api_key", PROVIDER, description="Cohere API key (COHERE_API_KEY)."),)

    def run(self, inputs: NoInputs, ctx: RunContext) -> EmbedderOut:
        c = self.config
        embedder = CohereEmbedder(
            api_key=ctx.secret("api_key"),
            model=c.model,
            base_url=c.base_url,
            batch_size=c.batch_size,
            **remote_options(c, ctx),
        )
        ctx.details["model_id"] = embedder.model_id
        return {"embedder": embedder}
