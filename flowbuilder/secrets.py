"""Keeping secrets out of everything Flowbuilder writes or shows.

Every secret value that is resolved for a run is registered here. :func:`redact` replaces any
registered value (and anything shaped like a well-known API key) with ``****``; the executor passes
event payloads and error messages through it and a logging filter applies it to every log record.
"""

from __future__ import annotations

import logging
import re
import threading

MASK = "****"

# Shapes of provider keys, so that a key pasted somewhere unexpected is masked even if it was never
# registered (e.g. found in an imported file).
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_\-]{16,}|gsk_[A-Za-z0-9]{16,}|pcsk_[A-Za-z0-9_]{16,}|xai-[A-Za-z0-9]{16,})\b"
)
_MIN_SECRET_LEN = 4  # shorter values would mask ordinary words

_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Remember ``value`` so that :func:`redact` masks it from now on."""
    if value and len(value) >= _MIN_SECRET_LEN:
        with _lock:
            _secrets.add(value)


def looks_like_key(value: str) -> bool:
    """Whether ``value`` has the shape of a well-known provider API key."""
    return bool(_KEY_SHAPES.search(value))


def redact(text: str) -> str:
    """Return ``text`` with every registered secret and every key-shaped string masked."""
    if not text:
        return text
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return _KEY_SHAPES.sub(MASK, text)


def redact_obj(value: object) -> object:
    """Redact strings inside plain JSON-like structures (event payloads)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_obj(v) for v in value]
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Attach :class:`RedactingFilter` to ``logger`` and its handlers (the root logger by default)."""
    target = logger or logging.getLogger()
    if not any(isinstance(f, RedactingFilter) for f in target.filters):
        target.addFilter(RedactingFilter())
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
