"""The file loader: one file or a folder of them into records (or one whole document).

Formats: CSV/TSV (one record per row), Excel workbooks (.xlsx/.xlsm/.xls: one record per row of one sheet, exactly
like CSV), JSON (one record per object of a top-level list), PDF (one per page), text and Markdown (one per file;
a file over :data:`TEXT_PART_CHARS` in parts cut at paragraphs), and text documents turned into Markdown-like text
(.docx, .odt, .html/.htm: one per file; .pptx: one per slide; .epub: one per chapter; see
:mod:`flowbuilder.nodes.documents`).

A record keeps where it came from (``source``, ``row``/``page``/``slide``/``chapter``/``sheet``, ``record_id``) so
that a fact can be traced from a retrieved chunk back to its row or page. CSV headers are de-duplicated with
pandas' convention (``Expected Result``, ``Expected Result.1``) because LangFlow reads CSVs with pandas and the
Parser templates imported from it name columns that way.

A folder loads every supported file the ``include``/``exclude`` globs select (``recursive``: in subfolders too);
each record's ``source`` is its path inside the folder and ``folder`` the folder, which lets a store remove the
chunks of files deleted from it. A file that cannot be read is listed as skipped with its reason and the node ends
``warning``; the rest load.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document
from flowbuilder.errors import NodeError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.formats.n8n_table import BASE, LC
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.documents import (
    DOCUMENT_READERS,
    SHEET_EXTENSIONS,
    SUPPORTED_EXTENSIONS,
    TABLE_EXTENSIONS,
    TEXT_EXTENSIONS,
    supported_text,
)
from flowbuilder.nodes.documents.folder import FolderListing, list_folder
from flowbuilder.nodes.documents.safety import check_whole_size
from flowbuilder.nodes.documents.sheets import sheet_rows
from flowbuilder.nodes.io import RecordsOut
from flowbuilder.portvalues import Text
from flowbuilder.registry import register_node
from flowbuilder.trust.pathguard import PathKind
from flowbuilder.trust.places import expand_user, resolve_path

__all__ = ["SUPPORTED_EXTENSIONS", "FileLoader", "FileLoaderConfig", "load_file", "load_folder"]

_TEXT_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")  # tried in order for encoding="auto"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # Windows' "Unicode" text files
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+$")
TEXT_PART_CHARS = 262_144
"""A text or Markdown file longer than this is read in parts of about this many characters, cut at a paragraph
break: a 1 GB log is never one string, and streamed, memory holds a few parts."""
BATCH_CHARS = 4_000_000
"""A streamed batch is handed on once its records hold this much text, however few they are."""
SHOWN_SKIPS = 3
"""Skipped files named in the warning line; the details list them all."""
MAX_LISTED = 1_000
"""Per-file counts and skipped files kept in the details (a folder of 100,000 files keeps the first ones)."""


class FileLoaderConfig(BaseModel):
    """Settings of ``loader.file``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        "",
        description="File or folder to load (relative to the flow file's folder); a run input replaces it.",
    )
    mode: Literal["auto", "records", "whole"] = Field(
        "auto",
        description="auto/records: one record per CSV or sheet row, JSON object, PDF page, slide, chapter or "
        "document; whole: the file's text as ONE document (with record spans), like LangFlow's File -> message.",
    )
    encoding: str = Field("auto", description="Text encoding; auto tries UTF-8 (BOM stripped), then cp1252.")
    id_column: str = Field("", description="Column whose value becomes record_id (default: the first column).")
    delimiter: str = Field(",", description="CSV field delimiter (.tsv files use a tab unless changed).")
    sheet: str = Field(
        "", description="Excel workbooks: the sheet to read (empty = the first); the other sheets are never read."
    )
    include: list[str] = Field(
        default_factory=list,
        description="Folders: load only files matching one of these globs (*.docx, guides/*); empty = every "
        "supported file.",
    )
    exclude: list[str] = Field(
        default_factory=list, description="Folders: leave out files matching any of these globs (drafts/*, *.tmp)."
    )
    recursive: bool = Field(False, description="Folders: also load the files in subfolders.")
    pdf_text: Literal["layout", "plain"] = Field(
        "layout",
        description="PDF text: layout keeps lines whole, folds ligatures, joins words hyphenated at line ends "
        "and drops running headers, footers, page numbers and footnote markers glued to words ('users5' -> "
        "'users'); plain is pypdf's raw extraction (often one word "
        "per line).",
    )


class PathIn(TypedDict):
    """The input ports of ``loader.file``."""

    path: NotRequired[Annotated[Text, "A path from a file input; replaces the config."]]


@dataclass
class LoadReport:
    """What a load read and what it skipped, file by file: the details, the summary and the warning come from it."""

    folder: Path | None = None
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def read(self) -> int:
        return len(self.counts)

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append((name, reason))

    def warning(self) -> str:
        if not self.skipped:
            return ""
        total = self.read + len(self.skipped)
        shown = "; ".join(reason.rstrip(".") for _, reason in self.skipped[:SHOWN_SKIPS])
        more = len(self.skipped) - SHOWN_SKIPS
        tail = f"; and {more} more (the loader's details list them)" if more > 0 else ""
        kinds = (
            ""
            if not any("unsupported file type" in r for _, r in self.skipped)
            else f" (supported: {supported_text()})"
        )
        return f"{len(self.skipped)} of {total} files skipped: {shown}{tail}{kinds}"

    def record(self, ctx: RunContext, records: int) -> None:
        """Put the counts in the details and warn about skipped files."""
        ctx.details["records"] = records
        if self.folder is None:
            return
        ctx.details["folder"] = str(self.folder)
        ctx.details["files"] = self.read
        ctx.details["file_records"] = dict(list(self.counts.items())[:MAX_LISTED])
        ctx.details["skipped"] = [{"file": name, "reason": why} for name, why in self.skipped[:MAX_LISTED]]
        if self.read > MAX_LISTED or len(self.skipped) > MAX_LISTED:
            ctx.details["listed"] = f"the first {MAX_LISTED} files of each list are shown"
        if self.skipped:
            ctx.warn(self.warning())

    def line(self, records: int) -> str:
        """``45 records from 9 files, 1 skipped``."""
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return f"{records} records from {self.read} file{'' if self.read == 1 else 's'}{skipped}"


@register_node
class FileLoader(Node[FileLoaderConfig, PathIn, RecordsOut]):
    """Load a file or folder (CSV, Excel, JSON, PDF, text, Markdown, Word, PowerPoint, OpenDocument, HTML, EPUB)
    as records: one per row, object, page, slide, chapter or document."""

    type_name = "loader.file"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "loader.file",
                LC + "documentDefaultDataLoader",
                (1, 1.1),
                inputs={"path": "main"},
                outputs={"records": "ai_document"},
                hook="loader",
                ignore=("dataType", "loader", "textSplittingMode", "options", "jsonMode", "binaryMode"),
            ),
            Adapter(
                "loader.file",
                BASE + "extractFromFile",
                (1,),
                inputs={"path": "main"},
                outputs={"records": "main"},
                export=False,
                ignore=("operation", "options", "binaryPropertyName"),
            ),
            Adapter(
                "loader.file",
                BASE + "httpRequest",
                (4, 4.1, 4.2),
                inputs={"path": "main"},
                outputs={"records": "main"},
                export=False,
                hook="http",
            ),
        ),
        "langflow": (
            Adapter(
                "loader.file",
                "File",
                hook="file",
                outputs={"records": "dataframe"},
                display="Read File",
                extra={
                    "outputs": (
                        LF.out("dataframe", "Structured Content", ("Table",), "load_files_structured"),
                        LF.out("message", "Raw Content", LF.MESSAGE, "load_files_message", False),
                    )
                },
                out_aliases={n: "records" for n in ("json", "table", "message", "data", "text", "data_list")},
                ignore=("path", "separator"),
            ),
            # A folder of files: loader.file reads every supported file directly in a folder (under the roots a
            # run allows); the "directory" hook keeps the folder's name, not the exporter's absolute path.
            Adapter(
                "loader.file",
                "Directory",
                display="Directory",
                hook="directory",
                export=False,
                outputs={"records": "dataframe"},
                out_aliases={"data": "records", "as_dataframe": "records"},
                ignore=(
                    "path",
                    "types",
                    "depth",
                    "max_concurrency",
                    "load_hidden",
                    "recursive",
                    "silent_errors",
                    "use_multithreading",
                ),
            ),
        ),
        "dify": (
            Adapter(
                "loader.file",
                "document-extractor",
                hook="extractor",
                export=False,
                outputs={"records": "text"},
                inputs={"path": "variable_selector"},
            ),
            Adapter("loader.file", "datasource", hook="datasource", export=False, outputs={"records": "file"}),
        ),
        "flowise": (
            FW.loader("pdfFile", "pdfFile"),
            FW.loader("textFile", "txtFile"),
            FW.loader("csvFile", "csvFile", ("columnName",)),
            FW.loader("docxFile", "docxFile"),
            FW.loader("jsonFile", "jsonFile"),
            FW.loader("jsonlinesFile", "jsonlinesFile"),
            FW.loader("fileLoader", "file"),
            FW.loader("microsoftWord", "docxFile"),
            FW.loader("microsoftExcel", "excelFile"),
            FW.loader("microsoftPowerpoint", "powerpointFile"),
            FW.loader("epubFile", "epubFile"),
            FW.loader("unstructuredFileLoader", "fileObject"),
            FW.loader("folderFiles", "folderPath"),
        ),
    }

    capabilities = frozenset({Capability.LOADS_FILES, Capability.LOCAL_ONLY})
    display_name = "Read File"
    aliases = ("File", "Default Data Loader", "document loader", "csv", "pdf", "load", "folder", "docx", "excel")
    category = "Loaders"
    Config = FileLoaderConfig
    run_input = "file"
    stream_out = "records"
    file_types = SUPPORTED_EXTENSIONS
    """What the builder's file picker offers for ``path``."""
    fraction: float | None = None
    """While streaming: how much of the input has been read (0..1), for progress downstream."""
    report: LoadReport | None = None
    """The last run's files read and skipped (for the summary)."""

    @classmethod
    def can_stream(cls, config: BaseModel) -> bool:
        assert isinstance(config, FileLoaderConfig)
        return config.mode != "whole"

    @classmethod
    def stream_size(cls, config: BaseModel, base_dir: Path | None, run_input: str | None) -> int | None:
        assert isinstance(config, FileLoaderConfig)
        chosen = run_input or config.path
        if not chosen:
            return None
        try:
            path = _resolve(str(chosen), base_dir)
            files = _listing(path, config).all_paths() if path.is_dir() else [path]
            return sum(file.stat().st_size for file in files)
        except (NodeError, OSError, ValueError):
            return None

    @classmethod
    def config_paths(cls, config: FileLoaderConfig) -> list[tuple[str, str, PathKind]]:
        return [("path", config.path, "file")] if config.path.strip() else []

    @classmethod
    def path_problems(cls, config: FileLoaderConfig, base_dir: Path | None) -> list[tuple[str | None, str]]:
        """What ``validate`` can tell before a run: a file type no reader supports, a folder with no supported
        file (existence is left to the run: a file may be written before it)."""
        raw = config.path.strip()
        if not raw or (base_dir is None and not expand_user(raw).is_absolute()):
            return []  # a relative path means the flow file's folder, which is not known here
        try:
            path = _resolve(raw, base_dir)
            if path.is_dir():
                listing = _listing(path, config)
                if not listing.files:
                    found = ", ".join(name for _, name in listing.unsupported[:5]) or "no files"
                    return [(None, f"path '{raw}': the folder holds no supported file ({found}); supported: "
                             f"{supported_text()}")]  # fmt: skip
                return []
        except (NodeError, OSError, ValueError):
            return []
        suffix = path.suffix.lower()
        if (suffix or path.is_file()) and suffix not in SUPPORTED_EXTENSIONS:  # no suffix, not there: a folder to be
            return [
                (None, f"path '{raw}': unsupported file type '{suffix or '(none)'}'; supported: {supported_text()}")
            ]
        return []

    @classmethod
    def path_warnings(cls, config: FileLoaderConfig, base_dir: Path | None) -> list[str]:
        """Files of a folder that a run will skip for their type (a warning: the rest still load)."""
        raw = config.path.strip()
        if not raw or (base_dir is None and not expand_user(raw).is_absolute()):
            return []
        try:
            path = _resolve(raw, base_dir)
            listing = _listing(path, config) if path.is_dir() else None
        except (NodeError, OSError, ValueError):
            return []
        if listing is None or not listing.files or not listing.unsupported:
            return []
        names = ", ".join(name for _, name in listing.unsupported[:SHOWN_SKIPS])
        more = len(listing.unsupported) - SHOWN_SKIPS
        return [
            f"path '{raw}': {len(listing.unsupported)} file(s) of an unsupported type will be skipped ({names}"
            f"{f' and {more} more' if more > 0 else ''}); narrow include/exclude to leave them out on purpose"
        ]

    @classmethod
    def fingerprint(
        cls, config: FileLoaderConfig, base_dir: Path | None, run_input: str | None, inputs: Mapping[str, Any]
    ) -> str | None:
        chosen = run_input or inputs.get("path") or config.path
        if not chosen:
            return None
        try:
            path = _resolve(str(chosen), base_dir)
            files = _listing(path, config).all_paths() if path.is_dir() else [path]
        except (NodeError, OSError, ValueError):  # the run itself says what is wrong with the path
            return None
        parts = []
        for file in files:
            try:
                stat = file.stat()
            except OSError:
                return f"{file}|missing"
            parts.append(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}")
        return "\n".join(parts) or f"{path}|empty"

    def _chosen(self, inputs: PathIn, ctx: RunContext) -> Path:
        chosen = ctx.run_input or inputs.get("path") or self.config.path
        if not chosen:
            raise NodeError(
                f"no file to load: set the node's path or run with --input {ctx.node_id}=PATH "
                f"(supported: {supported_text()})"
            )
        return ctx.resolve_path(str(chosen))

    def _folder(self, folder: Path, ctx: RunContext) -> FolderListing:
        listing = _listing(folder, self.config)
        if not listing.files:
            found = ", ".join(name for _, name in listing.unsupported[:5])
            raise NodeError(
                f"{folder}: the folder has no supported files{f' ({found})' if found else ''}; "
                f"supported: {supported_text()}"
                + ("" if self.config.recursive else " (subfolders are read when recursive is on)")
            )
        for file, _ in listing.files:  # a folder under an allowed root can still hold a symlink to a file outside it
            ctx.check_path(file, what="file")
        return listing

    def run(self, inputs: PathIn, ctx: RunContext) -> RecordsOut:
        path = self._chosen(inputs, ctx)
        if not path.is_dir():
            records = load_file(path, self.config)
            whole = self.config.mode == "whole"
            ctx.details["file"] = str(path)
            ctx.details["records"] = len(records) if not whole else len(records[0].metadata.get("record_spans", []))
            if not any(record.text.strip() for record in records):
                ctx.warn(f"{path.name} holds no text{_NO_TEXT_HINT}")
            return {"records": records}
        if self.config.mode == "whole":
            records, report = _whole_folder(path, self._folder(path, ctx), self.config)
        else:
            report = LoadReport(folder=path)
            records = list(_folder_records(self._folder(path, ctx), self.config, report))
        _check_some_read(path, report)
        self.report = report
        report.record(ctx, len(records))
        return {"records": records}

    def iter_batches(self, inputs: PathIn, ctx: RunContext) -> Iterator[list[Any]]:
        """The records in batches, read lazily: CSV, text and sheets row by row or part by part from the file,
        other files one at a time. A batch goes on at :data:`BATCH_SIZE` records or :data:`BATCH_CHARS` of text."""
        from flowbuilder.streaming import BATCH_SIZE

        path = self._chosen(inputs, ctx)
        report = LoadReport(folder=path) if path.is_dir() else None
        if report is not None:
            listing = self._folder(path, ctx)
            progress = ReadProgress(sum(file.stat().st_size for file, _ in listing.files))
            records: Iterator[Document] = _folder_records(listing, self.config, report, progress)
        else:
            ctx.details["file"] = str(path)
            progress = ReadProgress(path.stat().st_size if path.is_file() else 0)
            records = iter_file(path, path.name, self.config, progress.read)
        batch: list[Document] = []
        chars = count = 0
        for record in records:
            batch.append(record)
            chars += len(record.text)
            if len(batch) >= BATCH_SIZE or chars >= BATCH_CHARS:
                count += len(batch)
                self.fraction = progress.done / progress.total
                ctx.progress(progress.done, progress.total, "reading")
                yield batch
                batch, chars = [], 0
        count += len(batch)
        self.fraction = 1.0
        if report is not None:
            _check_some_read(path, report)
            self.report = report
        (report or LoadReport()).record(ctx, count)
        if batch:
            yield batch
        ctx.progress(progress.total, progress.total, "reading")

    def summarize(self, outputs: RecordsOut) -> str:
        records = outputs["records"]
        if self.config.mode == "whole" and len(records) == 1 and self.report is None:
            spans = records[0].metadata.get("record_spans") or []
            return f"1 document ({len(spans)} records)" if spans else f"1 document ({len(records[0].text)} chars)"
        if self.report is not None:
            return self.report.line(len(records))
        return f"{len(records)} records"


_NO_TEXT_HINT = " (empty, or only images: a scanned document needs OCR first)"


def _check_some_read(folder: Path, report: LoadReport) -> None:
    if report.read == 0:
        reasons = "; ".join(reason for _, reason in report.skipped[:SHOWN_SKIPS])
        raise NodeError(f"{folder}: none of the {len(report.skipped)} files could be read: {reasons}")


def _resolve(path: str, base_dir: Path | None) -> Path:
    """The same rule as ``ctx.resolve_path`` (flowbuilder.trust.places), so the fingerprint sees the file that loads."""
    candidate = expand_user(path)
    if candidate.is_absolute() or base_dir is not None:
        return resolve_path(candidate, base_dir)
    return Path.cwd() / candidate


def _listing(folder: Path, config: FileLoaderConfig) -> FolderListing:
    return list_folder(folder, config.include, config.exclude, config.recursive)


def folder_files(folder: Path, config: FileLoaderConfig | None = None) -> list[Path]:
    """The supported files of ``folder`` the config selects (default: directly inside it), in path order."""
    return [path for path, _ in _listing(folder, config or FileLoaderConfig()).files]


def _folder_records(
    listing: FolderListing, config: FileLoaderConfig, report: LoadReport, progress: ReadProgress | None = None
) -> Iterator[Document]:
    """Every record of the folder's files, file by file; a file that cannot be read is skipped into ``report``
    (one that fails part way keeps the records read before, and says so)."""
    for path, name in listing.unsupported:
        report.skip(name, f"{name}: unsupported file type '{path.suffix.lower() or '(none)'}'")
    folder = listing.folder.resolve().as_posix()
    for path, name in listing.files:
        count = texts = 0
        try:
            for record in iter_file(path, name, config, progress.read if progress is not None else None):
                record.metadata["folder"] = folder
                count += 1
                texts += bool(record.text.strip())
                yield record
        except NodeError as exc:
            reason = _named(str(exc), path.name, name)
            if count:
                reason = f"{name}: read only in part ({count} records), then: {reason.removeprefix(name + ': ')}"
            report.skip(name, reason)
            if count:
                report.counts[name] = count
            continue
        finally:
            if progress is not None:
                progress.file_done(path.stat().st_size if path.is_file() else 0)
        if texts == 0:
            report.skip(name, f"{name}: no text found{_NO_TEXT_HINT}")
        else:
            report.counts[name] = count


def _named(message: str, file_name: str, name: str) -> str:
    """A reader's message with the file named by its path inside the folder."""
    return name + message[len(file_name) :] if message.startswith(f"{file_name}:") else f"{name}: {message}"


def _whole_folder(folder: Path, listing: FolderListing, config: FileLoaderConfig) -> tuple[list[Document], LoadReport]:
    report = LoadReport(folder=folder)
    for path, name in listing.unsupported:
        report.skip(name, f"{name}: unsupported file type '{path.suffix.lower() or '(none)'}'")
    records: list[Document] = []
    for path, name in listing.files:
        try:
            documents = load_file(path, config, name)
        except NodeError as exc:
            report.skip(name, _named(str(exc), path.name, name))
            continue
        for document in documents:
            document.metadata["folder"] = folder.resolve().as_posix()
        records.extend(documents)
        report.counts[name] = len(documents)
    return records, report


def load_folder(folder: Path, config: FileLoaderConfig) -> list[Document]:
    """The records of every file ``config`` selects in ``folder`` (skipped files are left out)."""
    report = LoadReport(folder=folder)
    records = list(_folder_records(_listing(folder, config), config, report))
    _check_some_read(folder, report)
    return records


class ReadProgress:
    """How much of a load's files has been read, in bytes (characters of a CSV or text file count as bytes)."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.before = 0
        self.within = 0

    def read(self, characters: int) -> None:
        self.within += characters

    def file_done(self, size: int) -> None:
        self.before += size
        self.within = 0

    @property
    def done(self) -> int:
        return min(self.before + self.within, self.total)


def iter_file(
    path: Path, source: str, config: FileLoaderConfig, read: Callable[[int], None] | None = None
) -> Iterator[Document]:
    """The records of one file (records mode), read lazily where the format allows; a :class:`NodeError`
    names the file on failure. ``read(n)``: told as characters of a CSV or text file are read."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        raise NodeError(f"{path.name}: unsupported file type '{suffix or '(none)'}'; supported: {supported_text()}")
    if not path.is_file():
        raise NodeError(
            f"{path}: no such file; check the path (relative paths resolve against the flow's folder). "
            f"Supported: {supported_text()}"
        )
    if suffix in TABLE_EXTENSIONS:
        yield from _iter_csv_file(path, source, config, read)
    elif suffix in TEXT_EXTENSIONS:
        yield from iter_text_parts(path, source, config.encoding, read)
    elif suffix in SHEET_EXTENSIONS:
        sheet, rows = sheet_rows(path, config.sheet)
        yield from table_records(rows, source, config.id_column, {"sheet": sheet})
    else:
        yield from load_file(path, config, source)


def _iter_csv_file(
    path: Path, source: str, config: FileLoaderConfig, read: Callable[[int], None] | None
) -> Iterator[Document]:
    """A CSV or TSV read line by line (never all in memory)."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" and config.delimiter == "," else config.delimiter
    encoding = stream_encoding(path, config.encoding)
    with path.open(encoding=encoding, newline="") as handle:

        def lines() -> Iterator[str]:
            for number, line in enumerate(handle):
                if read is not None:
                    read(len(line))
                yield line.removeprefix("\ufeff") if number == 0 else line

        try:
            for record in iter_csv(lines(), source, delimiter, config.id_column):
                record.metadata.pop("start", None)
                record.metadata.pop("end", None)
                yield record
        except UnicodeDecodeError:
            raise NodeError(
                f"{path.name}: the file is not valid {encoding} text; set the loader's encoding (or auto)."
            ) from None


def load_file(path: Path, config: FileLoaderConfig, source: str | None = None) -> list[Document]:
    """Records (or the one whole document) of ``path``; a :class:`NodeError` names the file on failure.
    ``source``: the name records carry (default the file name; in a folder, the path inside it)."""
    suffix = path.suffix.lower()
    source = source or path.name
    if suffix not in SUPPORTED_EXTENSIONS:
        raise NodeError(f"{path.name}: unsupported file type '{suffix or '(none)'}'; supported: {supported_text()}")
    if not path.is_file():
        raise NodeError(
            f"{path}: no such file; check the path (relative paths resolve against the flow's folder, "
            f"then the working directory). Supported: {supported_text()}"
        )
    whole = config.mode == "whole"
    if suffix == ".pdf":
        pages = _pdf_pages(path, config.pdf_text)
        if whole:
            return [_whole(source, [(f"{source}#page{i}", text) for i, text in enumerate(pages, 1)], "\n\n")]
        return [
            Document(text=text, metadata={"source": source, "page": i, "record_id": f"{source}#page{i}"})
            for i, text in enumerate(pages, 1)
        ]
    if suffix in DOCUMENT_READERS:
        sections = DOCUMENT_READERS[suffix](path)
        records = [_section_record(source, section.text, section.metadata) for section in sections]
        if whole:
            if len(records) == 1:
                return [Document(text=records[0].text, metadata={"source": source})]
            return [_whole(source, [(r.metadata["record_id"], r.text) for r in records], "\n\n")]
        return records
    if suffix in SHEET_EXTENSIONS:
        sheet, rows = sheet_rows(path, config.sheet)
        records = list(table_records(rows, source, config.id_column, {"sheet": sheet}))
        return [_whole_table(source, records, {"sheet": sheet})] if whole else records
    if suffix in TEXT_EXTENSIONS and not whole:
        return list(iter_text_parts(path, source, config.encoding))
    if suffix == ".json":
        check_whole_size(path, "JSON")
    text = read_text(path, config.encoding)
    parsed: list[Document] | None = None
    if suffix in TABLE_EXTENSIONS:
        delimiter = "\t" if suffix == ".tsv" and config.delimiter == "," else config.delimiter
        parsed = parse_csv(text, source, delimiter, config.id_column)
    elif suffix == ".json":
        parsed = parse_json(text, source, config.id_column)
    if parsed is None:
        return [Document(text=text, metadata={"source": source, "record_id": source})]
    if whole:
        metadata: dict[str, Any] = {"source": source}
        metadata["record_spans"] = [[r.metadata["record_id"], r.metadata["start"], r.metadata["end"]] for r in parsed]
        return [Document(text=text, metadata=metadata)]
    for record in parsed:
        # offsets into the file were only needed to build the whole document's spans
        record.metadata.pop("start", None)
        record.metadata.pop("end", None)
    return parsed


def _section_record(source: str, text: str, extra: dict[str, Any]) -> Document:
    """One record of a text document: the whole file, or one slide or chapter (``name#slide3``)."""
    metadata: dict[str, Any] = {"source": source}
    record_id = source
    for key in ("slide", "chapter"):
        if key in extra:
            metadata[key] = extra[key]
            record_id = f"{source}#{key}{extra[key]}"
    if extra.get("heading"):
        metadata["heading"] = extra["heading"]
    metadata["record_id"] = record_id
    return Document(text=text, metadata=metadata)


def iter_text_parts(
    path: Path, source: str, encoding: str = "auto", read: Callable[[int], None] | None = None
) -> Iterator[Document]:
    """A text or Markdown file as one record, or, over :data:`TEXT_PART_CHARS`, as parts (``name#part2``) cut
    at a blank line (else a line end) near that size, read piece by piece so the file is never all in memory."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NodeError(f"{path}: cannot read the file ({exc.strerror or exc}).") from exc
    if size <= TEXT_PART_CHARS:
        text = read_text(path, encoding)
        if read is not None:
            read(size)
        yield Document(text=text, metadata={"source": source, "record_id": source})
        return
    chosen = stream_encoding(path, encoding)
    number = 0

    def part(text: str) -> Document:
        return Document(text=text, metadata={"source": source, "part": number, "record_id": f"{source}#part{number}"})

    try:
        with path.open(encoding=chosen, newline="") as handle:
            buffer = handle.read(TEXT_PART_CHARS).removeprefix("\ufeff")
            piece = buffer
            while piece:
                if read is not None:
                    read(len(piece))
                while len(buffer) > TEXT_PART_CHARS:
                    cut = _cut(buffer, TEXT_PART_CHARS)
                    if buffer[:cut].strip():
                        number += 1
                        yield part(buffer[:cut])
                    buffer = buffer[cut:]
                piece = handle.read(TEXT_PART_CHARS)
                buffer += piece
            if buffer.strip():
                number += 1
                yield part(buffer)
    except UnicodeDecodeError:
        raise NodeError(f"{path.name}: the file is not valid {chosen} text; set the loader's encoding.") from None


def _cut(text: str, limit: int) -> int:
    """Where to end a part of at most ``limit`` characters: after the last blank line in its second half, else
    after the last line end there, else at ``limit``."""
    for mark in ("\n\n", "\n"):
        at = text.rfind(mark, limit // 2, limit)
        if at >= 0:
            return at + len(mark)
    return limit


def table_records(rows: Iterable[list[str]], source: str, id_column: str, extra: dict[str, Any]) -> Iterator[Document]:
    """Records from a table's rows of cells (a worksheet), exactly as :func:`iter_csv` makes them from a CSV:
    the first non-empty row is the header (names de-duplicated like pandas), empty rows are skipped, ``text`` is
    the row as a CSV line. A cell right of the header's last column gets pandas' name (``Unnamed: 7``) rather than
    failing the sheet."""
    iterator = iter(rows)
    header: list[str] | None = None
    for cells in iterator:
        if any(cell.strip() for cell in cells):
            header = cells
            break
    if header is None:
        raise NodeError(f"{source}: the sheet is empty; it needs a header row and data rows.")
    while header and not header[-1].strip():
        header = header[:-1]
    columns, id_name = table_columns(header, source, id_column)
    seen_ids: set[str] = set()
    number = 0
    for cells in iterator:
        if not any(cell.strip() for cell in cells):
            continue
        number += 1
        values = dict.fromkeys(columns, "")
        for index, cell in enumerate(cells):
            if index < len(columns):
                values[columns[index]] = cell
            elif cell.strip():
                name = f"Unnamed: {index}"
                values[name if name not in values else f"{name}.1"] = cell
        record_id = unique_id(values[id_name], source, number, seen_ids)
        text = _csv_line(list(values.values()))
        metadata = {"source": source, "row": number, "record_id": record_id, "columns": values, **extra}
        yield Document(text=text, metadata=metadata)


def _csv_line(cells: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow(cells)
    return buffer.getvalue()


def _whole_table(source: str, records: list[Document], extra: dict[str, Any]) -> Document:
    """A sheet as ONE document: its CSV text (header first) with each row's span."""
    if not records:
        return Document(text="", metadata={"source": source, **extra, "record_spans": []})
    header = _csv_line(list(records[0].metadata["columns"]))
    spans: list[list[Any]] = []
    position = len(header) + 1
    for record in records:
        spans.append([record.metadata["record_id"], position, position + len(record.text)])
        position += len(record.text) + 1
    text = "\n".join([header, *(record.text for record in records)])
    return Document(text=text, metadata={"source": source, **extra, "record_spans": spans})


def _whole(source: str, parts: list[tuple[str, str]], separator: str) -> Document:
    spans: list[list[Any]] = []
    position = 0
    for record_id, text in parts:
        spans.append([record_id, position, position + len(text)])
        position += len(text) + len(separator)
    text = separator.join(text for _, text in parts)
    return Document(text=text, metadata={"source": source, "record_spans": spans})


def read_text(path: Path, encoding: str = "auto") -> str:
    """The file's text with line endings as they are and a UTF-8 BOM removed."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NodeError(f"{path}: cannot read the file ({exc.strerror or exc}).") from exc
    encodings = _TEXT_ENCODINGS if encoding == "auto" else (encoding,)
    if encoding == "auto" and raw[:2] in _UTF16_BOMS:
        encodings = ("utf-16",)
    for name in encodings:
        try:
            text = raw.decode(name)
        except LookupError:
            raise NodeError(f"{path.name}: unknown encoding '{encoding}'; use e.g. utf-8, cp1252 or auto.") from None
        except UnicodeDecodeError:
            continue
        return text.removeprefix("\ufeff")
    raise NodeError(f"{path.name}: the file is not valid {encoding} text; set the loader's encoding (or auto).")


def stream_encoding(path: Path, encoding: str = "auto") -> str:
    """The encoding :func:`read_text` would pick, found by decoding the file piece by piece (never all of it
    in memory at once)."""
    import codecs

    if encoding != "auto":
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise NodeError(f"{path.name}: unknown encoding '{encoding}'; use e.g. utf-8, cp1252 or auto.") from None
        return encoding
    try:
        with path.open("rb") as handle:
            if handle.read(2) in _UTF16_BOMS:
                return "utf-16"
    except OSError as exc:
        raise NodeError(f"{path}: cannot read the file ({exc.strerror or exc}).") from exc
    for name in _TEXT_ENCODINGS:
        decoder = codecs.getincrementaldecoder(name)()
        try:
            with path.open("rb") as handle:
                while piece := handle.read(1 << 20):
                    decoder.decode(piece)
                decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            continue
        except OSError as exc:
            raise NodeError(f"{path}: cannot read the file ({exc.strerror or exc}).") from exc
        return name
    return _TEXT_ENCODINGS[-1]


def _pdf_pages(path: Path, mode: str = "layout") -> list[str]:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    from flowbuilder.nodes.pdf_text import extract_pages

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise NodeError(f"{path.name}: the PDF is encrypted with a password; save an unencrypted copy and load it.")
        if mode == "plain":
            return [page.extract_text() or "" for page in reader.pages]
        return extract_pages(reader)
    except NodeError:
        raise
    except FileNotDecryptedError as exc:
        raise NodeError(f"{path.name}: the PDF is encrypted ({exc}); save an unencrypted copy and load that.") from exc
    except (PdfReadError, ValueError, OSError, KeyError, TypeError) as exc:
        raise NodeError(f"{path.name}: not a readable PDF ({exc}); check the file is a complete, valid PDF.") from exc


def dedupe_headers(names: list[str]) -> list[str]:
    """pandas' ``read_csv`` column names: blanks become ``Unnamed: i``, repeats get ``.1``, ``.2``...
    (skipping any name already taken)."""
    result = [name if name != "" else f"Unnamed: {i}" for i, name in enumerate(names)]
    counts: defaultdict[str, int] = defaultdict(int)
    for i, column in enumerate(result):
        count = counts[column]
        while count > 0:
            counts[column] = count + 1
            column = f"{column}.{count}"
            count = counts[column]
        result[i] = column
        counts[column] = count + 1
    return result


def table_columns(header: list[str], source: str, id_column: str) -> tuple[list[str], str]:
    """A table's column names (pandas' de-duplication) and the column that gives record ids."""
    columns = dedupe_headers(header)
    id_name = id_column or columns[0]
    if id_name not in columns:
        raise NodeError(f"{source}: id_column '{id_name}' is not a column; columns: {', '.join(columns)}")
    return columns, id_name


def unique_id(value: str, source: str, number: int, seen: set[str]) -> str:
    """Row ``number``'s record id: its id value, else ``source#rowN``; a repeat gets ``#rowN`` too, since
    identities must stay unique for tracing chunks to rows."""
    record_id = value.strip() or f"{source}#row{number}"
    if record_id in seen:
        record_id = f"{record_id}#row{number}"
    seen.add(record_id)
    return record_id


def _lines(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _LINE.finditer(text):
        yield match.start(), match.end(), match.group()


def parse_csv(text: str, source: str, delimiter: str = ",", id_column: str = "") -> list[Document]:
    """One record per data row: ``text`` is the row's raw line(s), ``columns`` the parsed fields.
    ``start``/``end`` metadata give the row's offsets in ``text`` (the caller drops or uses them)."""
    return list(iter_csv((line for _, _, line in _lines(text)), source, delimiter, id_column))


def iter_csv(lines: Iterable[str], source: str, delimiter: str = ",", id_column: str = "") -> Iterator[Document]:
    """:func:`parse_csv` over the file's lines (with their line endings), one record at a time, so a big file
    is never all in memory. Only the lines of the row being read are held."""
    if len(delimiter) != 1:
        raise NodeError(f"{source}: the CSV delimiter must be one character, got {delimiter!r}.")
    pending: list[tuple[int, str]] = []  # (offset, line) of the lines csv has read since the last row
    position = 0
    lines_done = 0  # lines before the pending ones

    def feed() -> Iterator[str]:
        nonlocal position
        for line in lines:
            pending.append((position, line))
            position += len(line)
            yield line

    def take() -> tuple[int, list[tuple[int, str]]]:
        nonlocal lines_done
        first, taken = lines_done, pending[:]
        lines_done += len(pending)
        pending.clear()
        return first, taken

    reader = csv.reader(feed(), delimiter=delimiter)
    try:
        header = next(reader, None)
        while header is not None and not header:
            header = next(reader, None)
        if header is None:
            raise NodeError(f"{source}: the CSV file is empty; it needs a header row and data rows.")
        take()
        columns, id_name = table_columns(header, source, id_column)
        seen_ids: set[str] = set()
        number = 0
        for fields in reader:
            first_line, row_lines = take()
            if not fields:
                continue
            number += 1
            if len(fields) > len(columns):
                raise NodeError(
                    f"{source}: data row {number} (line {first_line + 1}) has {len(fields)} fields but the header "
                    f"has {len(columns)}; fix the row or the delimiter (now {delimiter!r})."
                )
            values = dict(zip(columns, [*fields, *[""] * (len(columns) - len(fields))], strict=True))
            record_id = unique_id(values[id_name], source, number, seen_ids)
            start = row_lines[0][0]
            end = row_lines[-1][0] + len(row_lines[-1][1].rstrip("\r\n"))
            text = "".join(line for _, line in row_lines)[: end - start]
            metadata = {"source": source, "row": number, "record_id": record_id, "columns": values}
            yield Document(text=text, metadata={**metadata, "start": start, "end": end})
    except csv.Error as exc:
        raise NodeError(f"{source}: malformed CSV near line {lines_done + len(pending)}: {exc}") from exc


def parse_json(text: str, source: str, id_column: str = "") -> list[Document] | None:
    """One record per object of a top-level JSON list of objects (text = the object's raw JSON);
    None for any other JSON, which is loaded as one text record."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NodeError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from exc
    if not isinstance(data, list) or not data or not all(isinstance(item, dict) for item in data):
        return None
    spans = _json_item_spans(text)
    keys = list(dict.fromkeys(key for item in data for key in item))
    id_name = id_column or (keys[0] if keys else "")
    if id_column and id_column not in keys:
        raise NodeError(f"{source}: id_column '{id_column}' is not a key of the objects; keys: {', '.join(keys)}")
    records: list[Document] = []
    seen_ids: set[str] = set()
    for number, (item, (start, end)) in enumerate(zip(data, spans, strict=True), 1):
        columns = {str(k): v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in item.items()}
        value = item.get(id_name)
        record_id = unique_id("" if value is None else str(value), source, number, seen_ids)
        metadata = {"source": source, "row": number, "record_id": record_id, "columns": columns}
        records.append(Document(text=text[start:end], metadata={**metadata, "start": start, "end": end}))
    return records


def _json_item_spans(text: str) -> list[tuple[int, int]]:
    """Character offsets of each element of a top-level JSON array (already known to be valid)."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"\s*")
    index = whitespace.match(text, 0).end() + 1  # type: ignore[union-attr]  # past "["
    spans: list[tuple[int, int]] = []
    while True:
        index = whitespace.match(text, index).end()  # type: ignore[union-attr]
        if text[index] == "]":
            return spans
        _, end = decoder.raw_decode(text, index)
        spans.append((index, end))
        index = whitespace.match(text, end).end()  # type: ignore[union-attr]
        if text[index] == ",":
            index += 1
