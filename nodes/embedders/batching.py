"""A micro-batcher in front of an embedder: questions that arrive together are embedded in one call.

No timer and no added latency: the first caller embeds its question at once. Callers that arrive while a
batch is being embedded queue up, and when it is done the first of them embeds the whole queue in one call
(up to ``max_batch``). One at a time, every question is embedded alone as before; under load, 20 concurrent
searches cost a few model calls instead of 20 competing ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Waiting:
    text: str
    done: threading.Event = field(default_factory=threading.Event)
    vector: np.ndarray | None = None
    error: BaseException | None = None
    lead: bool = False


class QueryBatcher:
    """Questions that arrive while one is embedded go together into the next model call (no timer)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], max_batch: int = 64) -> None:
        self._embed = embed
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Waiting] = []
        self._busy = False
        self.calls = 0
        """How many model calls the batcher made (fewer than questions when they were batched)."""
        self.largest = 0

    def embed(self, text: str) -> np.ndarray:
        me = _Waiting(text)
        with self._lock:
            self._queue.append(me)
            if not self._busy:
                self._busy = me.lead = True
        if not me.lead:
            me.done.wait()
            if not me.lead:  # someone else embedded it
                return self._result(me)
        self._lead()
        return self._result(me)

    def _lead(self) -> None:
        with self._lock:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
        try:
            matrix = self._embed([w.text for w in batch])
            self.calls += 1
            self.largest = max(self.largest, len(batch))
            for waiting, vector in zip(batch, matrix, strict=True):
                waiting.vector = vector
        except BaseException as exc:  # every caller of the batch gets the error, not only the leader
            for waiting in batch:
                waiting.error = exc
        finally:
            with self._lock:
                following = self._queue[0] if self._queue else None
                if following is None:
                    self._busy = False
                else:
                    following.lead = True
            for waiting in batch:
                if waiting.lead and waiting is not following:
                    waiting.lead = False
                waiting.done.set()
            if following is not None:
                following.done.set()

    @staticmethod
    def _result(waiting: _Waiting) -> np.ndarray:
        if waiting.error is not None:
            raise waiting.error
        assert waiting.vector is not None
        return waiting.vector
