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
# registered (e.g. found in an imported file): OpenAI/Anthropic, Groq, Pinecone, xAI, AWS access key ids,
# GitHub, Slack, Google, Hugging Face, Stripe, and JSON web tokens.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_\-]{16,}|gsk_[A-Za-z0-9]{16,}|pcsk_[A-Za-z0-9_]{16,}|xai-[A-Za-z0-9]{16,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_\-]{35}|hf_[A-Za-z0-9]{30,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
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
_SECRET_NAME_WORDS = frozenset({"pass", "pwd", "passwd", "passphrase"})
"""Short names that hold a password only as a whole word (``db_pass``, ``dbPass``, ``pwd``; not ``compass``)."""
_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_RANDOM_TOKEN = re.compile(r"^[A-Za-z0-9_\-+/=.:]{24,}$")
_ENTROPY_BITS = 4.0  # per character: random alphanumerics give ~5, words and hex hashes stay below


def is_secret_field(name: str) -> bool:
    """Whether a field called ``name`` holds a secret (``api_key``, ``apiKey``, ``token``, ``password``,
    ``db_pass``, ``pwd`` ...)."""
    folded = re.sub(r"[^a-z0-9]", "", name.lower())
    if folded.endswith(_SECRET_NAME_ENDINGS):
        return True
    words = _NAME_WORDS.findall(name)
    return bool(words) and words[-1].lower() in _SECRET_NAME_WORDS


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_PATH_OR_URL = re.compile(
    r"^(?:[A-Za-z][A-Za-z0-9+.\-]*://|/|~/|\.{1,2}/|[A-Za-z]:[\\/])|[A-Za-z0-9]://|/[^/]*\.[a-z0-9]{2,5}$"
)
"""A URL, an absolute, home or relative path, or a path ending in a file name: judged part by part."""
_PATH_PARTS = re.compile(r"[/\\?&=#@:]+")


_WORDY_PIECE = re.compile(r"^(?:[A-Za-z][a-z]*|[A-Z]+|[0-9]+|[0-9]+x?[0-9]*[A-Za-z]{1,2}|[A-Za-z][0-9]+)$")
"""A word, an acronym, a number, or a model name's size or version (``70B``, ``8x7B``, ``4o``, ``v3``, ``Q4``)."""


def _wordy(value: str) -> bool:
    """Words and numbers joined by ``-``, ``_`` or ``.`` (``HR-Policies-2024-final.pdf``,
    ``Meta-Llama-3.3-70B-Instruct``): a name, not a key."""
    pieces = [p for p in re.split(r"[-_.]+", value) if p]
    return len(pieces) > 1 and all(_WORDY_PIECE.match(p) for p in pieces)


def _colon_name(value: str) -> bool:
    """Short parts joined by ``:`` (``ft:gpt-4.1-2025-04-14:org:name:CrV9Ir4p``, an ARN): an identifier."""
    parts = value.split(":")
    return len(parts) >= 3 and all(len(p) < 24 for p in parts)  # a key is one long random run


def _random_token(value: str) -> bool:
    if not _RANDOM_TOKEN.match(value) or _UUID.match(value) or len(value) > 512 or _wordy(value):
        return False
    if _colon_name(value):
        return False
    has_letters = any(c.isalpha() for c in value)
    has_digits = any(c.isdigit() for c in value)
    return has_letters and has_digits and _entropy(value) >= _ENTROPY_BITS


def looks_random(value: str) -> bool:
    """A long token of mixed letters and digits with high entropy: a secret whatever its shape. A path or URL
    (``/srv/n8n/Uploads/HR-Policies-2024``) is not, unless one of its parts is such a token by itself."""
    if _PATH_OR_URL.search(value):
        return any(_random_token(part) for part in _PATH_PARTS.split(value))
    return _random_token(value)


def secret_reason(field: str, value: object) -> str | None:
    """Why ``value`` found in field ``field`` of a file must be treated as a secret, or None when it need not.

    By shape (provider key prefixes), by entropy (a random token anywhere), or by field name (any
    non-empty literal under ``api_key``, ``token``, ``password`` ...; an n8n expression is not a secret).
    """
    if not isinstance(value, str) or not value.strip():
        return None
    if looks_like_key(value):
        return "shaped like a provider's API key"
    if looks_random(value.strip()):
        return f"a random-looking token of {len(value.strip())} characters (high entropy)"
    if is_secret_field(field) and not value.startswith("=") and len(value.strip()) >= _MIN_SECRET_LEN:
        return f"a literal value in the secret-named field '{field}'"
    return None


def is_secret_value(field: str, value: object) -> bool:
    """Whether ``value`` found in field ``field`` of a file must be treated as a secret (see :func:`secret_reason`)."""
    return secret_reason(field, value) is not None


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


_ASSIGNMENT = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{1,60})[\"']?[ \t]*[:=][ \t]*[\"']?(?=(?P<value>[^\s\"',;{}()\[\]<>]{4,}))"
)
"""``name: value`` / ``name=value`` / ``"name": "value"``; the value is only looked at (not consumed), so that
``line: api_key=...`` still finds ``api_key``."""
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.:]{24,}")
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/@?#]{1,200}:(?P<password>[^\s@/?#]{1,200})@")
"""``postgres://admin:Summer2024!@db``: the password of a URL's user info."""
_KEY_CONTEXT = re.compile(
    r"(?i)\b(?:api[ _-]?key|key|keys|token|secret|password|passwd|pwd|passphrase|subscription|signature|"
    r"credentials?|auth\w*|bearer|sas)\b[^\n]{0,40}?(?<![A-Za-z0-9+/_\-])"
    r"(?P<value>[0-9a-fA-F]{32,}|[A-Za-z0-9+/_\-]{20,}={0,2})(?![A-Za-z0-9+/_\-])"
)
"""A long hex run (an Azure key is 32 hex digits) or base64 token shortly after a word that says "key": hex has
too little entropy per character for :func:`looks_random`, so only its context tells it from a hash in prose."""


def _credential_like(value: str) -> bool:
    """A value after ``password:`` that is a credential, not a word (``password: expired`` stays)."""
    if value.startswith(("=", "{{", "$", "%", MASK)) or len(value) < 6:
        return False  # an expression, a variable, a placeholder or a short word
    return not value.isalpha() and set(value) != {"*"}  # a word ("Bearer", "expired") is not; Test@1234 is


def _keyed_token(value: str) -> bool:
    """A token after a key word: mixed letters and digits, not words joined (``LOGIN_001_verify_login``)."""
    has_letters = any(c.isalpha() for c in value)
    has_digits = any(c.isdigit() for c in value)
    return has_letters and has_digits and not _wordy(value.rstrip("="))


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where :func:`mask_secrets` finds secrets in ``text``: registered values, provider key shapes, URL
    passwords, values of secret-named fields, long hex or base64 tokens after a key word, and random-looking
    tokens (entropy). Sorted and merged."""
    spans: list[tuple[int, int]] = []
    with _lock:
        known = list(_secrets)
    for secret in known:
        start = text.find(secret)
        while start != -1:
            spans.append((start, start + len(secret)))
            start = text.find(secret, start + 1)
    spans += [m.span() for m in _KEY_SHAPES.finditer(text)]
    spans += [m.span("password") for m in _URL_PASSWORD.finditer(text)]
    spans += [
        match.span("value")
        for match in _ASSIGNMENT.finditer(text)
        if is_secret_field(match.group("name").rsplit(".", 1)[-1]) and _credential_like(match.group("value"))
    ]
    spans += [m.span("value") for m in _KEY_CONTEXT.finditer(text) if _keyed_token(m.group("value"))]
    # a random-looking token is looked for around what was found already, so that "api_key=<key>" masks the key
    # and keeps "api_key="
    rest = list(text)
    for start, end in spans:
        rest[start:end] = "\0" * (end - start)
    spans += [m.span() for m in _TOKEN.finditer("".join(rest)) if looks_random(m.group(0))]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):  # "api_key=token=x1y2z3" finds two overlapping values: mask them once
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def mask_secrets(text: str) -> str:
    """:func:`redact`, and also every secret the importer's detectors find in free text (see
    :func:`secret_spans`), each replaced by ``****``. For content that leaves the machine from a user's files
    (served search results, chunks, answers)."""
    if not text:
        return text
    for start, end in reversed(secret_spans(text)):  # from the end, so earlier offsets stay valid
        text = text[:start] + MASK + text[end:]
    return text


def mask_in_place(text: str) -> str:
    """:func:`mask_secrets` keeping the length: each secret's characters become ``*``, so offsets into the text
    (chunk ``start``/``end``, record spans) stay true. A served flow masks its sources this way before they
    are cut into chunks: no chunk size or overlap can then hand out a secret piece by piece."""
    if not text:
        return text
    spans = secret_spans(text)
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], "*" * (end - start)]
        last = end
    return "".join([*parts, text[last:]])


def mask_secrets_obj(value: object, field: str = "") -> object:
    """:func:`mask_secrets` over a JSON-like structure; a value under a secret-named key is masked whole."""
    if isinstance(value, str):
        if field and is_secret_field(field) and value.strip() and not value.startswith("="):
            return MASK
        return mask_secrets(value)
    if isinstance(value, dict):
        return {k: mask_secrets_obj(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_secrets_obj(v) for v in value]
    return value


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
