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
from flowbuilder.formats.mapping import (
    PLACEHOLDER,
    IdAllocator,
    credential_slot,
    find_key_shaped,
    remember_secret,
    scrub,
)
from flowbuilder.formats.report import CredentialFound, ImportReport

VECTOR_STORES = {
    "Chroma",
    "AstraDB",
    "Pinecone",
    "Qdrant",
    "FAISS",
    "Weaviate",
    "PGVector",
    "Milvus",
    "Redis",
    "MongoDBAtlasVector",
}
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
_PROVIDER_BY_TYPE = {
    "OpenAIEmbeddings": "openai",
    "OpenAIModel": "openai",
    "ChatOpenAI": "openai",
    "GroqModel": "groq",
    "Pinecone": "pinecone",
    "AstraDB": "astra",
    "MistalAIEmbeddings": "mistral",
    "MistralModel": "mistral",
    "CohereEmbeddings": "cohere",
    "CohereModel": "cohere",
    "OllamaEmbeddings": "ollama",
    "OllamaModel": "ollama",
}


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


def unescape(text: str) -> str:
    """LangFlow stores separators either as real characters or escaped (``"\\\\n"``)."""
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int | None = None) -> int | None:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return default


def _float(value: Any, default: float | None = None) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _bool(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


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
                x=_float(viewport.get("x"), 0.0) or 0.0,
                y=_float(viewport.get("y"), 0.0) or 0.0,
                zoom=_float(viewport.get("zoom"), 1.0) or 1.0,
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
        out_port = self.mappings[link.source].outputs.get(link.output)
        mapping = self.mappings[link.target]
        in_port = link.field if mapping.any_input else mapping.inputs.get(link.field)
        if out_port is None or in_port is None:
            missing = f"output {link.output!r}" if out_port is None else f"input {link.field!r}"
            self.report.connections_dropped.append(
                f"{link.source}.{link.output} -> {link.target}.{link.field}: {missing} has no Flowbuilder port"
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
        pos = Position(x=_float(position.get("x"), 0.0) or 0.0, y=_float(position.get("y"), 0.0) or 0.0)
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
                    width=_float(width),
                    height=_float(height),
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
        mapper = _MAPPERS.get(lf_type)
        mapping = mapper(self, node["id"], template, incoming, outgoing) if mapper else None
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
                    provider = _PROVIDER_BY_TYPE.get(lf_type) or _provider_from_variable(value)
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

    # -- mappers --------------------------------------------------------------------------------
    def _file(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        outputs = {link.output for link in out}
        tabular = outputs & {"dataframe", "json", "table", "data_list"}
        mode = "records" if tabular else ("whole" if outputs else "auto")
        if tabular and outputs - tabular - {"path"}:
            self.report.warnings.append(
                f"{node_id}: outputs {sorted(outputs)} used at once; the loader gives records for all of them"
            )
        path_field = _obj(t.get("path"))
        used.add("path")
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
        outs = {name: "records" for name in ("dataframe", "json", "table", "message", "data", "text", "data_list")}
        return _Mapping("loader.file", config, {}, outs, used | {"separator"})

    def _split_text(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        separator = self.value(t, "separator", used)
        keep = str(self.value(t, "keep_separator", used) or "False").strip().lower()
        config = {
            "separator": unescape(str(separator)) if separator not in (None, "") else "\n",
            "chunk_size": _int(self.value(t, "chunk_size", used), 1000),
            "chunk_overlap": _int(self.value(t, "chunk_overlap", used), 200),
            "keep_separator": {"true": "start", "start": "start", "end": "end"}.get(keep, "none"),
        }
        outs = {name: "chunks" for name in ("chunks", "dataframe", "data", "text")}
        return _Mapping(
            "splitter.character", config, {"data_inputs": "documents", "data_input": "documents"}, outs, used
        )

    def _recursive(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        config: dict[str, Any] = {
            "chunk_size": _int(self.value(t, "chunk_size", used), 1000),
            "chunk_overlap": _int(self.value(t, "chunk_overlap", used), 200),
        }
        separators = self.value(t, "separators", used)
        if isinstance(separators, list) and separators:
            config["separators"] = [unescape(str(s)) for s in separators]
        ins = {"data_input": "documents", "data_inputs": "documents", "documents": "documents"}
        outs = {link.output: "chunks" for link in out} | {"chunks": "chunks", "data": "chunks"}
        return _Mapping("splitter.recursive", config, ins, outs, used)

    def _parser(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        mode = str(self.value(t, "mode", used) or "Parser")
        pattern = self.value(t, "pattern", used) or self.value(t, "template", used)
        sep = self.value(t, "sep", used)
        separator = unescape(str(sep)) if sep not in (None, "") else "\n"
        from_store = any(self.types.get(link.source) in VECTOR_STORES for link in inc)
        ins = {"input_data": "", "data": ""}
        if mode == "Parser" and pattern and not from_store:
            # A pattern over table rows: one labelled text per row, joined as LangFlow's Parser does.
            config = {"template": str(pattern), "join": True, "separator": separator}
            return _Mapping(
                "labeller.row", config, {k: "records" for k in ins}, {"parsed_text": "records", "text": "records"}, used
            )
        template = str(pattern) if mode == "Parser" and pattern else "{text}"
        config = {"template": template, "separator": separator}
        return _Mapping(
            "parser.stringify", config, {k: "items" for k in ins}, {"parsed_text": "text", "text": "text"}, used
        )

    def _chroma(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        config: dict[str, Any] = {
            "collection": str(self.value(t, "collection_name", used) or "flowbuilder"),
            "persist_directory": str(self.value(t, "persist_directory", used) or ""),
            "k": _int(self.value(t, "number_of_results", used), 4) or 4,
        }
        host = self.value(t, "chroma_server_host", used)
        if host:
            config["server_host"] = str(host)
            port = _int(self.value(t, "chroma_server_http_port", used), 0)
            if port:
                config["server_port"] = port
        used.update({"chroma_server_http_port", "chroma_server_grpc_port", "chroma_server_ssl_enabled"})
        search_type = self.value(t, "search_type", used)
        if search_type not in (None, "", "Similarity"):
            self.report.drop(node_id, "search_type", f"{search_type!r} not supported; similarity search is used")
        return _Mapping("vectorstore.chroma", config, *_store_ports(), used)

    def _pinecone(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        config: dict[str, Any] = {
            "index": str(self.value(t, "index_name", used) or ""),
            "namespace": str(self.value(t, "namespace", used) or ""),
            "k": _int(self.value(t, "number_of_results", used), 4) or 4,
        }
        distance = str(self.value(t, "distance_strategy", used) or "Cosine").lower()
        config["metric"] = {"euclidean": "euclidean", "dot product": "dotproduct"}.get(distance, "cosine")
        return _Mapping("vectorstore.pinecone", config, *_store_ports(), used)

    def _openai_embeddings(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = {"openai_api_key", "api_key"}
        config: dict[str, Any] = {"model": str(self.value(t, "model", used) or "text-embedding-3-small")}
        dimensions = _int(self.value(t, "dimensions", used), 0)
        if dimensions:
            config["dimensions"] = dimensions
        base = self.value(t, "openai_api_base", used)
        if base:
            config["base_url"] = str(base)
        return _Mapping("embedder.openai", config, {}, {"embeddings": "embedder"}, used)

    def _ollama_embeddings(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = {"api_key"}
        model = self.value(t, "model_name", used) or self.value(t, "model", used) or "nomic-embed-text"
        config: dict[str, Any] = {"model": str(model)}
        base = self.value(t, "base_url", used)
        if base:
            config["base_url"] = str(base)
        return _Mapping("embedder.ollama", config, {}, {"embeddings": "embedder"}, used)

    def _prompt(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        template = str(self.value(t, "template", used) or "")
        used.update(link.field for link in inc)
        used.update(re.findall(r"\{([^{}]+)\}", template))
        return _Mapping("prompt.template", {"template": template}, {}, {"prompt": "prompt"}, used, any_input=True)

    def _chat_model(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        lf_type = self.types[node_id]
        type_name = {
            "OpenAIModel": "llm.openai",
            "ChatOpenAI": "llm.openai",
            "GroqModel": "llm.groq",
            "OllamaModel": "llm.ollama",
        }[lf_type]
        used: set[str] = {"api_key", "openai_api_key", "groq_api_key", "input_value"}
        config: dict[str, Any] = {}
        model = self.value(t, "model_name", used) or self.value(t, "model", used)
        if model:
            config["model"] = str(model)
        temperature = _float(self.value(t, "temperature", used))
        if temperature is not None:
            config["temperature"] = temperature
        max_tokens = _int(self.value(t, "max_tokens", used), 0)
        if max_tokens:
            config["max_tokens"] = max_tokens
        system = self.value(t, "system_message", used)
        if isinstance(system, str) and system and not any(link.field == "system_message" for link in inc):
            config["system_message"] = system
        timeout = _float(self.value(t, "timeout", used))
        if timeout:
            config["timeout"] = timeout
        retries = _int(self.value(t, "max_retries", used))
        if retries is not None:
            config["max_retries"] = retries
        stream = self.value(t, "stream", used)
        if stream is not None:
            config["stream"] = _bool(stream)
        base = self.value(t, "openai_api_base", used) or self.value(t, "base_url", used)
        if base and str(base).rstrip("/") not in ("https://api.groq.com", "https://api.openai.com/v1"):
            config["base_url"] = str(base)
        ins = {"input_value": "prompt", "system_message": "system"}
        outs = {"text_output": "answer", "model_output": "model"}
        return _Mapping(type_name, config, ins, outs, used)

    def _chat_input(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        used: set[str] = set()
        text = self.value(t, "input_value", used)
        config = {"text": str(text)} if text else {}
        return _Mapping("chat.input", config, {}, {"message": "message"}, used)

    def _chat_output(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping:
        return _Mapping("chat.output", {}, {"input_value": "message"}, {"message": "message"}, {"input_value"})

    def _flowbuilder(self, node_id: str, t: dict[str, Any], inc: list[_Link], out: list[_Link]) -> _Mapping | None:
        """A node our exporter wrote for a type LangFlow lacks: its type and config ride in metadata."""
        node = next(n for n in self.graph["nodes"] if isinstance(n, dict) and n.get("id") == node_id)
        meta = ((node["data"].get("node") or {}).get("metadata") or {}).get("flowbuilder")
        if not isinstance(meta, dict) or not isinstance(meta.get("type"), str):
            return None
        ports = {link.field: link.field for link in inc}
        outs = {link.output: link.output for link in out}
        return _Mapping(meta["type"], dict(meta.get("config") or {}), ports, outs, set(t))


def _store_ports() -> tuple[dict[str, str], dict[str, str]]:
    ins = {"ingest_data": "documents", "embedding": "embedder", "embedding_model": "embedder", "search_query": "query"}
    outs = {
        "search_results": "hits",
        "dataframe": "hits",
        "search_results_dataframe": "hits",
        "vectorstoreconnection": "store",
        "base_retriever": "store",
    }
    return ins, outs


_MAPPERS: dict[str, Any] = {
    "File": LangflowImporter._file,
    "SplitText": LangflowImporter._split_text,
    "RecursiveCharacterTextSplitter": LangflowImporter._recursive,
    "ParserComponent": LangflowImporter._parser,
    "parser": LangflowImporter._parser,
    "ParseData": LangflowImporter._parser,
    "Chroma": LangflowImporter._chroma,
    "Pinecone": LangflowImporter._pinecone,
    "OpenAIEmbeddings": LangflowImporter._openai_embeddings,
    "OllamaEmbeddings": LangflowImporter._ollama_embeddings,
    "Prompt Template": LangflowImporter._prompt,
    "Prompt": LangflowImporter._prompt,
    "OpenAIModel": LangflowImporter._chat_model,
    "GroqModel": LangflowImporter._chat_model,
    "OllamaModel": LangflowImporter._chat_model,
    "ChatInput": LangflowImporter._chat_input,
    "ChatOutput": LangflowImporter._chat_output,
    "FlowbuilderNode": LangflowImporter._flowbuilder,
}


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


def import_langflow(data: dict[str, Any], origin: str = "<langflow>") -> tuple[Flow, ImportReport]:
    """Convert a parsed LangFlow export into a Flowbuilder flow and an import report."""
    report = ImportReport(source_format="langflow", source_file=origin)
    flow = LangflowImporter(data, origin, report).run()
    return flow, report


def short_hash(text: str, length: int = 5) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:length]


# ==== export ========================================================================================

_MESSAGE = ["Message"]
_DATA_IN = ["Data", "JSON", "DataFrame", "Table", "Message"]
_STORE_INPUTS = {
    "ingest_data": ["Data", "DataFrame", "Table"],
    "embedding": ["Embeddings"],
    "search_query": ["Message"],
}


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
    c, t = spec.config, spec.type
    slot = credential_slot(t)
    ref = spec.credentials.get(slot.name) if slot else None
    ref_name = ref.name if ref and ref.name != "default" else ""
    if t == "loader.file":
        path = str(c.get("path", ""))
        mode = c.get("mode", "auto")
        tabular = mode == "records" or (
            mode == "auto" and path.lower().endswith((".csv", ".json", ".xlsx", ".parquet"))
        )
        fields = {"path": _field("path", "", "FileInput", "file", file_path=[path] if path else [], list=True)}
        outputs = [
            _out("dataframe", "Structured Content", ["Table"], "load_files_structured", tabular),
            _out("message", "Raw Content", _MESSAGE, "load_files_message", not tabular),
        ]
        port = "dataframe" if tabular else "message"
        if c.get("path"):
            warnings.append(f"{spec.id}: LangFlow stores uploads on its server; upload {path!r} again in the File node")
        return _LfShape("File", "Read File", "Loads a file.", fields, outputs, {}, {"records": port})
    if t in ("splitter.character", "splitter.recursive"):
        keep = {"start": "Start", "end": "End"}.get(str(c.get("keep_separator", "none")), "False")
        if t == "splitter.recursive":
            fields = {
                "chunk_size": _field("chunk_size", c.get("chunk_size", 1000), "IntInput", "int"),
                "chunk_overlap": _field("chunk_overlap", c.get("chunk_overlap", 200), "IntInput", "int"),
                "separators": _field("separators", c.get("separators", ["\n\n", "\n", " ", ""]), list=True),
                "data_input": _handle("data_input", ["Document", "Data", "Table", "DataFrame"], True),
            }
            outputs = [_out("data", "Data", ["Data"], "split_data")]
            return _LfShape(
                "RecursiveCharacterTextSplitter", "Recursive Character Text Splitter", "Split text recursively.",
                fields, outputs, {"documents": "data_input"}, {"chunks": "data"},
            )  # fmt: skip
        fields = {
            "data_inputs": _handle("data_inputs", _DATA_IN, True),
            "chunk_size": _field("chunk_size", c.get("chunk_size", 1000), "IntInput", "int"),
            "chunk_overlap": _field("chunk_overlap", c.get("chunk_overlap", 200), "IntInput", "int"),
            "separator": _field("separator", c.get("separator", "\n\n"), "MessageTextInput", input_types=_MESSAGE),
            "keep_separator": _field(
                "keep_separator", keep, "DropdownInput", options=["False", "True", "Start", "End"]
            ),
            "text_key": _field("text_key", "text", "MessageTextInput", input_types=_MESSAGE),
        }
        outputs = [_out("dataframe", "Chunks", ["Table"], "split_text")]
        return _LfShape(
            "SplitText",
            "Split Text",
            "Split text into chunks.",
            fields,
            outputs,
            {"documents": "data_inputs"},
            {"chunks": "dataframe"},
        )
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
    if t in ("vectorstore.chroma", "vectorstore.pinecone"):
        fields = {name: _handle(name, types) for name, types in _STORE_INPUTS.items()}
        fields["number_of_results"] = _field("number_of_results", c.get("k", 4), "IntInput", "int")
        if t == "vectorstore.chroma":
            fields["collection_name"] = _field("collection_name", c.get("collection", "flowbuilder"))
            fields["persist_directory"] = _field("persist_directory", c.get("persist_directory", ""))
            fields["chroma_server_host"] = _field("chroma_server_host", c.get("server_host", ""))
            fields["chroma_server_http_port"] = _field(
                "chroma_server_http_port", c.get("server_port", 8000) if c.get("server_host") else 0, "IntInput", "int"
            )
            lf_type, display = "Chroma", "Chroma DB"
        else:
            fields["index_name"] = _field("index_name", c.get("index", ""))
            fields["namespace"] = _field("namespace", c.get("namespace", ""))
            fields["pinecone_api_key"] = _secret_field("pinecone_api_key", ref_name)
            lf_type, display = "Pinecone", "Pinecone"
        outputs = [
            _out("search_results", "Search Results", ["JSON"], "search_documents"),
            _out("dataframe", "Table", ["Table"], "as_dataframe", False),
        ]
        ins = {"documents": "ingest_data", "embedder": "embedding", "query": "search_query"}
        return _LfShape(lf_type, display, "Vector store.", fields, outputs, ins, {"hits": "search_results"})
    if t in ("embedder.openai", "embedder.ollama"):
        if t == "embedder.openai":
            provider, model_output = "OpenAI", "Embedding Model"
            fields = {
                "model": _field("model", c.get("model", "text-embedding-3-small"), "DropdownInput"),
                "openai_api_key": _secret_field("openai_api_key", ref_name),
                "dimensions": _field("dimensions", c.get("dimensions") or 0, "IntInput", "int"),
                "openai_api_base": _field("openai_api_base", c.get("base_url", ""), "MessageTextInput"),
            }
        else:
            provider, model_output = "Ollama", "Embeddings"
            fields = {
                "model_name": _field("model_name", c.get("model", "nomic-embed-text"), "DropdownInput"),
                "base_url": _field("base_url", c.get("base_url", "http://127.0.0.1:11434"), "MessageTextInput"),
            }
        outputs = [_out("embeddings", model_output, ["Embeddings"], "build_embeddings")]
        return _LfShape(
            f"{provider}Embeddings",
            f"{provider} Embeddings",
            f"{provider} embeddings.",
            fields,
            outputs,
            {},
            {"embedder": "embeddings"},
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
    if t in ("llm.openai", "llm.groq", "llm.ollama"):
        lf_type, display = {
            "llm.openai": ("OpenAIModel", "OpenAI"),
            "llm.groq": ("GroqModel", "Groq"),
            "llm.ollama": ("OllamaModel", "Ollama"),
        }[t]
        default_model = {"llm.openai": "gpt-4o-mini", "llm.groq": "llama-3.1-8b-instant", "llm.ollama": "llama3.2"}[t]
        fields = {
            "input_value": _field("input_value", "", "MessageInput", input_types=_MESSAGE),
            "system_message": _field(
                "system_message", c.get("system_message", ""), "MultilineInput", input_types=_MESSAGE
            ),
            "model_name": _field("model_name", c.get("model", default_model), "DropdownInput"),
            "temperature": _field("temperature", c.get("temperature", 0.2), "SliderInput", "slider"),
            "max_tokens": _field("max_tokens", c.get("max_tokens") or 0, "IntInput", "int"),
        }
        # Settings left at our defaults stay out, so that a round trip does not pin them.
        if "stream" in c:
            fields["stream"] = _field("stream", bool(c["stream"]), "BoolInput", "bool")
        if t != "llm.ollama":
            fields["api_key"] = _secret_field("api_key", ref_name)
            if "timeout" in c:
                fields["timeout"] = _field("timeout", c["timeout"], "IntInput", "int")
            if "max_retries" in c:
                fields["max_retries"] = _field("max_retries", c["max_retries"], "IntInput", "int")
        if c.get("base_url") or t == "llm.ollama":
            name = "openai_api_base" if t == "llm.openai" else "base_url"
            fields[name] = _field(name, c.get("base_url") or "http://127.0.0.1:11434", "MessageTextInput")
        outputs = [
            _out("text_output", "Model Response", _MESSAGE, "text_response"),
            _out("model_output", "Language Model", ["LanguageModel"], "build_model", False),
        ]
        ins = {"prompt": "input_value", "system": "system_message"}
        return _LfShape(
            lf_type,
            display,
            "Generate text with a language model.",
            fields,
            outputs,
            ins,
            {"answer": "text_output", "model": "model_output"},
        )
    if t == "chat.input":
        fields = {"input_value": _field("input_value", c.get("text", ""), "MultilineInput")}
        outputs = [_out("message", "Chat Message", _MESSAGE, "message_response")]
        return _LfShape(
            "ChatInput",
            "Chat Input",
            "Get chat inputs from the Playground.",
            fields,
            outputs,
            {},
            {"message": "message"},
        )
    if t == "chat.output":
        fields = {"input_value": _handle("input_value", _DATA_IN, True)}
        outputs = [_out("message", "Output Message", _MESSAGE, "message_response")]
        return _LfShape(
            "ChatOutput",
            "Chat Output",
            "Display a chat message in the Playground.",
            fields,
            outputs,
            {"message": "input_value"},
            {"message": "message"},
        )
    return None


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
