"""How a path written in a node's config becomes a file or folder on disk (one rule for every node).

A relative path resolves against the folder of the flow file (``base_dir``), whether or not it exists
yet: an imported LangFlow ``./chroma_db`` lands next to the flow, never in whatever directory the
command happened to start in. Without a flow file (a flow built in memory) the working directory is used.
Whether the path may be read at all is :mod:`flowbuilder.pathguard`'s question.
"""

from __future__ import annotations

from pathlib import Path

from flowbuilder.errors import NodeError
from flowbuilder.terminal import excerpt


def resolve_path(path: str | Path, base_dir: Path | None) -> Path:
    """``path`` made absolute: ``~`` expanded; relative -> ``base_dir / path`` (else the working dir)."""
    from flowbuilder.pathguard import expand_user  # an unknown ~user is a clear error there

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
