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
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from flowbuilder.errors import FlowFileError
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position, Viewport
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import (
    Adapter,
    credential_slot,
    import_hook,
    read_params,
    to_float,
)
from flowbuilder.formats.langflow_table import LANGFLOW_TABLE, NOTE_TYPES, OURS
from flowbuilder.formats.mapping import PLACEHOLDER, IdAllocator, find_secrets, remember_secret, scrub
from flowbuilder.formats.report import CredentialFound, ImportReport
from flowbuilder.trust.providers import CredentialRef
from flowbuilder.trust.secrets import is_secret_field, is_secret_value, secret_reason
from flowbuilder.trust.terminal import quote_argv

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
_HIT_SOURCES = LANGFLOW_TABLE.hit_sources()


def component_type(data_type: str) -> str:
    """A component's type name: LangFlow 1.10+ writes extension components as namespaced ids
    (``ext:<bundle>:<Class>@<slot>``, e.g. ``ext:openai:OpenAIEmbeddingsComponent@official``); the class name is
    what the table's entries name (in ``also``). Any other type is returned as it is."""
    if data_type.startswith("ext:"):
        return data_type.rpartition(":")[2].partition("@")[0] or data_type
    return data_type


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
    """One LangFlow flow read into a Flowbuilder flow: the table walk, the structural hooks and the report."""

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
        self.agent_models: dict[str, tuple[str, str, str]] = {}
        """Agents whose model is built in: LangFlow node id -> (provider, model name, key variable)."""
        self.namespaced: dict[str, dict[str, str]] = {}
        """Our node id -> the 1.10+ namespaced component id it was read from (and our type then)."""
        self.agents: dict[str, Adapter] = {}
        """LangFlow agents: node id -> their entry (what their own model and message become)."""

    def run(self) -> Flow:
        nodes, edges = self.graph.get("nodes"), self.graph.get("edges")
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise FlowFileError(self.origin, 'LangFlow flow needs "data": {"nodes": [...], "edges": [...]}')
        for index, node in enumerate(nodes):
            data = node.get("data") if isinstance(node, dict) else None
            if isinstance(data, dict) and node.get("type") == NOTE_TYPES[0] and data.get("type") is None:
                data["type"] = NOTE_TYPES[1]  # a note saved with no component type (README notes)
            problem = _node_problem(node)
            if problem:
                raise FlowFileError(self.origin, f"LangFlow node #{index + 1}: {problem}")
            self.types[node["id"]] = component_type(node["data"]["type"])
        links = [link for link in (self._link(e, i) for i, e in enumerate(edges)) if link is not None]
        for node in nodes:
            self._import_node(node, links)
        for link in links:
            self._connect(link)
        self._agent_parts()
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
        if self.namespaced:
            self.flow.meta["source"]["component_ids"] = self.namespaced
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
            # a pre-1.0 component hands on itself: a store its connection, a chat model its model
            out_port = ports.pop() if len(ports) == 1 else next((p for p in ("store", "model") if p in ports), None)
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
        lf_type = component_type(node["data"]["type"])
        info = node["data"].get("node") or {}
        position = _obj(node.get("position"))
        pos = Position(x=to_float(position.get("x")) or 0.0, y=to_float(position.get("y")) or 0.0)
        label = str(info.get("display_name") or lf_type)
        outcome = self.report.node(node["id"], lf_type)
        if node.get("type") == NOTE_TYPES[0] or lf_type == NOTE_TYPES[1]:
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
            known = LANGFLOW_TABLE.entry(lf_type)
            if known and known.replace:
                mapping.config["replace"] = known.replace
            outcome.note = f"replace with {known.replace}" if known and known.replace else "no equivalent"
            for slot_field, ref in refs.items():
                self.report.credentials.append(CredentialFound(node["id"], slot_field, ref.provider, ref.name, None))
        else:
            self._report_unused(node["id"], template, mapping)
            adapter = LANGFLOW_TABLE.importer(lf_type)
            if adapter is not None and adapter.note:
                self.report.warnings.append(f"{node['id']}: {adapter.note}")
                outcome.note = adapter.note
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
        if node["data"]["type"] != lf_type:  # a namespaced id (1.10+): written back as it was
            self.namespaced[spec.id] = {"type": node["data"]["type"], "as": spec.type}
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
            # Pre-1.0 exports flag plain fields (a model name) as passwords: trust the flag only on a
            # secret-named field or a key-shaped value.
            flagged = spec.get("password") and (is_secret_field(name) or is_secret_value(name, str(value)))
            if flagged and isinstance(value, str) and value.strip():
                if spec.get("load_from_db"):
                    # a mapped node's credential slot, a kept component's provider, else the variable's name
                    known = LANGFLOW_TABLE.entry(lf_type)
                    slot = credential_slot(known.ours) if known else None
                    provider = (
                        slot.provider if slot else (known.provider if known else "") or _provider_from_variable(value)
                    )
                    refs[name] = CredentialRef(provider=provider, name=value)
                else:
                    remember_secret(self.secrets, value)
                    self.report.secret(node_id, name, "a password field of the export")
                continue
            for path, found, reason in find_secrets(value, name):
                remember_secret(self.secrets, found)
                self.report.secret(node_id, path, reason)
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
        if lf_type == OURS:
            return self._flowbuilder(node_id, t, inc, out)
        adapter = LANGFLOW_TABLE.importer(lf_type)
        if adapter is None:
            return None
        used = {*adapter.ignore, *adapter.inputs.values(), *adapter.in_aliases}
        if adapter.extra.get("secret"):
            used.add(adapter.extra["secret"])
        if adapter.hook:
            # A hook returns None when the node lacks what the mapping needs: it stays a placeholder.
            hook = import_hook(self, adapter)
            assert hook is not None
            hooked: _Mapping | None = hook(node_id, t, inc, out, adapter, used)
            if hooked is None:
                return None
            mapping = hooked
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
        return _Mapping(adapter.ours, config, ins, outs)

    def _hook_parser(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        mode = str((_obj(t.get("mode"))).get("value") or "Parser")
        used.update({"mode", "template"})
        config = self._config(adapter, t, used)
        pattern = config.pop("template", None) or _obj(t.get("template")).get("value")
        from_store = any(self.types.get(link.source) in _HIT_SOURCES for link in inc)
        if mode == "Parser" and pattern and not from_store:
            # A pattern over table rows: one labelled text per row, joined as LangFlow's Parser does.
            return _Mapping(adapter.ours, {"template": str(pattern), "join": True, **config}, *self._ports(adapter))
        stringify = LANGFLOW_TABLE.exporter(roles.STRINGIFY)
        assert stringify is not None
        template = str(pattern) if mode == "Parser" and pattern else "{text}"
        ins, outs = self._ports(stringify)
        return _Mapping(stringify.ours, {"template": template, **config}, ins, outs)

    def _hook_prompt(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        config = self._config(adapter, t, used)
        template = str(config.get("template", ""))
        used.update(link.field for link in inc)
        used.update(re.findall(r"\{([^{}]+)\}", template))
        template = self._typed_values(node_id, template, t, {link.field for link in inc})
        return _Mapping(adapter.ours, {"template": template}, {}, self._ports(adapter)[1], any_input=True)

    def _typed_values(self, node_id: str, template: str, t: dict[str, Any], fed: set[str]) -> str:
        """A variable nothing is wired to takes the value typed into its field in LangFlow (LangFlow renders
        it so): written into the template, with braces in the value kept literal."""
        filled: list[str] = []

        def value_of(match: re.Match[str]) -> str:
            name = match.group(1)
            value = _obj(t.get(name)).get("value") if name else None
            if name is None or name in fed or not isinstance(value, str) or not value.strip():
                return match.group(0)
            if name not in filled:
                filled.append(name)
            return value.replace("{", "{{").replace("}", "}}")

        rendered = _PROMPT_TOKEN.sub(value_of, template)
        if filled:
            shown = ", ".join("{" + n + "}" for n in filled)
            self.report.warnings.append(f"{node_id}: prompt variable(s) {shown} take the value typed in LangFlow")
        return rendered

    def _hook_agent(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        mapping = self._generic(adapter, t, used)
        self.agents[node_id] = adapter
        used.update({"api_key", "openai_api_key"})
        if adapter.inputs.get("model") not in {link.field for link in inc}:
            # LangFlow's Agent calls its own model: provider and model name are fields of the agent
            provider = str(_obj(t.get("agent_llm")).get("value") or "OpenAI")
            model: Any = _obj(t.get("model_name")).get("value")
            chosen = _model_choice(t)
            if chosen:
                provider = str(chosen.get("provider") or chosen.get("icon") or provider)
                model = chosen.get("name")
            key = _obj(t.get("api_key"))
            variable = str(key.get("value") or "") if key.get("load_from_db") else ""
            self.agent_models[node_id] = (provider, str(model) if isinstance(model, str) and model else "", variable)
        return mapping

    def _hook_url(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        """A web page loader: loader.url with its URLs; the run fetches them once their servers are approved."""
        value = _obj(t.get("urls")).get("value") or _obj(t.get("web_path")).get("value") or []
        urls = [str(u).strip() for u in (value if isinstance(value, list) else [value]) if str(u).strip()]
        if urls:
            shown = ", ".join(urls[:3]) + (f" and {len(urls) - 3} more" if len(urls) > 3 else "")
            self.report.warnings.append(
                f"{node_id}: fetches {shown}: approve each server before a run (validate lists them as "
                "untrusted-endpoint; --allow-endpoint http=ORIGIN or the builder's Approve button)"
            )
        else:
            self.report.warnings.append(f"{node_id}: a URL loader with no URLs: set the loader's urls")
        return _Mapping(adapter.ours, {"urls": urls}, *self._ports(adapter))

    def _hook_directory(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping:
        folder = str(_obj(t.get("path")).get("value") or "")
        name = _basename(folder) if folder else ""
        recursive = str(_obj(t.get("recursive")).get("value")).lower() == "true"
        self.report.warnings.append(
            f"{node_id}: a folder loader: path set to {name!r} (the exporter's {folder!r} is not read); put the "
            "folder next to the flow or set the loader's path"
            + ("; subfolders are not read (recursive was on)" if recursive else "")
        )
        return _Mapping(adapter.ours, {"path": name, "mode": "records"}, *self._ports(adapter))

    def _hook_provider(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping | None:
        """A provider-neutral model component: our node for the chosen model's provider (None: unknown)."""
        chosen = _model_choice(t)
        kind = adapter.ours.split(".", 1)[0]
        provider = str(chosen.get("provider") or chosen.get("category") or chosen.get("icon") or "OpenAI")
        type_name = LANGFLOW_TABLE.by_provider(kind, provider)
        if type_name is None:
            return None
        mapping = self._generic(adapter, t, used)  # only the fields the entry lists (none for an embedder)
        mapping.type_name = type_name
        if chosen.get("name"):
            mapping.config["model"] = str(chosen["name"])
        return mapping

    def _agent_parts(self) -> None:
        """What a LangFlow agent has built in and ours takes as inputs: its model, and (pre-1.0) the chat
        input the playground gave it. Each becomes a node wired into the agent, with a report line."""
        for node_id, (provider, model, variable) in self.agent_models.items():
            agent = self.node_ids[node_id]
            kind, fallback = self.agents[node_id].extra["model"]
            type_name = LANGFLOW_TABLE.by_provider(kind, provider) or LANGFLOW_TABLE.by_provider(kind, fallback)
            assert type_name is not None, "the entry's fallback provider has a node"
            config = {"model": model} if model else {}
            spec = NodeSpec(id=self.ids.take(f"{agent}-model"), type=type_name, name=f"{provider} model", config=config)
            slot = credential_slot(type_name)
            if slot is not None:
                spec.credentials[slot.name] = CredentialRef(provider=slot.provider, name=variable or "default")
                self.report.credentials.append(
                    CredentialFound(spec.id, slot.name, slot.provider, variable or "default", bound=False)
                )
            self._add_part(spec, agent, "model", "model")
            shown = f"{provider} {model or '(its default model)'}"
            self.report.warnings.append(
                f"{node_id}: the agent's own model ({shown}) is node '{spec.id}' ({type_name}) wired into it"
            )
        for node_id, entry in self.agents.items():
            agent = self.node_ids[node_id]
            if any(e.target == agent and e.target_port == "message" for e in self.flow.edges):
                continue
            spec = NodeSpec(id=self.ids.take(f"{agent}-input"), type=entry.extra["message"], name="Chat Input")
            self._add_part(spec, agent, "message", "message")
            self.report.warnings.append(
                f"{node_id}: the agent answered LangFlow's playground chat: its message comes from chat input "
                f"'{spec.id}' (added)"
            )

    def _add_part(self, spec: NodeSpec, target: str, out_port: str, in_port: str) -> None:
        self.flow.nodes.append(spec)
        pos = self.flow.layout.positions.get(target, Position())
        self.flow.layout.positions[spec.id] = Position(x=pos.x - 320, y=pos.y + 200)
        self.flow.edges.append(Edge(source=spec.id, source_port=out_port, target=target, target_port=in_port))

    def _hook_mcp(
        self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link], adapter: Adapter, used: set[str]
    ) -> _Mapping | None:
        """MCP Tools: its ``mcp_server`` value is ``{name, config}``; the config holds the server's command
        (stdio) or URL. Without one the export only names a server in LangFlow's settings: placeholder."""
        server = self.value(t, "mcp_server", used)
        name = server.get("name") if isinstance(server, dict) else server
        found = server.get("config") if isinstance(server, dict) else None
        cfg = _obj(found)
        config: dict[str, Any] = {}
        if isinstance(cfg.get("url"), str) and cfg["url"].strip():
            config = {"transport": "http", "url": cfg["url"].strip()}
            headers, secret = self._plain_entries(node_id, "headers", cfg.get("headers"))
            if headers:
                config["headers"] = headers
            if secret:  # the bound token slot takes the secret header's place
                header, value = secret
                config["token_header"] = header
                config["token_prefix"] = "Bearer " if value.lower().startswith("bearer ") else ""
        elif isinstance(cfg.get("command"), str) and cfg["command"].strip():
            args = cfg.get("args") or []
            parts = shlex.split(args) if isinstance(args, str) else [str(a) for a in args if a is not None]
            config = {"transport": "stdio", "command": cfg["command"].strip(), "args": parts}
            env, secret = self._plain_entries(node_id, "env", cfg.get("env"))
            if env:
                config["env"] = env
            if secret:  # the bound token slot fills the secret variable
                config["token_env"] = secret[0]
        if not config:
            return None
        line = None
        if config.get("transport") == "stdio":  # validate prints the line to approve, with program and folder
            assignments = [f"{key}={value}" for key, value in sorted(config.get("env", {}).items())]
            line = quote_argv([*assignments, config["command"], *config["args"]])
        if line:
            self.report.warnings.append(
                f"{node_id}: MCP server {name!r} starts the program `{line}` on your machine; it never runs until "
                "you approve it (flowbuilder validate prints the exact line with program and folder; then pass "
                "--allow-command)"
            )
        self.report.warnings.append(
            f"{node_id}: all tools of MCP server {name!r} are given to the agent (LangFlow's per-tool choices "
            "are not carried; set the tool.mcp node's selection)"
        )
        return _Mapping(adapter.ours, config, *self._ports(adapter))

    def _plain_entries(self, node_id: str, where: str, value: Any) -> tuple[dict[str, str], tuple[str, str] | None]:
        """Env variables or headers without secrets, and the first secret entry (name, value) for the token
        slot to stand in for. A secret is reported by location and never carried."""
        kept: dict[str, str] = {}
        first: tuple[str, str] | None = None
        for key, item in _obj(value).items():
            text, path = str(item), f"mcp_server.config.{where}.{key}"
            if not (is_secret_field(str(key)) or is_secret_value(str(key), text) or text in self.secrets):
                kept[str(key)] = text
                continue
            if text not in self.secrets:  # the template scan may have reported it already
                remember_secret(self.secrets, text)
                self.report.secret(node_id, path, secret_reason(str(key), text) or f"the secret-named entry '{key}'")
            if first is None:
                first = (str(key), text)
                self.report.drop(node_id, path, f"a secret: bind the tool.mcp token slot (sent as {key})")
            else:
                self.report.drop(node_id, path, "a second secret: tool.mcp has one token slot; set it another way")
        return kept, first

    def _flowbuilder(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping | None:
        """A node our exporter wrote for a type LangFlow lacks: its type and config ride in metadata."""
        node = next(n for n in self.graph["nodes"] if isinstance(n, dict) and n.get("id") == node_id)
        meta = ((node["data"].get("node") or {}).get("metadata") or {}).get("flowbuilder")
        if not isinstance(meta, dict) or not isinstance(meta.get("type"), str):
            return None
        entry = LANGFLOW_TABLE.ports_of(meta["type"])
        if entry is not None and entry.hook == "agent":  # an agent still gets its playground message
            self.agents[node_id] = entry
        ports = {link.field: link.field for link in inc}
        outs = {link.output: link.output for link in out}
        return _Mapping(meta["type"], dict(meta.get("config") or {}), ports, outs, set(t))


def _model_choice(template: dict[str, Any]) -> dict[str, Any]:
    """The model picked in a 1.5+ model field (a list of model descriptions), or {}."""
    value = _obj(template.get("model")).get("value")
    return value[0] if isinstance(value, list) and value and isinstance(value[0], dict) else {}


_PROMPT_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A prompt variable ``{name}`` (``{{`` and ``}}`` are literal braces, as prompt.template reads them)."""


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
