"""A readers-writer lock: many searches at once, an ingest alone.

Writer-preferring: once a writer waits, new readers queue behind it, so a re-ingest is never starved by a
steady stream of searches (and searches never read a store while it is being rewritten).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Many readers or one writer; a waiting writer goes first (an ingest is not starved by searches)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold the shared side while the block runs (searches, asks, chunk reads)."""
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the exclusive side while the block runs (an ingest)."""
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()
