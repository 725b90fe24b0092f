"""Limits every document reader works within, so a hostile or broken file costs one skipped line, not the run.

Zip-based formats (.docx, .xlsx, .pptx, .odt, .epub) are checked from the zip's central directory before any
library opens them: how many members, how big they say they are once unpacked, and how much they claim to grow.
Python's ``zipfile`` never returns more bytes for a member than its declared size (it stops there and the CRC check
fails), so the declared sizes are a true bound on what a reader can unpack: a zip bomb is refused up front and
cannot fill memory later. Formats read whole (every text document) have a smaller bound than spreadsheets, which
are read row by row.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from flowbuilder.errors import NodeError

MAX_MEMBERS = 10_000
"""Members of one zip; a real document has tens to a few thousand (one per image, slide, chapter)."""
MAX_DOCUMENT_UNPACKED = 512 * 1024 * 1024
"""Bytes a text document (.docx, .pptx, .odt, .epub) may unpack to: it is parsed whole."""
MAX_SHEET_UNPACKED = 8 * 1024 * 1024 * 1024
"""Bytes a workbook may unpack to: its rows are streamed, so this bounds time, not memory."""
MAX_RATIO = 200
"""Largest unpacked/packed ratio of a member bigger than :data:`RATIO_FLOOR`: XML packs 5-30x, bombs 1000x+."""
RATIO_FLOOR = 32 * 1024 * 1024
MAX_WHOLE_FILE = 256 * 1024 * 1024
"""Bytes of a file read whole into memory (HTML, JSON); text, CSV and spreadsheets stream and have no limit."""

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""The start of an OLE compound file: old binary Office files, and any password-protected Office file."""


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:,.0f} MB"


def head(path: Path, size: int = 8) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise NodeError(f"{path.name}: cannot read the file ({exc.strerror or exc}).") from exc


def check_not_empty(path: Path) -> int:
    """The file's size; a :class:`NodeError` for a missing or zero-byte file."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NodeError(f"{path.name}: cannot read the file ({exc.strerror or exc}).") from exc
    if size == 0:
        raise NodeError(f"{path.name}: the file is empty (0 bytes).")
    return size


def check_whole_size(path: Path, what: str) -> None:
    size = check_not_empty(path)
    if size > MAX_WHOLE_FILE:
        raise NodeError(
            f"{path.name}: {_mb(size)} is more than the {_mb(MAX_WHOLE_FILE)} a {what} file may have (it is read "
            "whole); split it, or save it as text (.txt or .md files of any size are read in parts)."
        )


def read_member(path: Path, kind: str, name: str) -> bytes | None:
    """One member of a zip already passed by :func:`check_zip` (None when it has no such member)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.read(name) if name in archive.namelist() else None
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise NodeError(f"{path.name}: not a readable {kind} (part {name!r}: {exc}).") from None


def member_names(path: Path, kind: str) -> list[str]:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise NodeError(f"{path.name}: not a readable {kind} (not a valid zip package: {exc}).") from None


def check_zip(path: Path, kind: str, *, limit: int = MAX_DOCUMENT_UNPACKED) -> None:
    """Refuse ``path`` unless it is a zip whose members unpack to at most ``limit`` bytes in all (``kind``, e.g.
    "Word document", goes into the message)."""
    check_not_empty(path)
    start = head(path)
    if start.startswith(OLE_MAGIC):
        raise NodeError(
            f"{path.name}: this {kind} is password-protected (encrypted) or an old binary Office file; save it "
            f"again without a password in the current format ({path.suffix.lower()})."
        )
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise NodeError(f"{path.name}: not a readable {kind} (not a valid zip package: {exc}).") from None
    if len(members) > MAX_MEMBERS:
        raise NodeError(f"{path.name}: the {kind} holds {len(members):,} parts (limit {MAX_MEMBERS:,}); not read.")
    total = 0
    for member in members:
        total += member.file_size
        if member.file_size > RATIO_FLOOR and member.file_size > MAX_RATIO * max(member.compress_size, 1):
            raise NodeError(
                f"{path.name}: part {member.filename!r} unpacks from {_mb(member.compress_size)} to "
                f"{_mb(member.file_size)} (more than {MAX_RATIO}x): refused as a zip bomb."
            )
    if total > limit:
        raise NodeError(
            f"{path.name}: the {kind} unpacks to {_mb(total)}, more than the {_mb(limit)} allowed; not read."
        )
