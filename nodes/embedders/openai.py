"""Embeddings from OpenAI (text-embedding-3-small / -large) or any OpenAI-compatible ``/v1/embeddings``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import (
    OFFLINE_EMBEDDER,
    Adapter,
    ByVersion,
    Mappings,
    Param,
    nonempty_str,
    positive_int,
)
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
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot
from flowbuilder.trust.terminal import excerpt

PROVIDER = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KNOWN_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}
MAX_INPUT_TOKENS = 8191


class OpenAIEmbedder(RemoteEmbedder):
    """The Embedder service of ``embedder.openai``. The key lives only in the client object."""

    provider = PROVIDER
    max_tokens = MAX_INPUT_TOKENS

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "text-embedding-3-small",
        base_url: str = "",
        dimensions: int | None = None,
        batch_size: int = 256,
        timeout: float = 60,
        cache_dir: Path | None = None,
        max_in_flight: int = 4,
        max_retries: int = 5,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url or DEFAULT_BASE_URL,
            # Shortened vectors are a different space: they get their own model id (and cache entries).
            model_id=f"openai/{model}" + (f"@{dimensions}" if dimensions else ""),
            dimension=dimensions or KNOWN_DIMENSIONS.get(model),
            batch_size=batch_size,
            timeout=timeout,
            cache_dir=cache_dir,
            max_in_flight=max_in_flight,
            max_retries=max_retries,
        )
        self.dimensions = dimensions
        self._api_key = api_key

    def _make_client(self) -> Any:
        import openai

        # max_retries=0: RemoteEmbedder retries 429 and 5xx itself, honouring Retry-After across the requests in flight.
        return openai.OpenAI(api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0)

    def _request(self, texts: list[str]) -> list[list[float]]:
        kwargs: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions:
            kwargs["dimensions"] = self.dimensions
        response = self._get_client().embeddings.create(**kwargs)
        data = sorted(response.data, key=lambda item: getattr(item, "index", 0) or 0)
        return [list(item.embedding) for item in data]

    def _error(self, exc: Exception) -> ProviderError:
        import openai

        where = self.base_url
        if isinstance(exc, openai.AuthenticationError):
            return ProviderError(
                PROVIDER,
                f"{where} rejected the API key (401): bind a valid key to the node's `api_key` slot (provider openai).",
            )
        if isinstance(exc, openai.PermissionDeniedError):
            return ProviderError(PROVIDER, f"the API key may not use model '{self.model}' (403): check the project.")
        if isinstance(exc, openai.RateLimitError):
            return ProviderError(
                PROVIDER,
                f"rate limit or quota exceeded at {where} (429, after retries): wait and run again, lower "
                "batch_size, or check the account's billing.",
            )
        if isinstance(exc, openai.NotFoundError):
            known = ", ".join(sorted(KNOWN_DIMENSIONS))
            return ProviderError(
                PROVIDER, f"model '{self.model}' does not exist at {where} (404); embedding models: {known}."
            )
        if isinstance(exc, openai.APITimeoutError):
            return self._timeout_error()
        if isinstance(exc, openai.APIConnectionError):
            return ProviderError(
                PROVIDER, f"{where} is not reachable: check the network and `base_url`, or use the local embedder."
            )
        if isinstance(exc, openai.APIStatusError):
            detail = _safe_message(exc, self._api_key)
            return ProviderError(PROVIDER, f"{where} answered {exc.status_code}: {detail}")
        return ProviderError(PROVIDER, f"embedding at {where} failed: {type(exc).__name__}")


def _safe_message(exc: Any, secret: str) -> str:
    """The server's error text without anything that looks like the key."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    text = str(message or getattr(exc, "message", "") or type(exc).__name__)
    return excerpt(text.replace(secret, "***") if secret else text, 200)


class OpenAIEmbedderConfig(BaseModel):
    """Settings of ``embedder.openai``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field("text-embedding-3-small", description="text-embedding-3-small (1536-d) or -large (3072-d).")
    base_url: str = Field("", description="Empty = https://api.openai.com/v1; or any OpenAI-compatible server.")
    dimensions: int | None = Field(None, ge=1, description="Shorten the vectors (text-embedding-3 models only).")
    batch_size: int = Field(256, ge=1, le=2048, description="Texts per request (OpenAI allows up to 2048).")
    cache: CacheSetting = True
    timeout: TimeoutSetting = 60
    max_in_flight: InFlightSetting = 4
    max_retries: RetriesSetting = 5


@register_node
class OpenAIEmbedderNode(Node[OpenAIEmbedderConfig, NoInputs, EmbedderOut]):
    """Embeddings from OpenAI's text-embedding-3 models (needs an API key)."""

    type_name = "embedder.openai"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "embedder.openai",
                LC + "embeddingsOpenAi",
                (1, 1.1, 1.2),
                outputs={"embedder": "ai_embedding"},
                params=(
                    Param("model", "model", ByVersion({1: "text-embedding-ada-002"}, "text-embedding-3-small")),
                    Param("dimensions", "options.dimensions", 0, to_ours=positive_int, to_theirs=lambda v: v or 0),
                    Param("base_url", "options.baseURL", "", to_ours=nonempty_str),
                ),
                fixed={"options": {}},
                local=OFFLINE_EMBEDDER,
            ),
        ),
        "langflow": (
            Adapter(
                "embedder.openai",
                "OpenAIEmbeddings",
                also=("OpenAIEmbeddingsComponent",),
                display="OpenAI Embeddings",
                **LF.EMBEDDINGS_OUT,
                params=(
                    Param("model", "model", "text-embedding-3-small", widget="DropdownInput"),
                    Param(
                        "dimensions",
                        "dimensions",
                        to_ours=positive_int,
                        to_theirs=lambda v: v or 0,
                        widget="IntInput",
                        kind="int",
                    ),
                    Param("base_url", "openai_api_base", to_ours=nonempty_str, widget="MessageTextInput"),
                ),
                extra={
                    "outputs": (LF.out("embeddings", "Embedding Model", ("Embeddings",), "build_embeddings"),),
                    "secret": "openai_api_key",
                },
                local=OFFLINE_EMBEDDER,
                providers=("openai",),
            ),
            Adapter(
                "embedder.openai",
                "EmbeddingModel",
                display="Embedding Model",
                hook="provider",
                export=False,
                outputs={"embedder": "embeddings"},
                ignore=(
                    "model",
                    "base_url_ibm_watsonx",
                    "chunk_size",
                    "dimensions",
                    "input_text",
                    "max_retries",
                    "show_progress_bar",
                    "truncate_input_tokens",
                    "request_timeout",
                    "api_key",
                    "provider",
                    "model_name",
                    "api_base",
                    "project_id",
                    "model_kwargs",
                    "ollama_base_url",
                ),
            ),
        ),
        "flowise": (
            FW.service(
                "embedder.openai",
                "openAIEmbeddings",
                "embedder",
                local=OFFLINE_EMBEDDER,
                params=(
                    Param("model", "modelName", "text-embedding-ada-002", to_ours=nonempty_str),
                    Param("dimensions", "dimensions", to_ours=positive_int),
                    Param("base_url", "basepath", to_ours=nonempty_str),
                ),
                ignore=("stripNewLines", "batchSize", "timeout", "baseOptions", "encodingFormat"),
            ),
            FW.service(
                "embedder.openai",
                "openAIEmbeddingsCustom",
                "embedder",
                local=OFFLINE_EMBEDDER,
                params=(
                    Param("model", "modelName", to_ours=nonempty_str),
                    Param("dimensions", "dimensions", to_ours=positive_int),
                    Param("base_url", "basepath", to_ours=nonempty_str),
                ),
                ignore=("stripNewLines", "batchSize", "timeout", "baseOptions"),
            ),
        ),
        "dify": (
            Adapter(
                "embedder.openai",
                "embedding:openai",
                params=(Param("model", "model", to_ours=nonempty_str),),
                export=False,
                local=OFFLINE_EMBEDDER,
            ),
        ),
    }
    display_name = "OpenAI Embeddings"
    aliases = ("Embeddings", "embedding model", "Embeddings OpenAI")
    category = "Embedders"
    Config = OpenAIEmbedderConfig
    credential_slots = (CredentialSlot("api_key", "openai"),)

    def run(self, inputs: NoInputs, ctx: RunContext) -> EmbedderOut:
        c = self.config
        embedder = OpenAIEmbedder(
            api_key=ctx.secret("api_key"),
            model=c.model,
            base_url=c.base_url,
            dimensions=c.dimensions,
            batch_size=c.batch_size,
            **remote_options(c, ctx),
        )
        ctx.details["model_id"] = embedder.model_id
        return {"embedder": embedder}
