"""LangFlow 1.x (and, where feasible, pre-1.0) flow JSON <-> Flowbuilder flows.

Nodes are mapped by ``data.type`` and their template fields' ``value``s; the embedded Python ``code``
is opaque (never executed, never imported, ``metadata.module`` is never looked up). Edges are read
from ``edge.data``; when that is missing the ``œ``-encoded handles are decoded, and pre-1.0
pipe-delimited handles are split. Secret fields that name a LangFlow global variable
(``load_from_db``) become credential references; a plaintext secret is reported by location only
and never carried.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from flowbuilder.credentials import CredentialRef
from flowbuilder.errors import FlowFileError
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position, Viewport
from flowbuilder.formats.adapters import (
    NO_DEFAULT,
    Adapter,
    credential_slot,
    our_defaults,
    read_params,
    to_float,
)
from flowbuilder.formats.langflow_table import DATA_IN, LANGFLOW_TABLE, MESSAGE, REPLACEMENTS, VECTOR_STORES
from flowbuilder.formats.mapping import PLACEHOLDER, IdAllocator, find_key_shaped, remember_secret, scrub
from flowbuilder.formats.report import CredentialFound, ImportReport

# Fields that only steer LangFlow's UI or server and mean nothing to a Flowbuilder run.
_SILENT_FIELDS = {
    "code",
    "_type",
    "_frontend_node_flow_id",
    "_frontend_node_folder_id",
    "sender",
    "sender_name",
    "should_store_message",
    "session_id",
    "files",
    "background_color",
    "chat_icon",
    "text_color",
    "tool_placeholder",
    "use_double_brackets",
    "clean_data",
    "data_template",
    "context_id",
    "storage_location",
    "delete_server_file_after_processing",
    "ignore_unspecified_files",
    "ignore_unsupported_extensions",
    "silent_errors",
    "use_multithreading",
    "concurrency_multithreading",
    "should_cache_vector_store",
    "show_progress_bar",
    "text_key",
    "clean_output",
    "separator_file",
    "file_path",
}
# Input fields that carry documents towards a store: a dropped edge into one stops ingestion.
_INGEST_FIELDS = {"ingest_data", "data_inputs", "data_input", "documents", "input_data", "data"}
# Providers of secret fields on components without a mapping (mapped ones use their node's slot).
_PROVIDER_BY_TYPE = {"AstraDB": "astra", "CohereEmbeddings": "cohere", "CohereModel": "cohere"}


def decode_handle(handle: Any) -> dict[str, Any] | None:
    """A handle object from ``edge.data`` or an ``œ``-encoded string (either spacing); None if neither."""
    if isinstance(handle, dict):
        return handle
    if isinstance(handle, str) and handle.startswith("{"):
        try:
            value = json.loads(handle.replace("œ", '"'))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def encode_handle(handle: dict[str, Any]) -> str:
    """The compact, key-sorted ``œ`` form LangFlow's UI writes."""
    return json.dumps(handle, sort_keys=True, separators=(",", ":"), ensure_ascii=False).replace('"', "œ")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass
class _Link:
    source: str
    output: str
    target: str
    field: str


@dataclass
class _Mapping:
    """A LangFlow node as a Flowbuilder node, with its handle names translated to our ports."""

    type_name: str
    config: dict[str, Any]
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    any_input: bool = False
    """Every input field is a port of the same name (prompt variables)."""


class LangflowImporter:
    def __init__(self, data: dict[str, Any], origin: str, report: ImportReport) -> None:
        self.data = data
        self.origin = origin
        self.report = report
        self.secrets: set[str] = set()
        self.ids = IdAllocator()
        self.graph: dict[str, Any] = _obj(data.get("data")) or data
        self.flow = Flow(
            name=str(data.get("name") or "Imported LangFlow flow"), description=str(data.get("description") or "")
        )
        self.node_ids: dict[str, str] = {}
        self.types: dict[str, str] = {}
        self.mappings: dict[str, _Mapping] = {}
        self.labels: dict[str, str] = {}

    def run(self) -> Flow:
        nodes, edges = self.graph.get("nodes"), self.graph.get("edges")
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise FlowFileError(self.origin, 'LangFlow flow needs "data": {"nodes": [...], "edges": [...]}')
        for index, node in enumerate(nodes):
            problem = _node_problem(node)
            if problem:
                raise FlowFileError(self.origin, f"LangFlow node #{index + 1}: {problem}")
            self.types[node["id"]] = node["data"]["type"]
        links = [link for link in (self._link(e, i) for i, e in enumerate(edges)) if link is not None]
        for node in nodes:
            self._import_node(node, links)
        for link in links:
            self._connect(link)
        viewport = self.graph.get("viewport")
        if isinstance(viewport, dict):
            self.flow.layout.viewport = Viewport(
                x=to_float(viewport.get("x")) or 0.0,
                y=to_float(viewport.get("y")) or 0.0,
                zoom=to_float(viewport.get("zoom")) or 1.0,
            )
        self.flow.meta["source"] = {
            "format": "langflow",
            "id": self.data.get("id"),
            "name": self.data.get("name"),
            # LangFlow ids may hold spaces ("Prompt Template-8zRJb"); kept so an export gives them back.
            "node_ids": {ours: theirs for theirs, ours in self.node_ids.items()},
        }
        version = self.data.get("last_tested_version")
        if version:
            self.flow.meta["source"]["langflow_version"] = version
        self.report.flow_name = self.flow.name
        return self.flow

    # -- edges ----------------------------------------------------------------------------------
    def _link(self, edge: Any, index: int) -> _Link | None:
        if not isinstance(edge, dict):
            raise FlowFileError(self.origin, f"LangFlow edge #{index + 1} is not an object")
        data = _obj(edge.get("data"))
        source_handle = decode_handle(data.get("sourceHandle")) or decode_handle(edge.get("sourceHandle"))
        target_handle = decode_handle(data.get("targetHandle")) or decode_handle(edge.get("targetHandle"))
        source, target = edge.get("source"), edge.get("target")
        output = field_name = None
        if source_handle is not None:
            output = source_handle.get("name")
            source = source or source_handle.get("id")
        elif isinstance(edge.get("sourceHandle"), str) and "|" in edge["sourceHandle"]:
            parts = edge["sourceHandle"].split("|")  # pre-1.0: "Type|node-id|base classes..."
            output, source = parts[0], source or parts[1]
        if target_handle is not None:
            field_name = target_handle.get("fieldName")
            target = target or target_handle.get("id")
        elif isinstance(edge.get("targetHandle"), str) and "|" in edge["targetHandle"]:
            parts = edge["targetHandle"].split("|")  # pre-1.0: "Type|field|node-id"
            field_name, target = parts[1], target or parts[-1]
        if not (isinstance(source, str) and isinstance(target, str) and output and field_name):
            self.report.connections_dropped.append(f"edge #{index + 1} ({edge.get('id', '?')}): unreadable handles")
            return None
        for end in (source, target):
            if end not in self.types:
                self.report.connections_dropped.append(f"edge #{index + 1}: no node with id {end!r}")
                return None
        return _Link(source, str(output), target, str(field_name))

    def _connect(self, link: _Link) -> None:
        source_id, target_id = self.node_ids.get(link.source), self.node_ids.get(link.target)
        if source_id is None or target_id is None:
            self.report.connections_dropped.append(
                f"{link.source}.{link.output} -> {link.target}.{link.field}: a note cannot be connected"
            )
            return
        source = self.mappings[link.source]
        out_port = source.outputs.get(link.output)
        if out_port is None and link.output == self.types.get(link.source):
            # Pre-1.0 handles name the component type, not the output: a single-output node is unambiguous.
            ports = set(source.outputs.values())
            out_port = ports.pop() if len(ports) == 1 else None
        mapping = self.mappings[link.target]
        in_port = link.field if mapping.any_input else mapping.inputs.get(link.field)
        if out_port is None or in_port is None:
            missing = f"output {link.output!r}" if out_port is None else f"input {link.field!r}"
            cut = " (ingestion is cut off here)" if link.field in _INGEST_FIELDS else ""
            self.report.connections_dropped.append(
                f"{link.source}.{link.output} -> {link.target}.{link.field}: {missing} has no Flowbuilder port{cut}"
            )
            return
        edge = Edge(source=source_id, source_port=out_port, target=target_id, target_port=in_port)
        if all(e.key != edge.key for e in self.flow.edges):
            self.flow.edges.append(edge)

    # -- nodes ----------------------------------------------------------------------------------
    def _import_node(self, node: dict[str, Any], links: list[_Link]) -> None:
        lf_type = node["data"]["type"]
        info = node["data"].get("node") or {}
        position = _obj(node.get("position"))
        pos = Position(x=to_float(position.get("x")) or 0.0, y=to_float(position.get("y")) or 0.0)
        label = str(info.get("display_name") or lf_type)
        outcome = self.report.node(node["id"], lf_type)
        if node.get("type") == "noteNode" or lf_type == "note":
            note_id = self.ids.take(_safe_id(node["id"]))
            measured = _obj(node.get("measured"))
            style = _obj(node.get("style"))
            width = node.get("width") or measured.get("width") or style.get("width")
            height = node.get("height") or measured.get("height") or style.get("height")
            color = (
                (info.get("template") or {}).get("backgroundColor") if isinstance(info.get("template"), dict) else None
            )
            self.flow.notes.append(
                Note(
                    id=note_id,
                    text=str(info.get("description") or ""),
                    width=to_float(width),
                    height=to_float(height),
                    color=str(color) if color else None,
                )
            )
            self.flow.layout.positions[note_id] = pos
            self.report.notes += 1
            outcome.note = f"note '{note_id}'"
            return
        template = _obj(info.get("template"))
        refs = self._secrets(node["id"], lf_type, template)
        incoming = [link for link in links if link.target == node["id"]]
        outgoing = [link for link in links if link.source == node["id"]]
        mapping = self._map(node["id"], lf_type, template, incoming, outgoing)
        spec_id = self.ids.take(_safe_id(node["id"]))
        if mapping is None:
            original = scrub(copy.deepcopy(node), self.secrets)
            mapping = _Mapping(
                PLACEHOLDER,
                {
                    "source_format": "langflow",
                    "original_type": lf_type,
                    "original": original,
                    "input_names": sorted({link.field for link in incoming}),
                    "output_names": sorted({link.output for link in outgoing}),
                },
                any_input=True,
            )
            mapping.outputs = {name: name for name in mapping.config["output_names"]}
            outcome.note = f"replace with {REPLACEMENTS[lf_type]}" if lf_type in REPLACEMENTS else "no equivalent"
            for slot_field, ref in refs.items():
                self.report.credentials.append(CredentialFound(node["id"], slot_field, ref.provider, ref.name, None))
        else:
            self._report_unused(node["id"], template, mapping)
        spec = NodeSpec(id=spec_id, type=mapping.type_name, name=label, config=mapping.config)
        spec.disabled = bool(node["data"].get("disabled", False))
        slot = credential_slot(spec.type)
        if slot is not None and mapping.type_name != PLACEHOLDER:
            found = next(iter(refs.values()), None)
            if found is not None:
                spec.credentials[slot.name] = CredentialRef(provider=slot.provider, name=found.name)
            shown = spec.credentials.get(slot.name)
            self.report.credentials.append(
                CredentialFound(spec.id, slot.name, slot.provider, shown.name if shown else "default", bound=False)
            )
        self.flow.nodes.append(spec)
        self.flow.layout.positions[spec.id] = pos
        self.node_ids[node["id"]] = spec.id
        self.mappings[node["id"]] = mapping
        self.labels[node["id"]] = label
        outcome.targets.append((spec.id, spec.type))

    def _secrets(self, node_id: str, lf_type: str, template: dict[str, Any]) -> dict[str, CredentialRef]:
        """Credential references from secret fields; plaintext secrets are remembered and reported."""
        refs: dict[str, CredentialRef] = {}
        for name, spec in template.items():
            if not isinstance(spec, dict) or name == "code":
                continue
            value = spec.get("value")
            if spec.get("password") and isinstance(value, str) and value.strip():
                if spec.get("load_from_db"):
                    adapter = LANGFLOW_TABLE.importer(lf_type)
                    slot = credential_slot(adapter.ours) if adapter else None
                    provider = (
                        slot.provider if slot else _PROVIDER_BY_TYPE.get(lf_type) or _provider_from_variable(value)
                    )
                    refs[name] = CredentialRef(provider=provider, name=value)
                else:
                    remember_secret(self.secrets, value)
                    self.report.secret(node_id, name)
                continue
            for path, found in find_key_shaped(value, name):
                remember_secret(self.secrets, found)
                self.report.secret(node_id, path)
        return refs

    def _report_unused(self, node_id: str, template: dict[str, Any], mapping: _Mapping) -> None:
        for name, spec in template.items():
            if name in mapping.used or name in _SILENT_FIELDS or not isinstance(spec, dict):
                continue
            if spec.get("password") or name in mapping.inputs:
                continue
            value = spec.get("value")
            if value in (None, "", [], {}, False, 0, "False", "0", "0.0") or spec.get("show") is False:
                continue
            if isinstance(value, str) and value in self.secrets:
                continue
            shown = (
                value
                if isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) <= 40)
                else "..."
            )
            self.report.drop(node_id, name, f"{shown!r} not carried")

    def value(self, template: dict[str, Any], name: str, used: set[str]) -> Any:
        used.add(name)
        spec = template.get(name)
        return spec.get("value") if isinstance(spec, dict) else None

    # -- the table walk and its structural hooks -------------------------------------------------
    def _map(
        self, node_id: str, lf_type: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]
    ) -> _Mapping | None:
        if lf_type == "FlowbuilderNode":
            return self._flowbuilder(node_id, t, inc, out)
        adapter = LANGFLOW_TABLE.importer(lf_type)
        if adapter is None:
            return None
        used = {*adapter.ignore, *adapter.inputs.values(), *adapter.in_aliases}
        if adapter.extra.get("secret"):
            used.add(adapter.extra["secret"])
        if adapter.hook:
            mapping: _Mapping = getattr(self, f"_hook_{adapter.hook}")(node_id, t, inc, out, adapter, used)
        else:
            mapping = self._generic(adapter, t, used)
        mapping.used |= used
        return mapping

    def _config(self, adapter: Adapter, t: dict[str, Any], used: set[str]) -> dict[str, Any]:
        def lookup(name: str) -> tuple[str, Any]:
            spec = t.get(name)
            value = spec.get("value") if isinstance(spec, dict) else None
            return ("absent", None) if value is None or value == "" else ("set", value)

        config, reads = read_params(adapter, lookup)
        used.update(read.param.theirs for read in reads)
        return config

    @staticmethod
    def _ports(adapter: Adapter) -> tuple[dict[str, str], dict[str, str]]:
        ins = {theirs: ours for ours, theirs in adapter.inputs.items()} | dict(adapter.in_aliases)
        outs = {theirs: ours for ours, theirs in adapter.outputs.items()} | dict(adapter.out_aliases)
        return ins, outs

    def _generic(self, adapter: Adapter, t: dict[str, Any], used: set[str]) -> _Mapping:
        return _Mapping(adapter.ours, self._config(adapter, t, used), *self._ports(adapter))

    def _hook_file(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        outputs = {link.output for link in out}
        tabular = outputs & {"dataframe", "json", "table", "data_list"}
        mode = "records" if tabular else ("whole" if outputs else "auto")
        if tabular and outputs - tabular - {"path"}:
            self.report.warnings.append(
                f"{node_id}: outputs {sorted(outputs)} used at once; the loader gives records for all of them"
            )
        path_field = _obj(t.get("path"))
        stored = path_field.get("file_path") or path_field.get("value") or ""
        files = stored if isinstance(stored, list) else [stored] if stored else []
        path = ""
        if files:
            path = _basename(str(files[0]))
            self.report.warnings.append(
                f"{node_id}: uploaded file {str(files[0])!r} is a LangFlow server reference; path set to {path!r} "
                "(put the file next to the flow or set the loader's path)"
            )
            for extra in files[1:]:
                self.report.drop(
                    node_id, "path", f"extra file {_basename(str(extra))!r} not carried (one file per loader)"
                )
        config: dict[str, Any] = {"path": path}
        if mode != "auto":
            config["mode"] = mode
        ins, outs = self._ports(adapter)
        return _Mapping("loader.file", config, ins, outs)

    def _hook_parser(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        mode = str((_obj(t.get("mode"))).get("value") or "Parser")
        used.update({"mode", "template"})
        config = self._config(adapter, t, used)
        pattern = config.pop("template", None) or _obj(t.get("template")).get("value")
        from_store = any(self.types.get(link.source) in VECTOR_STORES for link in inc)
        if mode == "Parser" and pattern and not from_store:
            # A pattern over table rows: one labelled text per row, joined as LangFlow's Parser does.
            return _Mapping("labeller.row", {"template": str(pattern), "join": True, **config}, *self._ports(adapter))
        stringify = LANGFLOW_TABLE.exporter("parser.stringify")
        assert stringify is not None
        template = str(pattern) if mode == "Parser" and pattern else "{text}"
        ins, outs = self._ports(stringify)
        return _Mapping("parser.stringify", {"template": template, **config}, ins, outs)

    def _hook_prompt(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        config = self._config(adapter, t, used)
        template = str(config.get("template", ""))
        used.update(link.field for link in inc)
        used.update(re.findall(r"\{([^{}]+)\}", template))
        return _Mapping("prompt.template", {"template": template}, {}, self._ports(adapter)[1], any_input=True)

    def _flowbuilder(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping | None:
        """A node our exporter wrote for a type LangFlow lacks: its type and config ride in metadata."""
        node = next(n for n in self.graph["nodes"] if isinstance(n, dict) and n.get("id") == node_id)
        meta = ((node["data"].get("node") or {}).get("metadata") or {}).get("flowbuilder")
        if not isinstance(meta, dict) or not isinstance(meta.get("type"), str):
            return None
        ports = {link.field: link.field for link in inc}
        outs = {link.output: link.output for link in out}
        return _Mapping(meta["type"], dict(meta.get("config") or {}), ports, outs, set(t))


def _node_problem(node: Any) -> str | None:
    if not isinstance(node, dict):
        return "is not an object"
    if not isinstance(node.get("id"), str) or not node["id"]:
        return 'has no "id" string'
    data = node.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        return f'{node["id"]!r} has no "data.type"; every node needs "id" and "data": {{"type", "node"}}'
    if data.get("node") is not None and not isinstance(data.get("node"), dict):
        return f'{node["id"]!r}: "data.node" is not an object'
    return None


def _safe_id(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", node_id).strip("-") or "node"


def _basename(path: str) -> str:
    return PureWindowsPath(path).name if "\\" in path else PurePosixPath(path).name


def _provider_from_variable(name: str) -> str:
    for provider in ("openai", "groq", "pinecone", "mistral", "cohere", "ollama", "astra"):
        if provider in name.lower():
            return provider
    return name.lower().removesuffix("_api_key") or "unknown"


def short_hash(text: str, length: int = 5) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:length]


# ==== export ========================================================================================

_MESSAGE = list(MESSAGE)


@dataclass
class _LfShape:
    """How a Flowbuilder type looks in LangFlow: component type, fields, outputs, port translation."""

    lf_type: str
    display_name: str
    description: str
    fields: dict[str, dict[str, Any]]
    outputs: list[dict[str, Any]]
    in_ports: dict[str, str]
    out_ports: dict[str, str]


def _field(name: str, value: Any, input_type: str = "StrInput", kind: str = "str", **extra: Any) -> dict[str, Any]:
    return {
        "_input_type": input_type,
        "advanced": False,
        "display_name": name.replace("_", " ").title(),
        "dynamic": False,
        "info": "",
        "list": False,
        "name": name,
        "placeholder": "",
        "required": False,
        "show": True,
        "title_case": False,
        "trace_as_metadata": True,
        "type": kind,
        "value": value,
        **extra,
    }


def _handle(name: str, input_types: list[str], required: bool = False) -> dict[str, Any]:
    return _field(name, "", "HandleInput", "other", input_types=input_types, required=required)


def _secret_field(name: str, ref_name: str) -> dict[str, Any]:
    # Only the name of a LangFlow global variable, never a value.
    return _field(name, ref_name, "SecretStrInput", "str", password=True, load_from_db=bool(ref_name))


def _out(name: str, display: str, types: list[str], method: str, selected: bool = True) -> dict[str, Any]:
    return {
        "allows_loop": False,
        "cache": True,
        "display_name": display,
        "group_outputs": False,
        "method": method,
        "name": name,
        "selected": types[0] if selected else None,
        "tool_mode": True,
        "types": types,
        "value": "__UNDEFINED__",
    }


def _shape(spec: NodeSpec, warnings: list[str]) -> _LfShape | None:
    """How ``spec`` looks as a LangFlow component, from its table entry (hooks: file, parser, prompt)."""
    adapter = LANGFLOW_TABLE.exporter(spec.type)
    if adapter is None:
        return None
    t = spec.type
    defaults = our_defaults(t)
    c = {**defaults, **spec.config}  # hooks read our defaults from the node's Config, never a copy
    if adapter.note:
        warnings.append(f"{spec.id}: {adapter.note}")
    if t == "loader.file":
        path = str(c.get("path", ""))
        mode = c.get("mode", "auto")
        tabular = mode == "records" or (
            mode == "auto" and path.lower().endswith((".csv", ".json", ".xlsx", ".parquet"))
        )
        fields: dict[str, dict[str, Any]] = {
            "path": _field("path", "", "FileInput", "file", file_path=[path] if path else [], list=True)
        }
        outputs = [
            _out("dataframe", "Structured Content", ["Table"], "load_files_structured", tabular),
            _out("message", "Raw Content", _MESSAGE, "load_files_message", not tabular),
        ]
        port = "dataframe" if tabular else "message"
        if c.get("path"):
            warnings.append(f"{spec.id}: LangFlow stores uploads on its server; upload {path!r} again in the File node")
        return _LfShape("File", "Read File", "Loads a file.", fields, outputs, {}, {"records": port})
    if t in ("labeller.row", "parser.stringify"):
        template = str(c.get("template", "" if t == "labeller.row" else "{text}"))
        stringify = t == "parser.stringify" and template == "{text}"
        if t == "labeller.row" and not c.get("join", False):
            warnings.append(f"{spec.id}: LangFlow's Parser always joins rows; one record per row is not kept")
        if t == "labeller.row" and not template:
            warnings.append(f"{spec.id}: an empty template (label every column) has no LangFlow form; use a pattern")
        fields = {
            "input_data": _handle("input_data", ["DataFrame", "Table", "Data", "JSON"], True),
            "mode": _field(
                "mode", "Stringify" if stringify else "Parser", "TabInput", "tab", options=["Parser", "Stringify"]
            ),
            "pattern": _field("pattern", template, "MultilineInput", input_types=_MESSAGE, show=not stringify),
            "sep": _field("sep", c.get("separator", "\n"), "MessageTextInput", input_types=_MESSAGE),
        }
        outputs = [_out("parsed_text", "Parsed Text", _MESSAGE, "parse_combined_text")]
        in_port = "records" if t == "labeller.row" else "items"
        out_port = "records" if t == "labeller.row" else "text"
        return _LfShape(
            "ParserComponent",
            "Parser",
            "Format data as text.",
            fields,
            outputs,
            {in_port: "input_data"},
            {out_port: "parsed_text"},
        )
    if t == "prompt.template":
        template = str(c.get("template", ""))
        variables = list(dict.fromkeys(re.findall(r"\{([A-Za-z_][A-Za-z0-9_ ]*)\}", template)))
        fields = {"template": _field("template", template, "PromptInput", "prompt")}
        for var in variables:
            fields[var] = _field(var, "", "", "str", input_types=_MESSAGE, multiline=True, field_type="str")
            fields[var].pop("_input_type")
        outputs = [_out("prompt", "Prompt", _MESSAGE, "build_prompt")]
        shape = _LfShape(
            "Prompt Template",
            "Prompt Template",
            "Create a prompt template with dynamic variables.",
            fields,
            outputs,
            {v: v for v in variables},
            {"prompt": "prompt"},
        )
        return shape
    handles = adapter.extra.get("handles", {})
    fields = {name: _handle(name, list(handles.get(name, DATA_IN))) for name in adapter.inputs.values()}
    for param in adapter.params:
        if not param.export:
            continue
        value = param.theirs_value(c.get(param.ours))
        # Only what the flow sets, the model LangFlow needs, and defaults LangFlow spells differently:
        # a round trip must not pin our defaults into the config.
        differs = param.default is not NO_DEFAULT and value != param.default
        if param.ours not in spec.config and param.ours != "model" and not differs:
            continue
        if value is None:
            value = param.default if param.default is not NO_DEFAULT else ""
        extra = {"input_types": list(handles[param.theirs])} if param.theirs in handles else {}
        fields[param.theirs] = _field(param.theirs, value, param.widget, param.kind, **extra)
    for name, value in adapter.fixed.items():
        fields[name] = _field(name, value)
    secret = adapter.extra.get("secret")
    if secret:
        fields[secret] = _secret_field(secret, _ref_name(spec))
    outputs = [
        _out(o["name"], o["display"], list(o["types"]), o["method"], o["selected"]) for o in adapter.extra["outputs"]
    ]
    description = f"{adapter.display}."
    return _LfShape(
        adapter.theirs, adapter.display, description, fields, outputs, dict(adapter.inputs), dict(adapter.outputs)
    )


def _ref_name(spec: NodeSpec) -> str:
    slot = credential_slot(spec.type)
    ref = spec.credentials.get(slot.name) if slot else None
    return ref.name if ref and ref.name != "default" else ""


class LangflowExporter:
    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.warnings: list[str] = []
        self.lf_ids: dict[str, str] = {}
        self.shapes: dict[str, _LfShape | None] = {}
        self.originals: dict[str, dict[str, Any]] = {}

    def _lf_id(self, spec: NodeSpec, lf_type: str) -> str:
        known = (self.flow.meta.get("source") or {}).get("node_ids") or {}
        if isinstance(known.get(spec.id), str) and known[spec.id] not in self.lf_ids.values():
            return str(known[spec.id])
        if spec.id.rsplit("-", 1)[0] == lf_type and spec.id not in self.lf_ids.values():
            return spec.id
        suffix = spec.id.rsplit("-", 1)[-1]
        if not (len(suffix) == 5 and suffix.isalnum() and spec.id != suffix):
            suffix = short_hash(f"{self.flow.name}/{spec.id}")
        candidate = f"{lf_type}-{suffix}"
        while candidate in self.lf_ids.values():
            suffix = short_hash(candidate)
            candidate = f"{lf_type}-{suffix}"
        return candidate

    def run(self) -> dict[str, Any]:
        nodes = [self._node(spec) for spec in self.flow.nodes]
        nodes += [self._note(note) for note in self.flow.notes]
        edges = [edge for edge in (self._edge(e) for e in self.flow.edges) if edge is not None]
        viewport = self.flow.layout.viewport
        return {
            "data": {
                "nodes": nodes,
                "edges": edges,
                "viewport": {"x": viewport.x, "y": viewport.y, "zoom": viewport.zoom},
            },
            "description": self.flow.description,
            "endpoint_name": None,
            "id": str(self.flow.meta.get("source", {}).get("id") or "") or None,
            "is_component": False,
            "name": self.flow.name,
            "tags": [],
        }

    def _note(self, note: Note) -> dict[str, Any]:
        pos = self.flow.position(note.id)
        node: dict[str, Any] = {
            "data": {
                "id": note.id,
                "node": {"description": note.text, "display_name": "", "documentation": "", "template": {}},
                "type": "note",
            },
            "id": note.id,
            "position": {"x": pos.x, "y": pos.y},
            "type": "noteNode",
        }
        if note.color:
            node["data"]["node"]["template"] = {"backgroundColor": note.color}
        if note.width is not None and note.height is not None:
            node.update(width=note.width, height=note.height, measured={"width": note.width, "height": note.height})
        return node

    def _node(self, spec: NodeSpec) -> dict[str, Any]:
        pos = self.flow.position(spec.id)
        if spec.type == PLACEHOLDER and spec.config.get("source_format") == "langflow" and spec.config.get("original"):
            node = copy.deepcopy(spec.config["original"])
            node["position"] = {"x": pos.x, "y": pos.y}
            self.lf_ids[spec.id] = node["id"]
            self.originals[spec.id] = node
            self.shapes[spec.id] = None
            return dict(node)
        shape = _shape(spec, self.warnings)
        self.shapes[spec.id] = shape
        if shape is None:
            # No LangFlow component: keep the node so nothing is lost, with our type and config in metadata.
            self.warnings.append(
                f"{spec.id}: no LangFlow component for {spec.type}; "
                "exported as a FlowbuilderNode that LangFlow cannot run"
            )
            in_names = sorted({e.target_port for e in self.flow.edges if e.target == spec.id})
            out_names = sorted({e.source_port for e in self.flow.edges if e.source == spec.id})
            shape = _LfShape(
                "FlowbuilderNode", spec.name or spec.type, f"Flowbuilder {spec.type}",
                {n: _handle(n, ["Data", "Message"]) for n in in_names},
                [_out(n, n, ["Data"], "run") for n in out_names],
                {n: n for n in in_names}, {n: n for n in out_names},
            )  # fmt: skip
            self.shapes[spec.id] = shape
        lf_id = self._lf_id(spec, shape.lf_type)
        self.lf_ids[spec.id] = lf_id
        template: dict[str, Any] = {"_type": "Component", **shape.fields}
        metadata: dict[str, Any] = {}
        if shape.lf_type == "FlowbuilderNode":
            config = spec.config
            if spec.type == PLACEHOLDER:
                config = {k: v for k, v in config.items() if k != "original"}
            metadata["flowbuilder"] = {"type": spec.type, "config": config}
        base_classes = sorted({ty for out in shape.outputs for ty in out["types"]})
        node_info: dict[str, Any] = {
            "base_classes": base_classes,
            "beta": False,
            "conditional_paths": [],
            "custom_fields": {"template": list(shape.in_ports.values())} if shape.lf_type == "Prompt Template" else {},
            "description": shape.description,
            "display_name": spec.name or shape.display_name,
            "documentation": "",
            "edited": False,
            "field_order": [k for k in shape.fields],
            "frozen": False,
            "icon": "",
            "legacy": False,
            "metadata": metadata,
            "minimized": False,
            "output_types": [],
            "outputs": shape.outputs,
            "pinned": False,
            "template": template,
            "tool_mode": False,
        }
        return {
            "data": {
                "id": lf_id,
                "node": node_info,
                "showNode": True,
                "type": shape.lf_type,
                **({"disabled": True} if spec.disabled else {}),
            },
            "dragging": False,
            "id": lf_id,
            "measured": {"height": 300, "width": 320},
            "position": {"x": pos.x, "y": pos.y},
            "selected": False,
            "type": "genericNode",
        }

    def _edge(self, edge: Edge) -> dict[str, Any] | None:
        source, target = self.flow.find_node(edge.source), self.flow.find_node(edge.target)
        if source is None or target is None:
            return None
        src_shape, tgt_shape = self.shapes.get(source.id), self.shapes.get(target.id)
        if src_shape is not None:
            output = src_shape.out_ports.get(edge.source_port)
            types = next((o["types"] for o in src_shape.outputs if o["name"] == output), ["Data"])
            lf_type = src_shape.lf_type
        else:
            output, types, lf_type = (
                edge.source_port,
                _original_output_types(self.originals.get(source.id), edge.source_port),
                source.config.get("original_type", ""),
            )
        if tgt_shape is not None:
            field_name = tgt_shape.in_ports.get(edge.target_port)
            spec_field = tgt_shape.fields.get(field_name or "", {})
        else:
            field_name = edge.target_port
            original = self.originals.get(target.id) or {}
            spec_field = ((original.get("data") or {}).get("node") or {}).get("template", {}).get(field_name, {})
        if output is None or field_name is None:
            self.warnings.append(f"connection {edge.key}: no LangFlow handle for it; left out")
            return None
        source_id, target_id = self.lf_ids[source.id], self.lf_ids[target.id]
        source_handle = {"dataType": lf_type, "id": source_id, "name": output, "output_types": types}
        target_handle = {
            "fieldName": field_name,
            "id": target_id,
            "inputTypes": spec_field.get("input_types") or ["Message"],
            "type": spec_field.get("type") or "str",
        }
        sh, th = encode_handle(source_handle), encode_handle(target_handle)
        return {
            "animated": False,
            "className": "",
            "data": {"sourceHandle": source_handle, "targetHandle": target_handle},
            "id": f"xy-edge__{source_id}{sh}-{target_id}{th}",
            "selected": False,
            "source": source_id,
            "sourceHandle": sh,
            "target": target_id,
            "targetHandle": th,
        }


def _original_output_types(node: dict[str, Any] | None, name: str) -> list[str]:
    for output in ((node or {}).get("data", {}).get("node") or {}).get("outputs", []) or []:
        if isinstance(output, dict) and output.get("name") == name:
            return list(output.get("types") or ["Data"])
    return ["Data"]


def export_langflow(flow: Flow) -> tuple[dict[str, Any], list[str]]:
    """A LangFlow 1.x flow JSON for ``flow``, and warnings for what LangFlow cannot express."""
    exporter = LangflowExporter(flow)
    return exporter.run(), exporter.warnings
