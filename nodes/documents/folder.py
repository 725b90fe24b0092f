"""Which files of a folder a load reads: ``include``/``exclude`` globs, ``recursive``, and what it must skip.

A pattern with a ``/`` is matched against the path inside the folder (``guides/*.docx``; ``*`` also crosses
``/``), one without against the file name (``*.docx``); matching ignores case. Hidden files and folders (a name
starting with ``.``) and Office's lock files (``~$report.docx``, left while a document is open) are not documents
and are passed over without a word. Every other file the globs select is either read or listed as skipped with why,
an unsupported type included: nothing a user put in the folder disappears silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from flowbuilder.nodes.documents import SUPPORTED_EXTENSIONS


@dataclass
class FolderListing:
    """The files a folder load reads (in path order) and those it cannot."""

    folder: Path
    files: list[tuple[Path, str]] = field(default_factory=list)
    """``(path, name inside the folder)``: the name (``guides/setup.docx``) is each record's ``source``."""
    unsupported: list[tuple[Path, str]] = field(default_factory=list)
    ignored: int = 0
    """Hidden and lock files passed over."""

    def all_paths(self) -> list[Path]:
        return sorted([path for path, _ in self.files] + [path for path, _ in self.unsupported])


def matches(name: str, patterns: list[str]) -> bool:
    """Whether the path inside the folder (``a/b.docx``) matches any glob of ``patterns``."""
    lowered = name.lower()
    base = lowered.rsplit("/", 1)[-1]
    for pattern in patterns:
        pattern = pattern.strip().lower()
        pattern = pattern[2:] if pattern.startswith("./") else pattern
        if not pattern:
            continue
        if fnmatchcase(lowered if "/" in pattern else base, pattern):
            return True
    return False


def _hidden(name: str) -> bool:
    return name.startswith(".") or name.startswith("~$")


def list_folder(folder: Path, include: list[str], exclude: list[str], recursive: bool) -> FolderListing:
    """The selected files of ``folder`` in path order (symlinked folders are not followed)."""
    listing = FolderListing(folder)
    found: list[tuple[str, Path]] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not _hidden(d)) if recursive else []
        here = Path(root)
        for name in names:
            path = here / name
            if _hidden(name):
                listing.ignored += 1
                continue
            if not path.is_file():
                continue
            found.append((path.relative_to(folder).as_posix(), path))
    for relative, path in sorted(found):
        if include and not matches(relative, include):
            continue
        if exclude and matches(relative, exclude):
            continue
        if path.suffix.lower() in SUPPORTED_EXTENSIONS:
            listing.files.append((path, relative))
        else:
            listing.unsupported.append((path, relative))
    return listing
