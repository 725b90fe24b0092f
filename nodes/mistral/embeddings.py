"""``embedder.mistral``: embeddings from Mistral AI (mistral-embed) through the official SDK."""

from __future__ import annotations

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
from flowbuilder.nodes.mistral.common import DEFAULT_BASE_URL, ENV_VAR, PROVIDER, make_client, mistral_error
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot

KNOWN_DIMENSIONS = {"mistral-embed": 1024}


class MistralEmbedder(RemoteEmbedder):
    """The Embedder service of ``embedder.mistral``. The key lives only in the client object."""

    provider = PROVIDER
    max_tokens = 8192

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "mistral-embed",
        base_url: str = "",
        batch_size: int = 64,
        timeout: float = 60,
        cache_dir: Path | None = None,
        max_in_flight: int = 4,
        max_retries: int = 5,
    ) -> None:
        super().__init__(
            model=model,
            base_url=base_url or DEFAULT_BASE_URL,
            model_id=f"mistral/{model}",
            dimension=KNOWN_DIMENSIONS.get(model),
            batch_size=batch_size,
            timeout=timeout,
            cache_dir=cache_dir,
            max_in_flight=max_in_flight,
            max_retries=max_retries,
        )
        self._api_key = api_key

    def _make_client(self) -> Any:
        return make_client(self._api_key, self.base_url, self.timeout)

    def _request(self, texts: list[str]) -> list[list[float]]:
        response = self._get_client().embeddings.create(model=self.model, inputs=texts)
        data = sorted(response.data, key=lambda item: item.index or 0)
        return [list(item.embedding or []) for item in data]

    def _error(self, exc: Exception) -> ProviderError:
        return mistral_error(
            exc, where=self.base_url, what=f"model '{self.model}'", timeout=self.timeout, secret=self._api_key
        )


class MistralEmbedderConfig(BaseModel):
    """Settings of ``embedder.mistral``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field("mistral-embed", description="Mistral embedding model (mistral-embed: 1024-d).")
    base_url: str = Field("", description=f"Empty = {DEFAULT_BASE_URL}; or a compatible server.")
    batch_size: int = Field(64, ge=1, le=512, description="Texts per request.")
    cache: CacheSetting = True
    timeout: TimeoutSetting = 60
    max_in_flight: InFlightSetting = 4
    max_retries: RetriesSetting = 5


@register_node
class MistralEmbedderNode(Node[MistralEmbedderConfig, NoInputs, EmbedderOut]):
    """Embeddings from Mistral AI's mistral-embed (needs an API key)."""

    type_name = "embedder.mistral"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "embedder.mistral",
                LC + "embeddingsMistralCloud",
                (1,),
                outputs={"embedder": "ai_embedding"},
                params=(Param("model", "model", "mistral-embed", keep=True),),
                fixed={"options": {}},
                ignore=("options",),
                local=OFFLINE_EMBEDDER,
            ),
        ),
        "langflow": (
            Adapter(
                "embedder.mistral",
                "MistalAIEmbeddings",
                also=("MistralAIEmbeddings", "MistralAIEmbeddingsComponent"),
                display="MistralAI Embeddings",
                **LF.EMBEDDINGS_OUT,
                params=(
                    Param("model", "model", "mistral-embed", widget="DropdownInput"),
                    Param("base_url", "endpoint", to_ours=LF.mistral_endpoint, widget="MessageTextInput"),
                    Param("timeout", "timeout", to_ours=lambda v: to_float(v) or None, widget="IntInput", kind="int"),
                ),
                ignore=("max_concurrent_requests", "max_retries"),
                extra={
                    "outputs": (LF.out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),),
                    "secret": "mistral_api_key",
                },
                local=OFFLINE_EMBEDDER,
                providers=("mistral", "mistralai"),
            ),
        ),
        "flowise": (
            FW.service(
                "embedder.mistral",
                "mistralAIEmbeddings",
                "embedder",
                local=OFFLINE_EMBEDDER,
                params=(
                    Param("model", "modelName", "mistral-embed", to_ours=nonempty_str),
                    Param("base_url", "overrideEndpoint", to_ours=nonempty_str),
                ),
                ignore=("batchSize", "stripNewLines"),
            ),
        ),
        "dify": (
            Adapter(
                "embedder.mistral",
                "embedding:mistralai",
                params=(Param("model", "model", to_ours=nonempty_str),),
                export=False,
                local=OFFLINE_EMBEDDER,
            ),
        ),
    }
    display_name = "Mistral Embeddings"
    aliases = ("Embeddings", "embedding model", "Embeddings Mistral Cloud")
    category = "Embedders"
    Config = MistralEmbedderConfig
    credential_slots = (CredentialSlot("api_key", PROVIDER, description=f"Mistral API key ({ENV_VAR})."),)

    def run(self, inputs: NoInputs, ctx: RunContext) -> EmbedderOut:
        c = self.config
        embedder = MistralEmbedder(
            api_key=ctx.secret("api_key"),
            model=c.model,
            base_url=c.base_url,
            batch_size=c.batch_size,
            **remote_options(c, ctx),
        )
        ctx.details["model_id"] = embedder.model_id
        return {"embedder": embedder}
