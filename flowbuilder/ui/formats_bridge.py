"""Import and export for the UI (plain Python, no NiceGUI): the CLI's converters, called directly."""

from __future__ import annotations

from typing import Any

from flowbuilder.errors import UnsupportedFormatError
from flowbuilder.flow import Flow
from flowbuilder.formats.convert import EXPORT_FORMATS as FOREIGN_FORMATS
from flowbuilder.formats.convert import convert_data, detect_foreign, export_flow, parse_flow_text
from flowbuilder.formats.limits import check_size, strict_dumps
from flowbuilder.formats.native import detect_format, dump_flow, flow_from_data
from flowbuilder.formats.report import ImportReport
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.scopes import ID_KEY, imported_flow_id

EXPORT_FORMATS = ("flowbuilder", *FOREIGN_FORMATS)


UPLOAD_SUFFIXES = ".json,.yml,.yaml,application/json,application/x-yaml,text/yaml"
"""What the import dialog's picker offers: JSON exports and Dify's YAML DSL."""


def parse_upload(content: bytes, filename: str) -> Any:
    """An uploaded flow file parsed as the command line parses one (JSON, or YAML for a Dify DSL)."""
    check_size(filename, len(content))
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnsupportedFormatError(filename, "is not UTF-8 text; a flow file is JSON or YAML") from None
    return parse_flow_text(text, filename)


def import_data(
    data: Any, origin: str, resolver: CredentialResolver | None = None, local: bool = False
) -> tuple[Flow, ImportReport | None]:
    """A Flow and the importer's report (None for a native file) from parsed JSON of any known format. An imported
    flow is a new flow: it gets a new ``flow_id`` whatever its file said (:mod:`flowbuilder.trust.scopes`), so
    saved over one of the user's flows it claims none of that flow's stores or memory."""
    if detect_format(data) == "flowbuilder":
        flow = flow_from_data(data, origin)
        return flow.model_copy(update={"meta": {**flow.meta, ID_KEY: imported_flow_id(data)}}), None
    # the command line's own checks (format, node and connection limits), not a copy of them
    kind = detect_foreign(data, origin)
    return convert_data(data, kind, origin, resolver=resolver, local=local)  # unwraps a Flowise record


def export_text(flow: Flow, fmt: str) -> tuple[str, list[str]]:
    """The flow as file text in ``fmt`` (``flowbuilder``, ``n8n`` or ``langflow``) and the converter's
    warnings about what that format cannot hold (the UI shows them; it writes lossy exports)."""
    if fmt == "flowbuilder":
        return dump_flow(flow), []
    data, warnings = export_flow(flow, fmt)
    return strict_dumps(data, indent=2) + "\n", list(warnings)


def report_text(report: ImportReport | None) -> str:
    return report.to_text() if report is not None else ""


def ui_report_text(report: ImportReport | None) -> str:
    """The report in UI words: credentials are listed as accounts with a "Bind a key" button elsewhere
    in the dialog, so their command-line hints go; "--local" is the dialog's "Run offline" option."""
    kept: list[str] = []
    skipping = False
    for line in report_text(report).splitlines():
        if line == "Credentials:":
            skipping = True
            continue
        if skipping and line.startswith("  "):
            continue
        skipping = False
        kept.append(line.replace("(--local)", "(Run offline)"))
    return "\n".join(kept)
