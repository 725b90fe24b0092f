"""Embeddings from a local or remote Ollama server (``POST /api/embed``), e.g. nomic-embed-text.

nomic-embed-text expects task prefixes: ``search_document: `` on stored texts and ``search_query: `` on
questions; both are config fields (empty them for models that need none). The prefix is part of the
cached text, so changing it re-embeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import ProviderError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import OFFLINE_EMBEDDER, Adapter, Mappings, Param, nonempty_str
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
from flowbuilder.nodes.ollama_client import API_KEY_SLOT, make_client
from flowbuilder.registry import register_node
from flowbuilder.trust.terminal import excerpt

PROVIDER = "ollama"
KNOWN_DIMENSIONS = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
}


def _base_name(model: str) -> str:
    return model.split(":", 1)[0]


class OllamaEmbedder(RemoteEmbedder):
    """The Embedder service of ``embedder.ollama``."""

    provider = PROVIDER

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        document_prefix: str = "",
        query_prefix: str = "",
        batch_size: int = 32,
        timeout: float = 60,
        cache_dir: Path | None = None,
        api_key: str | None = None,
        max_in_flight: int = 4,
        max_retries: int = 5,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url,
            model_id=f"ollama/{model}",
            dimension=KNOWN_DIMENSIONS.get(_base_name(model)),
            batch_size=batch_size,
            timeout=timeout,
            cache_dir=cache_dir,
            max_in_flight=max_in_flight,
            max_retries=max_retries,
        )
        self.document_prefix = document_prefix
        self.query_prefix = query_prefix
        self._api_key = api_key

    def _make_client(self) -> Any:
        return make_client(self.base_url, self.timeout, self._api_key)

    def _request(self, texts: list[str]) -> list[list[float]]:
        response = self._get_client().embed(model=self.model, input=texts)
        return [list(v) for v in response.embeddings]

    def _available_models(self) -> list[str]:
        try:
            return sorted(m.model or "" for m in self._get_client().list().models)
        except Exception:
            return []

    def _error(self, exc: Exception) -> ProviderError:
        import httpx
        import ollama

        where = self.base_url
        if isinstance(exc, ollama.ResponseError):
            status = exc.status_code
            if status == 404 or "not found" in str(exc.error).lower():
                models = self._available_models()
                listed = f" Models on this server: {', '.join(models)}." if models else ""
                return ProviderError(
                    PROVIDER,
                    f"model '{self.model}' is not available at {where}: run `ollama pull {self.model}`.{listed}",
                )
            if status in (401, 403):
                return ProviderError(
                    PROVIDER,
                    f"{where} refused the request ({status} unauthorized): check the server's access settings.",
                )
            if status == 429:
                return ProviderError(
                    PROVIDER, f"{where} is rate limiting (429): wait and run again, or lower batch_size."
                )
            return ProviderError(PROVIDER, f"{where} answered {status}: {excerpt(exc.error, 200)}")
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            return self._timeout_error()
        if isinstance(exc, ConnectionError | httpx.TransportError):
            return ProviderError(
                PROVIDER,
                f"Ollama is not reachable at {where}: start it with `ollama serve`, or use the local embedder.",
            )
        return ProviderError(PROVIDER, f"embedding at {where} failed: {type(exc).__name__}: {excerpt(exc, 200)}")


class OllamaEmbedderConfig(BaseModel):
    """Settings of ``embedder.ollama``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field("nomic-embed-text", description="An embedding model pulled into Ollama.")
    base_url: str = Field("http://127.0.0.1:11434", description="The Ollama server.")
    document_prefix: str = Field("search_document: ", description="Prepended to every stored text.")
    query_prefix: str = Field("search_query: ", description="Prepended to every question.")
    batch_size: int = Field(32, ge=1, le=2048, description="Texts per request.")
    cache: CacheSetting = True
    timeout: TimeoutSetting = 60
    max_in_flight: InFlightSetting = 4
    max_retries: RetriesSetting = 5


@register_node
class OllamaEmbedderNode(Node[OllamaEmbedderConfig, NoInputs, EmbedderOut]):
    """Embeddings from an Ollama server (nomic-embed-text by default)."""

    type_name = "embedder.ollama"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "embedder.ollama",
                LC + "embeddingsOllama",
                (1,),
                outputs={"embedder": "ai_embedding"},
                params=(Param("model", "model", "llama3.2", keep=True),),
                local=OFFLINE_EMBEDDER,
            ),
        ),
        "langflow": (
            Adapter(
                "embedder.ollama",
                "OllamaEmbeddings",
                also=("OllamaEmbeddingsComponent",),
                display="Ollama Embeddings",
                **LF.EMBEDDINGS_OUT,
                params=(
                    Param("model", "model_name", "nomic-embed-text", widget="DropdownInput"),
                    Param("model", "model", export=False),
                    Param("base_url", "base_url", to_ours=nonempty_str, widget="MessageTextInput"),
                ),
                extra={"outputs": (LF.out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),)},
                local=OFFLINE_EMBEDDER,
                providers=("ollama",),
            ),
        ),
        "flowise": (
            FW.service(
                "embedder.ollama",
                "ollamaEmbedding",
                "embedder",
                local=OFFLINE_EMBEDDER,
                params=(
                    Param("model", "modelName", to_ours=nonempty_str),
                    Param("base_url", "baseUrl", "http://localhost:11434", to_ours=nonempty_str),
                ),
                ignore=("numGpu", "numThread", "useMMap"),
            ),
        ),
        "dify": (
            Adapter(
                "embedder.ollama",
                "embedding:ollama",
                params=(Param("model", "model", to_ours=nonempty_str),),
                export=False,
                local=OFFLINE_EMBEDDER,
            ),
        ),
    }
    display_name = "Ollama Embeddings"
    aliases = ("Embeddings", "embedding model", "Embeddings Ollama")
    category = "Embedders"
    Config = OllamaEmbedderConfig
    credential_slots = (API_KEY_SLOT,)

    def run(self, inputs: NoInputs, ctx: RunContext) -> EmbedderOut:
        c = self.config
        embedder = OllamaEmbedder(
            model=c.model,
            base_url=c.base_url,
            document_prefix=c.document_prefix,
            query_prefix=c.query_prefix,
            batch_size=c.batch_size,
            api_key=ctx.secret("api_key") if ctx.has_secret("api_key") else None,
            **remote_options(c, ctx),
        )
        ctx.details["model_id"] = embedder.model_id
        return {"embedder": embedder}
