"""Waiting for a condition instead of sleeping: the one place tests poll.

A test that sleeps a fixed time either wastes it on an idle machine or fails on a busy one. These helpers poll a
condition until it holds or a generous deadline passes, and then fail saying what was awaited and what was seen
last. The short interval between polls is the only sleep a test needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.05
"""Between two looks at a condition: short next to any deadline, long enough not to burn a busy core."""


def _check(deadline: float, timeout: float, name: str, failure: str, last: object) -> None:
    """Past the deadline: fail naming what was awaited and what was seen last."""
    if time.monotonic() >= deadline:
        raise AssertionError(f"{name} {failure} within {timeout:g} s (last seen: {last!r})")


def wait_until(condition: Callable[[], T], timeout: float = 15.0, what: str = "") -> T:
    """The first truthy value of ``condition()`` within ``timeout`` seconds. An exception from ``condition``
    (an element being re-rendered, a server not up yet) counts as "not yet" and is named on failure; an
    ``AssertionError`` is a failure at once (a server process that exited will not come up)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = condition()
        except AssertionError:
            raise
        except Exception as exc:  # any failure to look is "not yet"; reported if it lasts
            last = exc
        else:
            if value:
                return value
            last = value
        _check(deadline, timeout, what or getattr(condition, "__name__", "condition"), "not met", last)
        time.sleep(POLL_S)


def wait_stable(read: Callable[[], T], timeout: float = 15.0, looks: int = 3, what: str = "") -> T:
    """``read()`` once it gave the same value ``looks`` times in a row (a view that stopped moving: a fit, a
    layout, an animation, a scroll). Exceptions count as a change."""
    deadline = time.monotonic() + timeout
    previous: object = object()
    same = 0
    while True:
        try:
            value = read()
        except Exception as exc:  # a look that failed is a change
            value, same = exc, 0  # type: ignore[assignment]
        else:
            same = same + 1 if value == previous else 1
            if same >= looks:
                return value
        previous = value
        _check(deadline, timeout, what or getattr(read, "__name__", "value"), "did not settle", value)
        time.sleep(POLL_S)


async def wait_until_async(condition: Callable[[], T], timeout: float = 20.0, what: str = "") -> T:
    """:func:`wait_until` for tests on NiceGUI's event loop (``user`` tests): polls without blocking the loop the
    app runs on. Exceptions from ``condition`` propagate (these conditions read Python state, not a browser)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        _check(deadline, timeout, what or getattr(condition, "__name__", "condition"), "not met", value)
        await asyncio.sleep(POLL_S)
