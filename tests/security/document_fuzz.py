"""Fuzz the document readers of ``loader.file``: every bad file must cost one clear line, nothing else.

Cases start from the real sample documents (data/qa-handbook, the demo workbook, Calc's workbooks in
tests/nodes/fixtures/documents) and break them the ways files break: cut short, emptied, bytes flipped, saved under
another format's extension, and for zip-based formats the XML inside mangled and re-zipped (so the parser, not the
zip CRC, meets it). :func:`crafted` adds the files an attacker would make: zip bombs (a real 1000x member and one
whose sizes are forged), XML entity bombs, a 100,000-deep HTML tree, huge cells.

Outcomes per file: ``clean`` (records, or one :class:`NodeError` line naming the file), ``traceback`` (any other
exception), ``unclear`` (an error of several lines or not naming the file), ``hang`` (over the time limit).
``python scripts/fuzz.py --documents --count 2000`` runs a long campaign; the suite runs a short one.
"""

from __future__ import annotations

import io
import random
import time
import traceback
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import fuzz_harness  # tests/security is on the path (the suite and scripts/fuzz.py put it there)
from fuzz_harness import Outcome

ROOT = Path(__file__).resolve().parents[2]
STEP_SECONDS = 60.0
ZIP_KINDS = (".docx", ".pptx", ".xlsx", ".odt", ".epub")


class Campaign(fuzz_harness.Campaign):
    KINDS: ClassVar[tuple[str, ...]] = ("clean", "traceback", "unclear", "hang")


def seed_files() -> list[Path]:
    paths = sorted((ROOT / "data" / "qa-handbook").iterdir())
    paths += [ROOT / "data" / "VWO_500_Test_Cases.xlsx"]
    paths += sorted((ROOT / "tests" / "nodes" / "fixtures" / "documents").iterdir())
    return paths


# --- mutations -----------------------------------------------------------------------------------


def _flip(data: bytes, rng: random.Random, count: int) -> bytes:
    buffer = bytearray(data)
    for _ in range(count):
        if buffer:
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
    return bytes(buffer)


def _mangle_text(data: bytes, rng: random.Random) -> bytes:
    """An XML or HTML part, broken where a parser (not a checksum) notices: cut, spliced, or flooded."""
    choice = rng.randrange(5)
    cut = rng.randrange(len(data) + 1)
    if choice == 0:
        return data[:cut]
    if choice == 1:
        end = min(len(data), cut + rng.randrange(1, 200))
        return data[:cut] + data[end:]
    if choice == 2:
        return data[:cut] + rng.choice([b"<", b"</w:p>", b"&bogus;", b"\x00\xff", b"]]>", b"<![CDATA["]) + data[cut:]
    if choice == 3:
        return data[:cut] + b"<x>" * rng.randrange(1, 3000) + data[cut:]
    return _flip(data, rng, rng.randrange(1, 10))


def _rezip(data: bytes, rng: random.Random) -> bytes:
    """The zip with one XML/HTML member mangled (or dropped), written back with valid CRCs."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        members = [(info, source.read(info)) for info in source.infolist()]
    texts = [i for i, (info, _) in enumerate(members) if info.filename.endswith((".xml", ".xhtml", ".html", ".rels"))]
    target = rng.choice(texts) if texts else rng.randrange(len(members))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, (info, content) in enumerate(members):
            if index == target:
                if rng.random() < 0.15:
                    continue  # a missing part
                content = _mangle_text(content, rng)
            archive.writestr(info.filename, content)
    return out.getvalue()


def mutations(path: Path, rng: random.Random) -> Iterator[tuple[str, str, bytes]]:
    """``(label, file name, bytes)`` for one random mutation of ``path`` per call."""
    data = path.read_bytes()
    suffix = path.suffix.lower()
    kinds = ["truncate", "flip", "empty", "rename"] + (["inner"] * 4 if suffix in ZIP_KINDS else [])
    kind = rng.choice(kinds)
    if kind == "truncate":
        yield f"{path.name} truncated", path.name, data[: rng.randrange(len(data))]
    elif kind == "flip":
        yield f"{path.name} flipped", path.name, _flip(data, rng, rng.randrange(1, 40))
    elif kind == "empty":
        yield f"{path.name} emptied", path.name, b""
    elif kind == "rename":
        other = rng.choice([".docx", ".pptx", ".xlsx", ".xls", ".odt", ".epub", ".html", ".csv", ".txt", ".json"])
        yield f"{path.name} as {other}", f"{path.stem}{other}", data
    else:
        yield f"{path.name} inner part mangled", path.name, _rezip(data, rng)


def cases(count: int, seed: int = 0) -> Iterator[tuple[str, str, bytes]]:
    rng = random.Random(seed)
    seeds = seed_files()
    for _ in range(count):
        yield from mutations(rng.choice(seeds), rng)


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


def _real_bomb(name: str, member: str, size: int) -> bytes:
    """A zip whose ``member`` truly unpacks to ``size`` zero bytes (written in pieces: never held whole)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        with archive.open(member, "w", force_zip64=True) as handle:
            piece = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                handle.write(piece)
    return out.getvalue()


def _forged_sizes(data: bytes, size: int) -> bytes:
    """``data`` (a zip) with every member's declared unpacked size in the central directory set to ``size``."""
    buffer = bytearray(data)
    at = buffer.find(b"PK\x01\x02")
    while at >= 0:
        buffer[at + 24 : at + 28] = min(size, 0xFFFFFFFE).to_bytes(4, "little")
        at = buffer.find(b"PK\x01\x02", at + 4)
    return bytes(buffer)


_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'.encode() for i in range(1, 10)
    )
    + b"]>"
)


def crafted() -> Iterator[tuple[str, str, bytes]]:
    """The files an attacker (or a very unlucky team) makes on purpose."""
    docx = (ROOT / "data" / "qa-handbook" / "bug-triage.docx").read_bytes()
    xlsx = (ROOT / "tests" / "nodes" / "fixtures" / "documents" / "runs.xlsx").read_bytes()
    yield "docx bomb: 300 MB of zeros in 0.3 MB", "bomb.docx", _real_bomb("bomb.docx", "word/document.xml", 300 << 20)
    yield (
        "xlsx bomb: a sheet of 300 MB zeros",
        "bomb.xlsx",
        _real_bomb("bomb.xlsx", "xl/worksheets/sheet1.xml", 300 << 20),
    )
    yield "docx with forged 4 GB sizes", "forged.docx", _forged_sizes(docx, 0xFFFFFFFE)
    yield "pptx of 20,000 parts", "many.pptx", _zip({f"ppt/slides/s{i}.xml": b"<a/>" for i in range(20_000)})
    laughs = _LAUGHS + b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    laughs += b"<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
    with zipfile.ZipFile(io.BytesIO(docx)) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    yield "docx entity bomb", "laughs.docx", _zip({**members, "word/document.xml": laughs})
    with zipfile.ZipFile(io.BytesIO(xlsx)) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    sheet = next(name for name in members if name.startswith("xl/worksheets/sheet"))
    yield "xlsx entity bomb", "laughs.xlsx", _zip({**members, sheet: _LAUGHS + b"<worksheet>&lol9;</worksheet>"})
    big = "x" * (20 << 20)
    yield "csv with a 20 MB field", "huge.csv", f"id,text\n1,{big}\n".encode()
    yield "html with a 20 MB paragraph", "huge.html", f"<p>{big}</p>".encode()
    yield "html 100,000 divs deep", "deep.html", b"<div>" * 100_000 + b"x" + b"</div>" * 100_000
    yield "epub that is not a zip", "book.epub", b"%PDF-1.7 not an epub"
    yield "xls that is a CSV", "sheet.xls", b"a,b\n1,2\n"
    yield "odt that is a spreadsheet", "calc.odt", _zip({"mimetype": b"application/vnd.oasis.opendocument.spreadsheet"})


def huge_cell_workbook(folder: Path) -> Path:
    """A workbook with a 5 MB cell (written by openpyxl): it must load or fail in one line."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.append(["id", "note"])
    sheet.append(["1", "y" * (5 << 20)])
    path = folder / "huge-cell.xlsx"
    book.save(path)
    return path


# --- running -------------------------------------------------------------------------------------


def run_case(name: str, data: bytes, workdir: Path, limit: float = STEP_SECONDS) -> Outcome:
    """Load one file as ``loader.file`` would (records, read as a stream does); classify what happened."""
    from flowbuilder.errors import NodeError
    from flowbuilder.nodes.loaders import FileLoaderConfig, iter_file

    path = workdir / name
    path.write_bytes(data)
    try:
        with fuzz_harness.step_limit(limit):
            for _ in iter_file(path, name, FileLoaderConfig()):
                pass
    except NodeError as exc:
        message = str(exc)
        if "\n" in message or not message.startswith(path.name) or len(message) > 600:
            return Outcome("unclear", "read", message[:600])
    except fuzz_harness.StepTimeout:
        return Outcome("hang", "read")
    except Exception as exc:  # the whole point: anything else is a bug to report
        detail = f"{type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc(limit=-3)
        return Outcome("traceback", "read", detail)
    finally:
        path.unlink(missing_ok=True)
    return Outcome("clean", "read")


def campaign(count: int, workdir: Path, seed: int = 0) -> Campaign:
    result = Campaign()
    started = time.perf_counter()
    for label, name, data in [*crafted(), *cases(count, seed)]:
        outcome = run_case(name, data, workdir)
        result.counts[outcome.kind] += 1
        if outcome.kind != "clean":
            result.failures.append((label, outcome, name))
    result.seconds = time.perf_counter() - started
    return result
