"""Workbooks (.xlsx/.xlsm through openpyxl, .xls through xlrd) as rows of text cells, one sheet at a time.

Rows are read lazily: openpyxl's read-only mode parses the sheet's XML as it goes, so memory does not grow with the
number of rows (it holds the workbook's shared-strings table: the distinct texts). xlrd reads an .xls (Excel
97-2003, at most 65,536 rows) whole, from the workbook stream olefile takes out of the file's OLE container.

Cells become the text a CSV export would hold: whole numbers without ``.0``, dates as ISO 8601, booleans as
``TRUE``/``FALSE``, formulas as the value Excel last saved (a file written by a program that never calculated it
has no value to give: the cell is empty).

Only the chosen sheet is read (default: the first); the others are never mixed in.
"""

from __future__ import annotations

import datetime as dt
import io
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flowbuilder.errors import NodeError
from flowbuilder.nodes.documents.office import unreadable
from flowbuilder.nodes.documents.safety import MAX_SHEET_UNPACKED, OLE_MAGIC, check_not_empty, check_zip, head

Rows = Iterator[list[str]]


def cell_text(value: Any) -> str:
    """A cell's value as the text a CSV export would hold."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _choose(names: list[str], wanted: str, path: Path) -> str:
    if not names:
        raise NodeError(f"{path.name}: the workbook has no sheets.")
    if not wanted:
        return names[0]
    if wanted in names:
        return wanted
    folded = {name.casefold(): name for name in names}
    if wanted.casefold() in folded:
        return folded[wanted.casefold()]
    raise NodeError(f"{path.name}: no sheet named '{wanted}'; sheets: {', '.join(names)}.")


def sheet_rows(path: Path, sheet: str) -> tuple[str, Rows]:
    """``(sheet name, rows)`` of the chosen sheet (``""`` = the first). The rows are read as they are iterated;
    the workbook is closed when they end (or the iterator is dropped)."""
    check_not_empty(path)
    start = head(path)
    if start.startswith(b"PK"):
        return _xlsx_rows(path, sheet)
    if start.startswith(OLE_MAGIC):
        if path.suffix.lower() != ".xls":
            check_zip(path, "Excel workbook")  # says "password-protected or old binary"
        return _xls_rows(path, sheet)
    looks = " (it looks like a web page)" if start.lstrip().lower().startswith((b"<", b"\xef\xbb\xbf<")) else ""
    raise NodeError(f"{path.name}: not an Excel workbook{looks}; save it from Excel as .xlsx, or as .csv.")


def _xlsx_rows(path: Path, sheet: str) -> tuple[str, Rows]:
    check_zip(path, "Excel workbook", limit=MAX_SHEET_UNPACKED)
    from openpyxl import load_workbook

    try:
        with warnings.catch_warnings():  # openpyxl warns about parts it drops (data validation, odd relations)
            warnings.simplefilter("ignore")
            book = load_workbook(str(path), read_only=True, data_only=True, keep_links=False)
    except Exception as exc:  # a parser meets a broken file in any of its own ways; one line says which file
        raise unreadable(path, "Excel workbook", exc) from None
    try:
        name = _choose(list(book.sheetnames), sheet, path)
        worksheet = book[name]
        if not hasattr(worksheet, "iter_rows"):
            raise NodeError(f"{path.name}: sheet '{name}' is a chart, not a table of cells.")
        worksheet.reset_dimensions()  # a stale <dimension> element would cut rows off; read what is there
    except NodeError:
        book.close()
        raise
    except Exception as exc:  # see above
        book.close()
        raise unreadable(path, "Excel workbook", exc) from None

    def rows() -> Rows:
        try:
            for values in worksheet.iter_rows(values_only=True):
                yield [cell_text(value) for value in values]
        except NodeError:
            raise
        except Exception as exc:  # see above
            raise unreadable(path, "Excel workbook", exc) from None
        finally:
            book.close()

    return name, rows()


def _workbook_stream(path: Path) -> bytes:
    """The BIFF workbook stream of an .xls, taken out of its OLE container by olefile, which refuses a broken
    sector chain (xlrd's own container reader loops forever on a cyclic one)."""
    import olefile

    try:
        with olefile.OleFileIO(str(path), raise_defects=olefile.DEFECT_INCORRECT) as container:
            for name in ("Workbook", "Book", "WORKBOOK", "BOOK"):
                if container.exists(name):
                    if container.get_size(name) > path.stat().st_size:
                        raise NodeError(f"{path.name}: not a readable Excel 97-2003 workbook (its stream overruns it).")
                    return bytes(container.openstream(name).read())
    except NodeError:
        raise
    except Exception as exc:  # see _xlsx_rows
        raise unreadable(path, "Excel 97-2003 workbook", exc) from None
    raise NodeError(f"{path.name}: not an Excel workbook (an Office file with no workbook inside).")


def _xls_rows(path: Path, sheet: str) -> tuple[str, Rows]:
    import xlrd

    stream = _workbook_stream(path)
    try:
        # xlrd prints its warnings to stdout unless given a log file (it would corrupt `run --json`)
        book = xlrd.open_workbook(file_contents=stream, on_demand=True, logfile=io.StringIO())
    except Exception as exc:  # see _xlsx_rows
        if "encrypt" in str(exc).lower():
            raise NodeError(
                f"{path.name}: the workbook is password-protected; save a copy without a password."
            ) from None
        raise unreadable(path, "Excel 97-2003 workbook", exc) from None
    try:
        name = _choose(list(book.sheet_names()), sheet, path)
        worksheet = book.sheet_by_name(name)
    except NodeError:
        book.release_resources()
        raise
    except Exception as exc:
        book.release_resources()
        raise unreadable(path, "Excel 97-2003 workbook", exc) from None

    def value(cell: Any) -> Any:
        if cell.ctype == xlrd.XL_CELL_DATE:
            try:
                return xlrd.xldate.xldate_as_datetime(cell.value, book.datemode)
            except (ValueError, OverflowError, xlrd.xldate.XLDateError):
                return cell.value
        if cell.ctype == xlrd.XL_CELL_BOOLEAN:
            return bool(cell.value)
        if cell.ctype == xlrd.XL_CELL_ERROR:
            return xlrd.error_text_from_code.get(cell.value, "#ERROR")
        return cell.value

    def rows() -> Rows:
        try:
            for index in range(worksheet.nrows):
                yield [cell_text(value(cell)) for cell in worksheet.row(index)]
        finally:
            book.release_resources()

    return name, rows()
