"""Flowbuilder flows -> LangFlow 1.x flow JSON, by walking :data:`langflow_table.LANGFLOW_TABLE`.

Each node becomes a component whose template fields come from the table (only what the flow sets, the
model, and defaults LangFlow spells differently); hooks build File (dynamic outputs), Parser and Prompt
(variables as fields). A type with no component is kept as a ``FlowbuilderNode`` carrying its type and
config in metadata, so a round trip loses nothing. Handles use the UI's compact ``œ`` encoding.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from flowbuilder.flow import Edge, Flow, NodeSpec, Note
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import NO_DEFAULT, Adapter, credential_slot, our_defaults
from flowbuilder.formats.langflow import encode_handle, short_hash
from flowbuilder.formats.langflow_table import DATA_IN, LANGFLOW_TABLE, MESSAGE, NOTE_TYPES, OURS
from flowbuilder.formats.mapping import PLACEHOLDER

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
    custom_fields: dict[str, list[str]] = field(default_factory=dict)


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
    c = {**our_defaults(spec.type), **spec.config}  # hooks read our defaults from the node's Config, never a copy
    if adapter.note:
        warnings.append(f"{spec.id}: {adapter.note}")
    hook = _SHAPES.get(adapter.hook, _generic_shape) if isinstance(adapter.hook, str) else _generic_shape
    return hook(spec, adapter, c, warnings)


def _file_shape(spec: NodeSpec, adapter: Adapter, c: dict[str, Any], warnings: list[str]) -> _LfShape:
    """LangFlow's File: the output that is selected depends on the file (a table or raw text)."""
    path = str(c.get("path", ""))
    mode = c.get("mode", "auto")
    tabular = mode == "records" or (mode == "auto" and path.lower().endswith((".csv", ".json", ".xlsx", ".parquet")))
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
    (records,) = adapter.outputs
    return _LfShape(adapter.theirs, adapter.display, "Loads a file.", fields, outputs, {}, {records: port})


def _parser_shape(spec: NodeSpec, adapter: Adapter, c: dict[str, Any], warnings: list[str]) -> _LfShape:
    """LangFlow's Parser: a pattern over rows (a node with a ``join`` option labels rows) or a stringifier."""
    template = str(c.get("template", ""))
    rows = "join" in c
    stringify = not rows and template == "{text}"
    if rows and not c.get("join", False):
        warnings.append(f"{spec.id}: LangFlow's Parser always joins rows; one record per row is not kept")
    if rows and not template:
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
    return _LfShape(
        adapter.theirs, adapter.display, "Format data as text.", fields, outputs, dict(adapter.inputs),
        dict(adapter.outputs),
    )  # fmt: skip


def _prompt_shape(spec: NodeSpec, adapter: Adapter, c: dict[str, Any], warnings: list[str]) -> _LfShape:
    """LangFlow's Prompt Template: each variable of the template is an input field of its own."""
    template = str(c.get("template", ""))
    variables = list(dict.fromkeys(re.findall(r"\{([A-Za-z_][A-Za-z0-9_ ]*)\}", template)))
    fields = {"template": _field("template", template, "PromptInput", "prompt")}
    for var in variables:
        fields[var] = _field(var, "", "", "str", input_types=_MESSAGE, multiline=True, field_type="str")
        fields[var].pop("_input_type")
    outputs = [_out("prompt", "Prompt", _MESSAGE, "build_prompt")]
    description = "Create a prompt template with dynamic variables."
    shape = _LfShape(adapter.theirs, adapter.display, description, fields, outputs, {v: v for v in variables},
                     dict(adapter.outputs))  # fmt: skip
    shape.custom_fields = {"template": variables}
    return shape


def _generic_shape(spec: NodeSpec, adapter: Adapter, c: dict[str, Any], warnings: list[str]) -> _LfShape:
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


_SHAPES = {"file": _file_shape, "parser": _parser_shape, "prompt": _prompt_shape}


def _ref_name(spec: NodeSpec) -> str:
    slot = credential_slot(spec.type)
    ref = spec.credentials.get(slot.name) if slot else None
    return ref.name if ref and ref.name != "default" else ""


class LangflowExporter:
    """One Flowbuilder flow written as a LangFlow flow: each node's component shape, then the edges."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.warnings: list[str] = []
        self.lf_ids: dict[str, str] = {}
        self.shapes: dict[str, _LfShape | None] = {}
        self.originals: dict[str, dict[str, Any]] = {}

    def _component_id(self, spec: NodeSpec, lf_type: str) -> str:
        """The component's ``data.type``: the 1.10+ namespaced id it was imported from (same node type), else
        the type name, which LangFlow 1.10+ resolves through its aliases."""
        ids = (self.flow.meta.get("source") or {}).get("component_ids") or {}
        found = ids.get(spec.id) if isinstance(ids, dict) else None
        if isinstance(found, dict) and found.get("as") == spec.type and isinstance(found.get("type"), str):
            return str(found["type"])
        return lf_type

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
        uploads = self._uploads()
        nodes = [self._node(spec) for spec in self.flow.nodes if spec.id not in uploads]
        nodes += [self._note(note) for note in self.flow.notes]
        kept = [e for e in self.flow.edges if e.source not in uploads]
        edges = [edge for edge in (self._edge(e) for e in kept) if edge is not None]
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

    def _uploads(self) -> set[str]:
        """File inputs (an n8n trigger's file) that only feed file loaders: in LangFlow the File node's own
        upload is the run's file, so the input and its ``path`` connections fold into those File nodes."""
        folded: set[str] = set()
        for spec in self.flow.nodes:
            out = [e for e in self.flow.edges if e.source == spec.id]
            if spec.type != roles.FILE_INPUT or not out:
                continue
            if all(e.target_port == "path" and self.flow.node(e.target).type == roles.LOADER for e in out):
                folded.add(spec.id)
                names = ", ".join(sorted(e.target for e in out))
                self.warnings.append(f"{spec.id}: the file it gives is the upload of File node(s) {names}")
        return folded

    def _note(self, note: Note) -> dict[str, Any]:
        pos = self.flow.position(note.id)
        node: dict[str, Any] = {
            "data": {
                "id": note.id,
                "node": {"description": note.text, "display_name": "", "documentation": "", "template": {}},
                "type": NOTE_TYPES[1],
            },
            "id": note.id,
            "position": {"x": pos.x, "y": pos.y},
            "type": NOTE_TYPES[0],
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
                OURS, spec.name or spec.type, f"Flowbuilder {spec.type}",
                {n: _handle(n, ["Data", "JSON", "Message"]) for n in in_names},
                [_out(n, n, ["JSON"], "run") for n in out_names],
                {n: n for n in in_names}, {n: n for n in out_names},
            )  # fmt: skip
            self.shapes[spec.id] = shape
        lf_id = self._lf_id(spec, shape.lf_type)
        self.lf_ids[spec.id] = lf_id
        template: dict[str, Any] = {"_type": "Component", **shape.fields}
        metadata: dict[str, Any] = {}
        if shape.lf_type == OURS:
            config = spec.config
            if spec.type == PLACEHOLDER:
                config = {k: v for k, v in config.items() if k != "original"}
            metadata["flowbuilder"] = {"type": spec.type, "config": config}
        base_classes = sorted({ty for out in shape.outputs for ty in out["types"]})
        node_info: dict[str, Any] = {
            "base_classes": base_classes,
            "beta": False,
            "conditional_paths": [],
            "custom_fields": shape.custom_fields,
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
                "type": self._component_id(spec, shape.lf_type),
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
            types = next((o["types"] for o in src_shape.outputs if o["name"] == output), ["JSON"])
            lf_type = self._component_id(source, src_shape.lf_type)
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
            return list(output.get("types") or ["JSON"])
    return ["JSON"]


def export_langflow(flow: Flow) -> tuple[dict[str, Any], list[str]]:
    """A LangFlow 1.x flow JSON for ``flow``, and warnings for what LangFlow cannot express."""
    exporter = LangflowExporter(flow)
    return exporter.run(), exporter.warnings
