"""Detect an export's format, convert it in memory, and write only when everything succeeded.

An import or export that fails writes nothing: the whole result is built and checked in memory
first, then written atomically (a temporary file renamed over the target).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import networkx as nx

from flowbuilder.errors import FlowbuilderError, FlowFileError, UnsupportedFormatError
from flowbuilder.flow import Flow
from flowbuilder.formats.dify import DifyImporter, graph_of
from flowbuilder.formats.flowise import FlowiseImporter
from flowbuilder.formats.flowise_export import export_flowise
from flowbuilder.formats.langflow import LangflowImporter
from flowbuilder.formats.langflow_export import export_langflow
from flowbuilder.formats.limits import check_counts, parse_untrusted_json, strict_dumps
from flowbuilder.formats.local import apply_local
from flowbuilder.formats.mapping import check_bindings, scrub
from flowbuilder.formats.n8n import N8nImporter
from flowbuilder.formats.n8n_export import export_n8n
from flowbuilder.formats.native import (
    FOREIGN_NAMES,
    detect_format,
    dump_flow,
    load_flow,
    read_text_file,
    save_flow,
    write_text_atomic,
)
from flowbuilder.formats.repair import convert_implicitly, fill_unfed_variables
from flowbuilder.formats.report import ImportReport
from flowbuilder.formats.untrusted_yaml import parse_untrusted_yaml
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.scopes import ID_KEY, imported_flow_id
from flowbuilder.trust.secrets import secret_reason

IMPORT_FORMATS = ("n8n", "langflow", "flowise", "dify")
EXPORT_FORMATS = ("n8n", "langflow", "flowise")
YAML_SUFFIXES = (".yml", ".yaml")
Importer = N8nImporter | LangflowImporter | FlowiseImporter | DifyImporter
IMPORTERS: dict[str, type[Importer]] = {
    "n8n": N8nImporter,
    "langflow": LangflowImporter,
    "flowise": FlowiseImporter,
    "dify": DifyImporter,
}


def parse_flow_text(text: str, origin: object) -> Any:
    """JSON, or YAML (a Dify DSL) when the name says so or the text is no JSON object; both through the
    untrusted-input limits. Dify's export API wraps its DSL as ``{"data": "<yaml>"}``: the DSL is read."""
    name = str(origin).lower()
    if name.endswith(YAML_SUFFIXES) or not text.lstrip().startswith(("{", "[")):
        data = parse_untrusted_yaml(text, origin)
    else:
        data = parse_untrusted_json(text, origin)
    if isinstance(data, dict) and len(data) == 1 and isinstance(data.get("data"), str):
        inner = data["data"].lstrip()
        if inner.startswith(("app:", "kind:", "version:", "dependencies:", "workflow:", "rag_pipeline:")):
            return parse_untrusted_yaml(data["data"], origin)
    return data


def read_export(path: Path) -> tuple[dict[str, Any], str]:
    """Parse ``path`` and say which format it is; a clear error for anything else."""
    data = parse_flow_text(read_text_file(path), path)
    kind = detect_foreign(data, path)
    assert isinstance(data, dict)  # detect_foreign refuses anything else
    return unwrap(data, kind, path), kind


def unwrap(data: dict[str, Any], kind: str, origin: object) -> dict[str, Any]:
    """A saved Flowise chatflow record holds its graph as JSON text (``flowData``): the graph, parsed with
    the same limits (its name and description kept)."""
    if kind == "flowise" and isinstance(data.get("flowData"), str | dict):
        flow_data = data["flowData"]
        inner = parse_untrusted_json(flow_data, origin) if isinstance(flow_data, str) else flow_data
        if not isinstance(inner, dict):
            raise FlowFileError(origin, '"flowData" is not a Flowise graph ({"nodes", "edges"})')
        check_counts(origin, inner.get("nodes"), inner.get("edges"))
        return {"name": data.get("name"), "description": data.get("description"), **inner}
    return data


def detect_foreign(data: Any, origin: object) -> str:
    """The foreign format of parsed export data (``n8n``, ``langflow``, ``flowise``, ``dify``), after the node
    and connection limits; a clear error for anything else. Every reader (a file on the command line, an
    upload in the builder) passes here."""
    kind = detect_format(data)
    if kind == "n8n" and isinstance(data, dict):
        check_counts(origin, data.get("nodes"), data.get("connections"))
    elif kind == "langflow" and isinstance(data, dict) and isinstance(data.get("data"), dict):
        check_counts(origin, data["data"].get("nodes"), data["data"].get("edges"))
    elif kind == "flowise" and isinstance(data, dict):
        check_counts(origin, data.get("nodes"), data.get("edges"))
    elif kind == "dify" and isinstance(data, dict):
        check_counts(origin, graph_of(data).get("nodes"), graph_of(data).get("edges"))
    if kind == "flowbuilder":
        raise UnsupportedFormatError(origin, "is already a Flowbuilder flow; open it directly (nothing to import)")
    if kind not in IMPORT_FORMATS or not isinstance(data, dict):
        found = type(data).__name__ if not isinstance(data, dict) else "keys " + ", ".join(sorted(map(str, data))[:8])
        raise UnsupportedFormatError(
            origin,
            f"is not an n8n, LangFlow, Flowise or Dify export ({found}); expected n8n "
            '{"nodes", "connections"}, LangFlow {"data": {"nodes", "edges"}}, Flowise {"nodes", "edges"} '
            "or a Dify DSL (app: / kind: app)",
        )
    return kind


def convert_data(
    data: dict[str, Any], kind: str, origin: str, *, local: bool = False, resolver: CredentialResolver | None = None
) -> tuple[Flow, ImportReport]:
    """Convert parsed export data into a checked flow and its report (nothing is written)."""
    report = ImportReport(source_format=kind, source_file=origin)
    data = unwrap(data, kind, origin)
    importer = IMPORTERS[kind](data, origin, report)
    try:
        flow = importer.run()
    except FlowbuilderError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        # A structure no real export has (a list where an object belongs...): one line, no traceback.
        raise FlowFileError(origin, f"malformed {FOREIGN_NAMES[kind]} export ({type(exc).__name__}: {exc})") from None
    if local:
        apply_local(flow, report)
    convert_implicitly(flow, report)
    fill_unfed_variables(flow, report)
    try:
        flow = Flow.model_validate(flow.model_dump())
    except ValueError as exc:
        raise FlowFileError(origin, f"could not be converted into a valid flow: {exc}") from None
    text = dump_flow(flow)
    report_text = json.dumps(report.to_dict()) + report.to_text()
    for secret in importer.secrets:
        if secret in text or secret in report_text:  # a guard: never write or print a found secret
            where = ", ".join(_places(flow.model_dump(mode="json"), secret)[:3]) or "the import report"
            reason = secret_reason("", secret) or "found under a secret-named field"
            raise FlowFileError(
                origin,
                f"a value recognised as a plaintext secret ({reason}) would have been carried into {where}; "
                "import refused. Remove the secret from the export, or bind it as a credential",
            )
    check_bindings(flow, report, resolver)
    flow.meta[ID_KEY] = imported_flow_id(data)  # a new flow (flowbuilder.trust.scopes): it claims no other flow's state
    return flow, report


def _places(value: Any, secret: str, path: str = "") -> list[str]:
    """Where ``secret`` appears in a dumped flow, e.g. ``nodes[load].config.path`` (never the value itself)."""
    if isinstance(value, str):
        return [path or "(flow)"] if secret in value else []
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _places(item, secret, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        found = []
        for index, item in enumerate(value):
            label = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else index
            found += _places(item, secret, f"{path}[{label}]")
        return found
    return []


def import_file(
    path: str | os.PathLike[str], *, local: bool = False, resolver: CredentialResolver | None = None
) -> tuple[Flow, ImportReport]:
    """Read and convert an n8n, LangFlow, Flowise or Dify export (nothing is written)."""
    file = Path(path)
    data, kind = read_export(file)
    return convert_data(data, kind, str(file), local=local, resolver=resolver)


def default_import_path(source: Path) -> Path:
    """``<stem>.flowbuilder.json`` in the current directory."""
    return Path.cwd() / f"{source.stem}.flowbuilder.json"


def write_flow(flow: Flow, path: Path) -> None:
    save_flow(flow, path)


class LossyExportError(FlowbuilderError):
    """An export would leave nodes or connections out (allowed only with ``lossy``)."""


def export_flow(flow: Flow, to: str, *, lossy: bool = True) -> tuple[dict[str, Any], list[str]]:
    """The export JSON of ``flow`` in format ``to`` and warnings about what that format cannot hold.

    The flow is checked first (no duplicate ids, no connection to a missing node, no cycle), so the
    exporters only ever walk a well-formed graph, and secrets are scrubbed from its configs. With
    ``lossy=False`` an export that leaves a node or a connection out is refused, listing them."""
    exporters = {"n8n": export_n8n, "langflow": export_langflow, "flowise": export_flowise}
    if to not in exporters:
        choices = ", ".join(EXPORT_FORMATS)
        raise UnsupportedFormatError("--to", f"unknown export format {to!r}; choose one of: {choices}")
    problems = structure_problems(flow)
    if problems:
        raise FlowFileError(flow.name or "<flow>", "cannot be exported: " + "; ".join(problems[:5]))
    clean = flow.model_copy(deep=True)
    for node in clean.nodes:
        node.config = scrub(node.config, set())
    try:
        data, warnings = exporters[to](clean)
    except FlowbuilderError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        # Data no Flowbuilder build writes (hand-edited meta, a mangled kept original): one line, no traceback.
        raise FlowFileError(flow.name or "<flow>", f"cannot be exported to {to}: malformed data ({exc!r})") from None
    lost = [w for w in warnings if "left out" in w]
    if lost and not lossy:
        shown = "; ".join(lost[:12]) + (f"; and {len(lost) - 12} more" if len(lost) > 12 else "")
        raise LossyExportError(
            f"export of {flow.name!r} to {to} would lose {len(lost)} node(s)/connection(s): {shown}. "
            "Pass --lossy to write it anyway."
        )
    return data, warnings


def structure_problems(flow: Flow) -> list[str]:
    """What makes ``flow`` unsafe to walk: duplicate ids, connections to missing nodes, cycles."""
    ids = [node.id for node in flow.nodes]
    problems = [f"node id '{i}' is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    known = set(ids)
    graph = nx.DiGraph()
    for edge in flow.edges:
        missing = [end for end in (edge.source, edge.target) if end not in known]
        if missing:
            problems.append(f"connection {edge.source} -> {edge.target} names a missing node '{missing[0]}'")
        else:
            graph.add_edge(edge.source, edge.target)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return problems
    path = " -> ".join([str(a) for a, _ in cycle] + [str(cycle[0][0])])
    return [*problems, f"it has a cycle ({path}); remove one of those connections"]


def export_file(flow_path: str | os.PathLike[str], to: str, *, lossy: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The CLI's export: refuses to drop part of the flow unless ``lossy``."""
    return export_flow(load_flow(flow_path), to, lossy=lossy)


def write_json_atomic(data: Any, path: Path) -> None:
    """Write JSON so that a failure leaves any existing file untouched."""
    text = strict_dumps(data, indent=2) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(text, path)
