"""Keeping secrets out of everything Flowbuilder writes or shows.

Every secret value that is resolved for a run is registered here. :func:`redact` replaces any
registered value (and anything shaped like a well-known API key) with ``****``; the executor passes
event payloads and error messages through it and a logging filter applies it to every log record.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter

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


_SECRET_NAME_ENDINGS = (
    "apikey",
    "token",
    "password",
    "passwd",
    "secret",
    "secretkey",
    "accesskey",
    "privatekey",
    "authorization",
    "bearer",
)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_RANDOM_TOKEN = re.compile(r"^[A-Za-z0-9_\-+/=.:]{24,}$")
_ENTROPY_BITS = 4.0  # per character: random alphanumerics give ~5, words and hex hashes stay below


def is_secret_field(name: str) -> bool:
    """Whether a field called ``name`` holds a secret (``api_key``, ``apiKey``, ``token``, ``password`` ...)."""
    folded = re.sub(r"[^a-z0-9]", "", name.lower())
    return folded.endswith(_SECRET_NAME_ENDINGS)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_random(value: str) -> bool:
    """A long token of mixed letters and digits with high entropy: a secret whatever its shape."""
    if not _RANDOM_TOKEN.match(value) or _UUID.match(value) or len(value) > 512:
        return False
    has_letters = any(c.isalpha() for c in value)
    has_digits = any(c.isdigit() for c in value)
    return has_letters and has_digits and _entropy(value) >= _ENTROPY_BITS


def is_secret_value(field: str, value: object) -> bool:
    """Whether ``value`` found in field ``field`` of a file must be treated as a secret.

    By shape (provider key prefixes), by entropy (a random token anywhere), or by field name (any
    non-empty literal under ``api_key``, ``token``, ``password`` ...; an n8n expression is not a secret).
    """
    if not isinstance(value, str) or not value.strip():
        return False
    if looks_like_key(value) or looks_random(value.strip()):
        return True
    return is_secret_field(field) and not value.startswith("=") and len(value.strip()) >= _MIN_SECRET_LEN


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
