"""What the embedders that call a server (Ollama, OpenAI, Mistral) share: the lazy SDK client, several
batches in flight, rate limits honoured, and a failure that says which batch failed.

- ``max_in_flight`` requests go out at once (a thread pool; the SDK clients are thread-safe). Vectors are
  written to the embedding cache as each batch comes back, so a failure, a cancel or a killed process
  resumes from every batch already done.
- 429 (and 500/502/503/504) are retried up to ``max_retries`` times. The wait honours the server's
  ``Retry-After`` (or ``retry-after-ms``), else backs off exponentially; the wait holds back *every*
  request in flight, not only the one that was refused, so the client slows down as a whole.
- A batch that still fails stops the run with one line: which batch, how many texts, how many batches are
  already in the cache, and what to do.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from email.utils import parsedate_to_datetime
from functools import partial
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol

import numpy as np
from pydantic import Field

from flowbuilder.errors import ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.cache import CachingEmbedder, open_cache

# The config fields every remote embedder shares (its Config declares them, in its own order, with these
# defaults: cache = True, timeout = 60, max_in_flight = 4, max_retries = 5), and what they become.
CacheSetting = Annotated[
    bool, Field(description="Keep vectors in <data dir>/embeddings.sqlite so re-runs embed nothing twice.")
]
TimeoutSetting = Annotated[float, Field(gt=0, description="Seconds to wait for one request.")]
InFlightSetting = Annotated[
    int, Field(ge=1, le=64, description="Batches sent at once (more = faster against a server that can take them).")
]
RetriesSetting = Annotated[
    int, Field(ge=0, le=20, description="Retries of a batch refused with 429 or 5xx (waits as Retry-After says).")
]


class RemoteSettings(Protocol):
    """The shared fields of a remote embedder's Config."""

    cache: bool
    timeout: float
    max_in_flight: int
    max_retries: int


def remote_options(config: RemoteSettings, ctx: RunContext) -> dict[str, Any]:
    """The :class:`RemoteEmbedder` keyword arguments the shared config fields give (``cache`` -> the data dir)."""
    return {
        "timeout": config.timeout,
        "cache_dir": ctx.data_dir if config.cache else None,
        "max_in_flight": config.max_in_flight,
        "max_retries": config.max_retries,
    }


RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_WAIT = 120.0
"""A server asking for a longer pause than this gets a clear error instead of a silent hour-long wait."""
BASE_BACKOFF = 0.5


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) as seconds; None when absent."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        if "retry-after-ms" in lower:
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
        value = lower.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (ValueError, TypeError, OverflowError):
        return None


class _Pause:
    """The moment before which no request may go out (set by a 429's Retry-After); shared by the pool."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until = 0.0

    def extend(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def wait(self) -> None:
        while True:
            with self._lock:
                left = self._until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.5))


class RemoteEmbedder(CachingEmbedder):
    """A :class:`CachingEmbedder` whose cache misses go to a server, ``max_in_flight`` batches at a time.

    Subclasses set ``provider`` and implement ``_make_client`` (imports the SDK lazily), ``_request``
    (one batch in, one vector per text out; SDK exceptions left as they are), ``_error`` (an SDK
    exception as a :class:`ProviderError` that says what to do) and ``_status`` (the HTTP status and
    headers of an SDK exception, for the retry decision).
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
        max_in_flight: int = 4,
        max_retries: int = 5,
    ) -> None:
        super().__init__(open_cache(cache_dir) if cache_dir is not None else None)
        self.model = model
        self.base_url = base_url
        self.model_id = model_id
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_in_flight = max(1, max_in_flight)
        self.max_retries = max(0, max_retries)
        self._dimension = dimension
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._pause = _Pause()
        self.retries = 0
        """How many requests were sent again after a 429 or 5xx (shown in the store's details)."""

    def __repr__(self) -> str:  # never show the client (it may hold a key)
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _get_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    # -- one batch -----------------------------------------------------------------------------

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        attempt = 0
        while True:
            self._pause.wait()
            try:
                vectors = self._request(texts)
                break
            except Exception as exc:
                status, headers = self._status(exc)
                if status not in RETRY_STATUSES or attempt >= self.max_retries:
                    raise self._error(exc) from None
                hinted = retry_after_seconds(headers)
                if hinted is not None and hinted > MAX_WAIT:
                    raise ProviderError(
                        self.provider,
                        f"{self.base_url} asks to wait {hinted:.0f} s before the next request ({status}): "
                        "run again later, or lower max_in_flight / batch_size.",
                    ) from None
                backoff = BASE_BACKOFF * 2**attempt * (0.5 + random.random())
                self._pause.extend(min(MAX_WAIT, hinted if hinted is not None else backoff))
                attempt += 1
                self.retries += 1
        if len(vectors) != len(texts):
            raise ProviderError(
                self.provider, f"{self.base_url} returned {len(vectors)} embeddings for {len(texts)} texts."
            )
        return vectors

    # -- many batches --------------------------------------------------------------------------

    def _embed_batches(self, batches: list[list[str]], deliver: Callable[[int, np.ndarray], None]) -> None:
        if self.max_in_flight <= 1 or len(batches) <= 1:
            for number, texts in enumerate(batches):
                self._deliver_or_explain(number, batches, deliver, partial(self._embed_batch, texts))
            return
        done_batches = 0
        with ThreadPoolExecutor(self.max_in_flight, thread_name_prefix=f"embed-{self.provider}") as pool:
            waiting = list(enumerate(batches))[::-1]
            running: dict[Future[list[list[float]]], int] = {}
            try:
                while waiting or running:
                    while waiting and len(running) < self.max_in_flight:
                        number, texts = waiting.pop()
                        running[pool.submit(self._embed_batch, texts)] = number
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in sorted(finished, key=lambda f: running[f]):
                        number = running.pop(future)
                        self._deliver_or_explain(number, batches, deliver, future.result, done_batches)
                        done_batches += 1
            finally:
                for future in running:  # a failure or a cancel: send nothing more
                    future.cancel()

    def _deliver_or_explain(
        self,
        number: int,
        batches: list[list[str]],
        deliver: Callable[[int, np.ndarray], None],
        get: Callable[[], list[list[float]]],
        done_batches: int | None = None,
    ) -> None:
        try:
            vectors = get()
        except ProviderError as exc:
            if len(batches) == 1:  # one batch (a question): the provider's message says it all
                raise
            done = number if done_batches is None else done_batches
            raise ProviderError(self.provider, self._which_batch(exc, number, batches, done)) from None
        deliver(number, np.asarray(vectors, dtype=np.float32))

    def _which_batch(self, exc: ProviderError, number: int, batches: list[list[str]], done: int) -> str:
        first = sum(len(b) for b in batches[:number]) + 1
        last = first + len(batches[number]) - 1
        reason = str(exc).removeprefix(f"{self.provider}: ")
        kept = (
            f"the {done} batch(es) already embedded are in the embedding cache: run again to resume from there"
            if self.cache is not None
            else "the embedding cache is off, so a new run embeds everything again"
        )
        where = f"batch {number + 1} of {len(batches)} (texts {first}-{last} of those not cached)"
        return f"{where} failed: {reason} ({kept})."

    # -- per provider --------------------------------------------------------------------------

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _request(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def _error(self, exc: Exception) -> ProviderError:
        raise NotImplementedError

    def _status(self, exc: Exception) -> tuple[int | None, Mapping[str, str] | None]:
        """The HTTP status and response headers of an SDK exception (None when it carries none)."""
        response = getattr(exc, "response", None) or getattr(exc, "raw_response", None)
        status = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
        headers = getattr(response, "headers", None)
        return (int(status) if isinstance(status, int) else None), headers

    def _timeout_error(self) -> ProviderError:
        return ProviderError(
            self.provider,
            f"{self.base_url} did not answer within {self.timeout:g} s: raise `timeout` or lower `batch_size`.",
        )
