"""The file loader: CSV, JSON, PDF, TXT and Markdown files into records (or one whole document).

A record keeps where it came from (``source``, ``row`` or ``page``, ``record_id``) so that a fact can
be traced from a retrieved chunk back to its CSV row. CSV headers are de-duplicated with pandas'
convention (``Expected Result``, ``Expected Result.1``) because LangFlow reads CSVs with pandas and
the Parser templates imported from it name columns that way.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
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
from flowbuilder.nodes.io import RecordsOut
from flowbuilder.pathguard import PathKind, expand_user
from flowbuilder.paths import resolve_path
from flowbuilder.portvalues import Text
from flowbuilder.registry import register_node

SUPPORTED_EXTENSIONS = (".csv", ".tsv", ".json", ".pdf", ".txt", ".md", ".markdown")
_TEXT_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")  # tried in order for encoding="auto"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+$")


class FileLoaderConfig(BaseModel):
    """Settings of ``loader.file``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        "",
        description="File or folder to load (relative to the flow file's folder; a folder loads "
        "every supported file directly in it); a run input replaces it.",
    )
    mode: Literal["auto", "records", "whole"] = Field(
        "auto",
        description="auto/records: one record per CSV row, JSON object, PDF page or text file; "
        "whole: the file's raw text as ONE document (with record spans), like LangFlow's File -> message.",
    )
    encoding: str = Field("auto", description="Text encoding; auto tries UTF-8 (BOM stripped), then cp1252.")
    id_column: str = Field("", description="Column whose value becomes record_id (default: the first column).")
    delimiter: str = Field(",", description="CSV field delimiter (.tsv files use a tab unless changed).")
    pdf_text: Literal["layout", "plain"] = Field(
        "layout",
        description="PDF text: layout keeps lines whole, folds ligatures, joins words hyphenated at line ends "
        "and drops running headers, footers and page numbers; plain is pypdf's raw extraction (often one word "
        "per line).",
    )


class PathIn(TypedDict):
    """The input ports of ``loader.file``."""

    path: NotRequired[Annotated[Text, "A path from a file input; replaces the config."]]


@register_node
class FileLoader(Node[FileLoaderConfig, PathIn, RecordsOut]):
    """Load a CSV, JSON, PDF, TXT or Markdown file as records (one per row, object, page or file)."""

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
    aliases = ("File", "Default Data Loader", "document loader", "csv", "pdf", "load")
    category = "Loaders"
    Config = FileLoaderConfig
    run_input = "file"
    stream_out = "records"
    fraction: float | None = None
    """While streaming: how much of the input has been read (0..1), for progress downstream."""

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
            files = folder_files(path) if path.is_dir() else [path]
            return sum(file.stat().st_size for file in files)
        except (NodeError, OSError, ValueError):
            return None

    def iter_batches(self, inputs: PathIn, ctx: RunContext) -> Iterator[list[Any]]:
        """The records in batches, read lazily: a CSV row by row from the file, other files one at a time."""
        from flowbuilder.streaming import BATCH_SIZE

        chosen = ctx.run_input or inputs.get("path") or self.config.path
        if not chosen:
            self.run(inputs, ctx)  # says what is missing
        path = ctx.resolve_path(str(chosen))
        files = folder_files(path) if path.is_dir() else [path]
        if path.is_dir():
            if not files:
                raise NodeError(f"{path}: the folder has no supported files ({', '.join(SUPPORTED_EXTENSIONS)}).")
            for file in files:
                ctx.check_path(file, what="file")
            ctx.details["folder"] = str(path)
            ctx.details["files"] = len(files)
        else:
            ctx.details["file"] = str(path)
        sizes = [file.stat().st_size if file.is_file() else 0 for file in files]
        total, before = max(sum(sizes), 1), 0
        batch: list[Document] = []
        count = 0
        for file, size in zip(files, sizes, strict=True):
            read = [0]
            for record in self._stream_file(file, read):
                batch.append(record)
                if len(batch) >= BATCH_SIZE:
                    count += len(batch)
                    self.fraction = min(1.0, (before + min(read[0], size)) / total)
                    ctx.progress(before + min(read[0], size), total, "reading")
                    yield batch
                    batch = []
            before += size
        count += len(batch)
        self.fraction = 1.0
        ctx.details["records"] = count
        if batch:
            yield batch
        ctx.progress(total, total, "reading")

    def _stream_file(self, path: Path, read: list[int]) -> Iterator[Document]:
        """One file's records; a CSV is read line by line (``read[0]`` counts the characters read)."""
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".tsv") or not path.is_file():
            yield from load_file(path, self.config)
            return
        delimiter = "\t" if suffix == ".tsv" and self.config.delimiter == "," else self.config.delimiter
        encoding = stream_encoding(path, self.config.encoding)
        with path.open(encoding=encoding, newline="") as handle:

            def lines() -> Iterator[str]:
                for number, line in enumerate(handle):
                    read[0] += len(line)
                    yield line.removeprefix("\ufeff") if number == 0 else line

            try:
                for record in iter_csv(lines(), path.name, delimiter, self.config.id_column):
                    record.metadata.pop("start", None)
                    record.metadata.pop("end", None)
                    yield record
            except UnicodeDecodeError:
                raise NodeError(
                    f"{path.name}: the file is not valid {encoding} text; set the loader's encoding (or auto)."
                ) from None

    @classmethod
    def config_paths(cls, config: FileLoaderConfig) -> list[tuple[str, str, PathKind]]:
        return [("path", config.path, "file")] if config.path.strip() else []

    @classmethod
    def fingerprint(
        cls, config: FileLoaderConfig, base_dir: Path | None, run_input: str | None, inputs: Mapping[str, Any]
    ) -> str | None:
        chosen = run_input or inputs.get("path") or config.path
        if not chosen:
            return None
        try:
            path = _resolve(str(chosen), base_dir)
            files = folder_files(path) if path.is_dir() else [path]
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

    def run(self, inputs: PathIn, ctx: RunContext) -> RecordsOut:
        chosen = ctx.run_input or inputs.get("path") or self.config.path
        if not chosen:
            raise NodeError(
                f"no file to load: set the node's path or run with --input {ctx.node_id}=PATH "
                f"(supported: {', '.join(SUPPORTED_EXTENSIONS)})"
            )
        path = ctx.resolve_path(str(chosen))
        if path.is_dir():
            # a folder under an allowed root can still hold a symlink to a file outside it
            records = load_folder(path, self.config, allow=lambda file: ctx.check_path(file, what="file"))
            ctx.details["folder"] = str(path)
            ctx.details["files"] = len({r.metadata.get("source") for r in records})
            ctx.details["records"] = len(records)
            return {"records": records}
        records = load_file(path, self.config)
        whole = self.config.mode == "whole"
        ctx.details["file"] = str(path)
        ctx.details["records"] = len(records) if not whole else len(records[0].metadata.get("record_spans", []))
        return {"records": records}

    def summarize(self, outputs: RecordsOut) -> str:
        records = outputs["records"]
        if self.config.mode == "whole" and len(records) == 1:
            spans = records[0].metadata.get("record_spans") or []
            return f"1 document ({len(spans)} records)" if spans else f"1 document ({len(records[0].text)} chars)"
        return f"{len(records)} records"


def _resolve(path: str, base_dir: Path | None) -> Path:
    """The same rule as ``ctx.resolve_path`` (flowbuilder.paths), so the fingerprint sees the file that loads."""
    candidate = expand_user(path)
    if candidate.is_absolute() or base_dir is not None:
        return resolve_path(candidate, base_dir)
    return Path.cwd() / candidate


def folder_files(folder: Path) -> list[Path]:
    """The supported files directly inside ``folder``, by name (subfolders are not read, so file names,
    which become record ids, stay unique)."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)


def load_folder(
    folder: Path, config: FileLoaderConfig, allow: Callable[[Path], object] | None = None
) -> list[Document]:
    """The records of every supported file in ``folder``, file by file in name order; ``allow`` raises for a
    file that may not be read (checked for all before any is read)."""
    files = folder_files(folder)
    if not files:
        raise NodeError(f"{folder}: the folder has no supported files ({', '.join(SUPPORTED_EXTENSIONS)}).")
    if allow is not None:
        for file in files:
            allow(file)
    return [record for file in files for record in load_file(file, config)]


def load_file(path: Path, config: FileLoaderConfig) -> list[Document]:
    """Records (or the one whole document) of ``path``; a :class:`NodeError` names the file on failure."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        raise NodeError(
            f"{path.name}: unsupported file type '{suffix or '(none)'}'; supported: {', '.join(SUPPORTED_EXTENSIONS)}"
        )
    if not path.is_file():
        raise NodeError(
            f"{path}: no such file; check the path (relative paths resolve against the flow's folder, "
            f"then the working directory). Supported: {', '.join(SUPPORTED_EXTENSIONS)}"
        )
    if suffix == ".pdf":
        pages = _pdf_pages(path, config.pdf_text)
        if config.mode == "whole":
            return [_whole(path.name, [(f"{path.name}#page{i}", text) for i, text in enumerate(pages, 1)], "\n\n")]
        return [
            Document(text=text, metadata={"source": path.name, "page": i, "record_id": f"{path.name}#page{i}"})
            for i, text in enumerate(pages, 1)
        ]
    text = read_text(path, config.encoding)
    records: list[Document] | None = None
    if suffix in (".csv", ".tsv"):
        delimiter = "\t" if suffix == ".tsv" and config.delimiter == "," else config.delimiter
        records = parse_csv(text, path.name, delimiter, config.id_column)
    elif suffix == ".json":
        records = parse_json(text, path.name, config.id_column)
    if records is None:
        return [Document(text=text, metadata={"source": path.name, "record_id": path.name})]
    if config.mode == "whole":
        metadata: dict[str, Any] = {"source": path.name}
        metadata["record_spans"] = [[r.metadata["record_id"], r.metadata["start"], r.metadata["end"]] for r in records]
        return [Document(text=text, metadata=metadata)]
    for record in records:
        # offsets into the file were only needed to build the whole document's spans
        record.metadata.pop("start", None)
        record.metadata.pop("end", None)
    return records


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
        columns = dedupe_headers(header)
        id_name = id_column or columns[0]
        if id_name not in columns:
            raise NodeError(f"{source}: id_column '{id_name}' is not a column; columns: {', '.join(columns)}")
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
            record_id = values[id_name].strip() or f"{source}#row{number}"
            if record_id in seen_ids:  # identities must stay unique for tracing chunks to rows
                record_id = f"{record_id}#row{number}"
            seen_ids.add(record_id)
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
        record_id = (str(value).strip() if value is not None else "") or f"{source}#row{number}"
        if record_id in seen_ids:
            record_id = f"{record_id}#row{number}"
        seen_ids.add(record_id)
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
