"""Import and export through whatever converters this build has (plain Python, no NiceGUI).

The n8n and LangFlow converters live in :mod:`flowbuilder.formats`; they are looked up at call
time so the UI works (and says "unavailable") in a build that lacks one of them.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from flowbuilder.credentials import CredentialResolver
from flowbuilder.errors import FlowbuilderError, UnsupportedFormatError
from flowbuilder.flow import Flow
from flowbuilder.formats.limits import check_size, parse_untrusted_json
from flowbuilder.formats.native import detect_format, dump_flow, flow_from_data

EXPORT_FORMATS = ("flowbuilder", "n8n", "langflow")


class FormatUnavailableError(FlowbuilderError):
    """This build has no converter for the requested format."""


def _module(name: str) -> ModuleType | None:
    try:
        if importlib.util.find_spec(name) is None:
            return None
        return importlib.import_module(name)
    except ImportError:
        return None


def _first(module: ModuleType | None, names: tuple[str, ...]) -> Callable[..., Any] | None:
    if module is None:
        return None
    for name in names:
        func = getattr(module, name, None)
        if callable(func):
            return func
    return None


def parse_upload(content: bytes, filename: str) -> Any:
    check_size(filename, len(content))
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnsupportedFormatError(filename, "is not UTF-8 text; a flow file is JSON") from None
    return parse_untrusted_json(text, filename)


def import_data(
    data: Any, origin: str, resolver: CredentialResolver | None = None, local: bool = False
) -> tuple[Flow, Any]:
    """A Flow and the importer's report (None for a native file) from parsed JSON of any known format."""
    fmt = detect_format(data)
    if fmt == "flowbuilder":
        return flow_from_data(data, origin), None
    if fmt == "unknown":
        raise UnsupportedFormatError(origin, "is neither a Flowbuilder, n8n nor LangFlow flow file")
    convert = _module("flowbuilder.formats.convert")
    func = _first(convert, ("convert_data",))
    if func is not None:
        flow, report = func(data, fmt, origin, resolver=resolver, local=local)
        return flow, report
    func = _first(_module(f"flowbuilder.formats.{fmt}"), (f"import_{fmt}",))
    if func is None:
        raise FormatUnavailableError(f"{origin}: import unavailable: this build has no {fmt} importer.")
    flow, report = func(data, origin)
    return flow, report


def export_text(flow: Flow, fmt: str) -> tuple[str, list[str]]:
    """The flow as file text in ``fmt`` (``flowbuilder``, ``n8n`` or ``langflow``) and the converter's
    warnings about what that format cannot hold."""
    if fmt == "flowbuilder":
        return dump_flow(flow), []
    if fmt not in EXPORT_FORMATS:
        raise FormatUnavailableError(f"Unknown export format '{fmt}'; choose one of {', '.join(EXPORT_FORMATS)}.")
    func = _first(_module("flowbuilder.formats.convert"), ("export_flow",))
    if func is None:
        raise FormatUnavailableError(f"Export to {fmt} is unavailable in this build.")
    result = func(flow, fmt)
    data, warnings = result if isinstance(result, tuple) else (result, [])
    text = data if isinstance(data, str) else json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return text, [str(w) for w in warnings or []]


def report_text(report: Any) -> str:
    if report is None:
        return ""
    to_text = getattr(report, "to_text", None)
    return str(to_text()) if callable(to_text) else str(report)


def ui_report_text(report: Any) -> str:
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
