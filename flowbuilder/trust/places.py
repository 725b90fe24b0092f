"""Where things are on disk: Flowbuilder's data dir and credentials file, and how a path written in a node's
config becomes a file or folder (one rule for every node). The bottom of the trust room: it imports only the
errors and the safe terminal, so every check above it can ask it.

A relative path resolves against the folder of the flow file (``base_dir``), whether or not it exists
yet: an imported LangFlow ``./chroma_db`` lands next to the flow, never in whatever directory the
command happened to start in. Without a flow file (a flow built in memory) the working directory is used.
Whether the path may be read at all is :mod:`flowbuilder.trust.pathguard`'s question.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_config_dir, user_data_dir

from flowbuilder.errors import NodeError
from flowbuilder.trust.terminal import excerpt


def default_data_dir() -> Path:
    """Flowbuilder's per-user data dir (stores, caches, chat memory): ``$FLOWBUILDER_DATA_DIR`` or the platform's."""
    return Path(os.environ.get("FLOWBUILDER_DATA_DIR") or user_data_dir("flowbuilder"))


def default_credentials_path() -> Path:
    """The credentials file: ``$FLOWBUILDER_CREDENTIALS`` or ``credentials.json`` in the user's config dir."""
    override = os.environ.get("FLOWBUILDER_CREDENTIALS")
    if override:
        return Path(override)
    return Path(user_config_dir("flowbuilder")) / "credentials.json"


def expand_user(path: str | Path) -> Path:
    """``path`` with ``~`` or ``~user`` expanded; an unknown user or a NUL byte is a clear :class:`NodeError`."""
    text = str(path)
    if "\x00" in text:
        raise NodeError(f"{text[:200]!r}: a path cannot contain a NUL character; fix the path")
    try:
        return Path(text).expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory" for ~nosuchuser
        user = text[1:].split("/", 1)[0]
        who = f"there is no user '{user}' on this machine" if user else "this machine has no home folder set"
        raise NodeError(f"'{text[:200]}': {who}, so '~{user}' names no folder; write the path in full") from None


def real(path: str | Path) -> Path:
    """The absolute path with ``~`` expanded and every ``..`` and symlink followed (the file really read)."""
    return Path(os.path.realpath(expand_user(path)))


def resolve_path(path: str | Path, base_dir: Path | None) -> Path:
    """``path`` made absolute: ``~`` expanded (an unknown ~user is a clear error); relative -> ``base_dir / path``
    (else the working dir)."""
    candidate = expand_user(path)
    if not candidate.is_absolute():
        candidate = (base_dir if base_dir is not None else Path.cwd()) / candidate
    check_usable(candidate)
    return candidate


MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095


def check_usable(path: Path) -> None:
    """Refuse, with one :class:`NodeError` line, a path no file system takes (a NUL byte, a name over 255
    bytes, a lone surrogate), before ``stat`` or ``mkdir`` meets it with a bare ``OSError``."""
    text = str(path)
    shown = excerpt(text, 80)
    if "\x00" in text:
        raise NodeError(f"'{shown}' contains a NUL byte: not a usable path")
    try:
        encoded = [part.encode("utf-8") for part in path.parts]
    except UnicodeEncodeError:
        raise NodeError(f"'{shown}' holds characters no file name can (a lone surrogate)") from None
    if any(len(part) > MAX_NAME_BYTES for part in encoded) or len(text.encode("utf-8")) > MAX_PATH_BYTES:
        raise NodeError(f"'{shown}' is too long for a file name (at most {MAX_NAME_BYTES} bytes per name)")
