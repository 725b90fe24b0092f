"""What the embedders that call a server (Ollama, OpenAI) share: the lazy SDK client, one request per
batch with its failure turned into a :class:`ProviderError`, and the wording of the shared failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from flowbuilder.errors import ProviderError
from nodes.embedders.cache import CachingEmbedder, open_cache


class RemoteEmbedder(CachingEmbedder):
    """A :class:`CachingEmbedder` whose cache misses go to a server, one request per batch.

    Subclasses set ``provider`` and implement ``_make_client`` (imports the SDK lazily), ``_request``
    (one batch in, one vector per text out; SDK exceptions left as they are) and ``_error`` (an SDK
    exception as a :class:`ProviderError` that says what to do).
    """

    provider: ClassVar[str] = ""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        model_id: str,
        dimension: int | None,
        batch_size: int,
        timeout: float,
        cache_dir: Path | None,
    ) -> None:
        super().__init__(open_cache(cache_dir) if cache_dir is not None else None)
        self.model = model
        self.base_url = base_url
        self.model_id = model_id
        self.batch_size = batch_size
        self.timeout = timeout
        self._dimension = dimension
        self._client: Any = None

    def __repr__(self) -> str:  # never show the client (it may hold a key)
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = self._make_client()
        return self._client

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        try:
            vectors = self._request(texts)
        except Exception as exc:
            raise self._error(exc) from None
        if len(vectors) != len(texts):
            raise ProviderError(
                self.provider, f"{self.base_url} returned {len(vectors)} embeddings for {len(texts)} texts."
            )
        return vectors

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _request(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def _error(self, exc: Exception) -> ProviderError:
        raise NotImplementedError

    def _timeout_error(self) -> ProviderError:
        return ProviderError(
            self.provider,
            f"{self.base_url} did not answer within {self.timeout:g} s: raise `timeout` or lower `batch_size`.",
        )
