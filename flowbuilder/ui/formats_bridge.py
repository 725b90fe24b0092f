"""Import and export for the UI (plain Python, no NiceGUI): the CLI's converters, called directly."""

from __future__ import annotations

import json
from typing import Any

from flowbuilder.credentials import CredentialResolver
from flowbuilder.errors import UnsupportedFormatError
from flowbuilder.flow import Flow
from flowbuilder.formats.convert import EXPORT_FORMATS as FOREIGN_FORMATS
from flowbuilder.formats.convert import convert_data, export_flow
from flowbuilder.formats.native import detect_format, dump_flow, flow_from_data
from flowbuilder.formats.report import ImportReport

EXPORT_FORMATS = ("flowbuilder", *FOREIGN_FORMATS)


def parse_upload(content: bytes, filename: str) -> Any:
    try:
        return json.loads(content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UnsupportedFormatError(filename, f"is not a JSON file ({type(exc).__name__}: {exc})") from None


def import_data(data: Any, origin: str, resolver: CredentialResolver | None = None) -> tuple[Flow, ImportReport | None]:
    """A Flow and the importer's report (None for a native file) from parsed JSON of any known format."""
    fmt = detect_format(data)
    if fmt == "flowbuilder":
        return flow_from_data(data, origin), None
    if fmt not in FOREIGN_FORMATS or not isinstance(data, dict):
        raise UnsupportedFormatError(origin, "is neither a Flowbuilder, n8n nor LangFlow flow file")
    return convert_data(data, fmt, origin, resolver=resolver)


def export_text(flow: Flow, fmt: str) -> tuple[str, list[str]]:
    """The flow as file text in ``fmt`` (``flowbuilder``, ``n8n`` or ``langflow``) and the converter's
    warnings about what that format cannot hold."""
    if fmt == "flowbuilder":
        return dump_flow(flow), []
    data, warnings = export_flow(flow, fmt)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", list(warnings)


def report_text(report: ImportReport | None) -> str:
    return report.to_text() if report is not None else ""
