"""How a path written in a node's config becomes a file or folder on disk (one rule for every node).

A relative path resolves against the folder of the flow file (``base_dir``), whether or not it exists
yet: an imported LangFlow ``./chroma_db`` lands next to the flow, never in whatever directory the
command happened to start in. Without a flow file (a flow built in memory) the working directory is used.
Whether the path may be read at all is :mod:`flowbuilder.pathguard`'s question.
"""

from __future__ import annotations

from pathlib import Path


def resolve_path(path: str | Path, base_dir: Path | None) -> Path:
    """``path`` made absolute: ``~`` expanded; relative -> ``base_dir / path`` (else the working dir)."""
    from flowbuilder.pathguard import expand_user

    candidate = expand_user(path)
    if candidate.is_absolute():
        return candidate
    return (base_dir if base_dir is not None else Path.cwd()) / candidate
