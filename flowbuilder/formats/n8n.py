"""n8n workflow JSON <-> Flowbuilder flows.

n8n wires LangChain sub-nodes into their root node with ``ai_*`` connections (embedder -> vector store,
model/memory/tool -> agent, splitter -> loader, loader -> store); those become our service ports and a
plain loader -> splitter -> store data path. Expressions (``={{ ... }}``) are never evaluated: they are
listed in the report and our default is used. Parameters n8n omits because they are defaults get
n8n's default (stated in the report), since our defaults sometimes differ.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from flowbuilder.credentials import CredentialRef
from flowbuilder.errors import FlowFileError
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position, Viewport
from flowbuilder.formats.mapping import (
    PLACEHOLDER,
    IdAllocator,
    credential_slot,
    find_key_shaped,
    record_credentials,
    remember_secret,
    scrub,
    slugify,
)
from flowbuilder.formats.report import CredentialFound, ImportReport, NodeOutcome

LC = "@n8n/n8n-nodes-langchain."
BASE = "n8n-nodes-base."

CREDENTIAL_PROVIDERS = {
    "openAiApi": "openai",
    "groqApi": "groq",
    "pineconeApi": "pinecone",
    "mistralCloudApi": "mistral",
    "cohereApi": "cohere",
    "ollamaApi": "ollama",
    "qdrantApi": "qdrant",
    "supabaseApi": "supabase",
    "openRouterApi": "openrouter",
    "googlePalmApi": "google",
}
PROVIDER_CREDENTIALS = {"openai": "openAiApi", "groq": "groqApi", "pinecone": "pineconeApi", "ollama": "ollamaApi"}

# n8n omits parameters left at their default; these are n8n's defaults for the types we map.
N8N_DEFAULTS: dict[str, dict[str, Any]] = {
    "textSplitterRecursiveCharacterTextSplitter": {"chunkSize": 1000, "chunkOverlap": 0},
    "textSplitterCharacterTextSplitter": {"separator": "", "chunkSize": 1000, "chunkOverlap": 0},
    "vectorStore": {"mode": "retrieve", "topK": 4},
    "memoryBufferWindow": {"contextWindowLength": 5},
    "lmChatOpenAi": {"model": "gpt-4o-mini", "options.temperature": 0.7},
    "lmChatGroq": {"model": "llama3-8b-8192", "options.temperature": 0.7},
    "lmChatOllama": {"model": "llama3.2", "options.temperature": 0.7},
    "embeddingsOpenAi": {"model": "text-embedding-3-small"},
    "embeddingsOllama": {"model": "llama3.2"},
    "agent": {"options.systemMessage": "You are a helpful assistant", "options.maxIterations": 10},
    "documentDefaultDataLoader": {"textSplittingMode": "simple", "dataType": "json"},
}
STORE_TYPES = {"vectorStorePinecone": "vectorstore.pinecone", "vectorStoreInMemory": "vectorstore.chroma"}
STICKY = "stickyNote"


def short_type(n8n_type: str) -> str:
    return n8n_type.rsplit(".", 1)[-1]


def is_expression(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=") and "{{" in value


def _get_path(params: dict[str, Any], path: str) -> Any:
    value: Any = params
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _walk(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Leaves of a parameter tree as ``(dotted path, value)``; empty containers are skipped."""
    if isinstance(value, dict):
        if value.get("__rl") is True:
            return [(path, value)]
        leaves: list[tuple[str, Any]] = []
        for key, item in value.items():
            leaves += _walk(item, f"{path}.{key}" if path else str(key))
        return leaves
    if isinstance(value, list):
        if not value:
            return []
        leaves = []
        for index, item in enumerate(value):
            leaves += _walk(item, f"{path}[{index}]")
        return leaves
    return [(path, value)]


@dataclass
class _Mapped:
    """What one n8n node became: its Flowbuilder node ids by role."""

    name: str
    n8n_type: str
    ids: dict[str, str] = field(default_factory=dict)
    mode: str = ""

    @property
    def main(self) -> str:
        return next(iter(self.ids.values()))


class N8nImporter:
    def __init__(self, data: dict[str, Any], origin: str, report: ImportReport) -> None:
        self.data = data
        self.origin = origin
        self.report = report
        self.ids = IdAllocator()
        self.flow = Flow(name=str(data.get("name") or "Imported n8n workflow"))
        self.mapped: dict[str, _Mapped] = {}
        self.secrets: set[str] = set()
        self.outcomes: dict[str, NodeOutcome] = {}

    # -- nodes -----------------------------------------------------------------------------------
    def run(self) -> Flow:
        nodes = self.data.get("nodes")
        if not isinstance(nodes, list):
            raise FlowFileError(self.origin, 'n8n workflow has no "nodes" list')
        seen_names: set[str] = set()
        for index, node in enumerate(nodes):
            if not isinstance(node, dict):
                raise FlowFileError(self.origin, f"n8n node #{index + 1} is not an object")
            for key in ("type", "name"):
                if not isinstance(node.get(key), str) or not node.get(key):
                    raise FlowFileError(
                        self.origin, f'n8n node #{index + 1} has no "{key}" string; every node needs "type" and "name"'
                    )
            if node["name"] in seen_names:
                raise FlowFileError(self.origin, f"n8n node name {node['name']!r} is used twice; names must be unique")
            seen_names.add(node["name"])
            if not isinstance(node.get("parameters", {}), dict):
                raise FlowFileError(self.origin, f'n8n node {node["name"]!r}: "parameters" is not an object')
        for node in nodes:
            self._import_node(node)
        self._import_connections()
        self.flow.meta["source"] = {"format": "n8n", "name": self.data.get("name"), "id": self.data.get("id")}
        self.report.flow_name = self.flow.name
        return self.flow

    def _position(self, node: dict[str, Any]) -> Position:
        pos = node.get("position")
        if isinstance(pos, list) and len(pos) >= 2 and all(isinstance(v, int | float) for v in pos[:2]):
            return Position(x=float(pos[0]), y=float(pos[1]))
        self.report.warnings.append(f"{node['name']!r}: no usable position; placed at (0, 0)")
        return Position()

    def _import_node(self, node: dict[str, Any]) -> None:
        name, kind = node["name"], short_type(node["type"])
        params: dict[str, Any] = node.get("parameters") or {}
        for path, value in find_key_shaped(params):
            remember_secret(self.secrets, value)
            self.report.secret(name, path)
        if kind == STICKY:
            note_id = self.ids.take(slugify(name, "note"))
            color = params.get("color")
            self.flow.notes.append(
                Note(
                    id=note_id,
                    text=str(params.get("content", "")),
                    width=params.get("width") if isinstance(params.get("width"), int | float) else None,
                    height=params.get("height") if isinstance(params.get("height"), int | float) else None,
                    color=str(color) if color is not None else None,
                )
            )
            self.flow.layout.positions[note_id] = self._position(node)
            self.report.notes += 1
            outcome = self.report.node(name, node["type"])
            outcome.note = f"note '{note_id}'"
            return
        for path, value in _walk(params):
            if is_expression(value):
                self.report.expression(name, path, value)
            elif isinstance(value, dict) and is_expression(value.get("value")):
                self.report.expression(name, path, value["value"])
        outcome = self.report.node(name, node["type"])
        self.outcomes[name] = outcome
        mapper = _MAPPERS.get(kind)
        if kind.startswith("vectorStore") and kind in STORE_TYPES:
            mapper = N8nImporter._map_store
        used: set[str] = set()
        specs: list[tuple[str, NodeSpec]] = mapper(self, node, params, used) if mapper else []
        if not specs:
            specs = [("main", self._placeholder(node))]
        else:
            dropped: list[str] = []
            for path, _value in _walk(params):
                short = path.split("[")[0]
                if short not in used and not any(short.startswith(u + ".") for u in used) and short not in dropped:
                    dropped.append(short)
            for path in dropped:
                self.report.drop(name, path)
        mapped = _Mapped(name, kind, mode=str(params.get("mode", "")))
        position = self._position(node)
        for offset, (role, spec) in enumerate(specs):
            spec.disabled = bool(node.get("disabled", False))
            if spec.type != PLACEHOLDER:
                self._credentials(node, spec)
            self.flow.nodes.append(spec)
            mapped.ids[role] = spec.id
            self.flow.layout.positions[spec.id] = Position(x=position.x, y=position.y + 160 * offset)
            outcome.targets.append((spec.id, spec.type))
        self.mapped[name] = mapped

    def _new_spec(self, node: dict[str, Any], type_name: str, config: dict[str, Any], suffix: str = "") -> NodeSpec:
        stem = slugify(node["name"]) + (f"-{suffix}" if suffix else "")
        label = node["name"].strip() + (f" ({suffix})" if suffix else "")
        return NodeSpec(id=self.ids.take(stem), type=type_name, name=label, config=config)

    def _placeholder(self, node: dict[str, Any]) -> NodeSpec:
        original = scrub(copy.deepcopy(node), self.secrets)
        config = {"source_format": "n8n", "original_type": node["type"], "original": original}
        for cred_type, ref in (node.get("credentials") or {}).items():
            if isinstance(ref, dict):
                provider = CREDENTIAL_PROVIDERS.get(cred_type, cred_type)
                self.report.credentials.append(CredentialFound(node["name"], "", provider, str(ref.get("name") or "")))
        return NodeSpec(
            id=self.ids.take(slugify(node["name"])), type=PLACEHOLDER, name=node["name"].strip(), config=config
        )

    def _credentials(self, node: dict[str, Any], spec: NodeSpec) -> None:
        creds = node.get("credentials") or {}
        slot = credential_slot(spec.type)
        if not isinstance(creds, dict) or slot is None:
            return
        for cred_type, ref in creds.items():
            if not isinstance(ref, dict):
                continue
            provider = CREDENTIAL_PROVIDERS.get(cred_type, cred_type)
            name = str(ref.get("name") or "")
            if not name:
                name = "default"
                if ref.get("__aiGatewayManaged"):
                    self.report.warnings.append(
                        f"{node['name']!r}: uses n8n-managed {provider} credits (no credential of its own); "
                        f"bound as {provider} / 'default': give your own key"
                    )
            spec.credentials[slot.name] = CredentialRef(provider=provider, name=name)
        record_credentials(spec, self.report)

    # -- parameter reading ----------------------------------------------------------------------
    def param(self, node: dict[str, Any], params: dict[str, Any], path: str, used: set[str], ours: Any = None) -> Any:
        """A literal parameter value, n8n's default when omitted, or ``ours`` for an expression."""
        used.add(path)
        value = _get_path(params, path)
        if isinstance(value, dict) and value.get("__rl") is True:
            value = value.get("value")
        if value is None or value == "":
            default = N8N_DEFAULTS.get(_defaults_key(short_type(node["type"])), {}).get(path)
            if default is not None:
                self.report.default(node["name"], path, default, "n8n default, omitted in the export")
            return default
        if is_expression(value):
            return ours  # the expression itself is already in the report
        if isinstance(value, str) and value.startswith("="):
            return value[1:]
        return value

    # -- mappers --------------------------------------------------------------------------------
    def _map_form(self, node: dict[str, Any], params: dict[str, Any], used: set[str]) -> list[tuple[str, NodeSpec]]:
        return [("main", self._new_spec(node, "input.file", {}))]

    def _map_chat_trigger(
        self, node: dict[str, Any], params: dict[str, Any], used: set[str]
    ) -> list[tuple[str, NodeSpec]]:
        return [("main", self._new_spec(node, "chat.input", {}))]

    def _map_loader(self, node: dict[str, Any], params: dict[str, Any], used: set[str]) -> list[tuple[str, NodeSpec]]:
        used.update({"dataType", "loader", "textSplittingMode"})
        if params.get("dataType", "json") != "binary":
            self.report.drop(
                node["name"], "dataType", f"{params.get('dataType', 'json')!r}: only files are loaded (binary)"
            )
        specs = [("main", self._new_spec(node, "loader.file", {}))]
        version = node.get("typeVersion", 1)
        if (
            isinstance(version, int | float)
            and version >= 1.1
            and params.get("textSplittingMode", "simple") != "custom"
        ):
            # n8n's "simple" mode splits with a recursive splitter of 1000/200 built into the loader.
            splitter = self._new_spec(
                node, "splitter.recursive", {"chunk_size": 1000, "chunk_overlap": 200}, "splitter"
            )
            self.report.default(
                node["name"], "textSplittingMode", "simple", "n8n's built-in splitter 1000/200 made explicit"
            )
            specs.append(("splitter", splitter))
        return specs

    def _map_recursive(
        self, node: dict[str, Any], params: dict[str, Any], used: set[str]
    ) -> list[tuple[str, NodeSpec]]:
        config = {
            "chunk_size": self.param(node, params, "chunkSize", used, 1000),
            "chunk_overlap": self.param(node, params, "chunkOverlap", used, 0),
        }
        return [("main", self._new_spec(node, "splitter.recursive", config))]

    def _map_character(
        self, node: dict[str, Any], params: dict[str, Any], used: set[str]
    ) -> list[tuple[str, NodeSpec]]:
        config = {
            "separator": self.param(node, params, "separator", used, "\n\n") or "\n\n",
            "chunk_size": self.param(node, params, "chunkSize", used, 1000),
            "chunk_overlap": self.param(node, params, "chunkOverlap", used, 0),
        }
        return [("main", self._new_spec(node, "splitter.character", config))]

    def _map_openai_embedder(
        self, node: dict[str, Any], params: dict[str, Any], used: set[str]
    ) -> list[tuple[str, NodeSpec]]:
        default = "text-embedding-ada-002" if node.get("typeVersion", 1) == 1 else "text-embedding-3-small"
        model = _get_path(params, "model")
        used.add("model")
        if model is None:
            self.report.default(node["name"], "model", default, "n8n default for this typeVersion")
            model = default
        elif is_expression(model):
            model = default
        config: dict[str, Any] = {"model": model}
        dimensions = self.param(node, params, "options.dimensions", used)
        if isinstance(dimensions, int) and dimensions > 0:
            config["dimensions"] = dimensions
        base_url = self.param(node, params, "options.baseURL", used)
        if base_url:
            config["base_url"] = base_url
        return [("main", self._new_spec(node, "embedder.openai", config))]

    def _map_ollama_embedder(
        self, node: dict[str, Any], params: dict[str, Any], used: set[str]
    ) -> list[tuple[str, NodeSpec]]:
        return [
            (
                "main",
                self._new_spec(node, "embedder.ollama", {"model": self.param(node, params, "model", used, "llama3.2")}),
            )
        ]

    def _map_chat_model(
        self, node: dict[str, Any], params: dict[str, Any], used: set[str]
    ) -> list[tuple[str, NodeSpec]]:
        kind = short_type(node["type"])
        type_name = {"lmChatOpenAi": "llm.openai", "lmChatGroq": "llm.groq", "lmChatOllama": "llm.ollama"}[kind]
        config: dict[str, Any] = {}
        model = self.param(node, params, "model", used)
        if model:
            config["model"] = model
        temperature = self.param(node, params, "options.temperature", used)
        if isinstance(temperature, int | float):
            config["temperature"] = float(temperature)
        max_tokens = self.param(node, params, "options.maxTokens", used)
        if isinstance(max_tokens, int) and max_tokens > 0:
            config["max_tokens"] = max_tokens
        timeout = self.param(node, params, "options.timeout", used)
        if isinstance(timeout, int | float) and timeout > 0:
            config["timeout"] = timeout / 1000  # n8n counts milliseconds
        retries = self.param(node, params, "options.maxRetries", used)
        if isinstance(retries, int):
            config["max_retries"] = retries
        base_url = self.param(node, params, "options.baseURL", used) or self.param(node, params, "baseUrl", used)
        if base_url:
            config["base_url"] = base_url
        used.add("builtInTools")
        return [("main", self._new_spec(node, type_name, config))]

    def _map_memory(self, node: dict[str, Any], params: dict[str, Any], used: set[str]) -> list[tuple[str, NodeSpec]]:
        used.update({"sessionIdType", "sessionKey"})
        window = self.param(node, params, "contextWindowLength", used, 5)
        return [("main", self._new_spec(node, "memory.window", {"window": window}))]

    def _map_agent(self, node: dict[str, Any], params: dict[str, Any], used: set[str]) -> list[tuple[str, NodeSpec]]:
        used.update({"promptType", "text"})
        if params.get("promptType") == "define":
            self.report.drop(node["name"], "text", "a defined prompt; the agent takes the chat message as its input")
        config: dict[str, Any] = {
            "system_message": self.param(node, params, "options.systemMessage", used, "You are a helpful assistant")
            or "You are a helpful assistant",
            "max_steps": self.param(node, params, "options.maxIterations", used, 10),
        }
        return [("main", self._new_spec(node, "agent.tools", config))]

    def _map_store(self, node: dict[str, Any], params: dict[str, Any], used: set[str]) -> list[tuple[str, NodeSpec]]:
        kind = short_type(node["type"])
        type_name = STORE_TYPES[kind]
        mode = self.param(node, params, "mode", used, "retrieve")
        config: dict[str, Any] = {}
        if type_name == "vectorstore.pinecone":
            config["index"] = self.param(node, params, "pineconeIndex", used, "") or ""
            namespace = self.param(node, params, "options.pineconeNamespace", used)
            if namespace:
                config["namespace"] = namespace
        else:
            config["collection"] = self.param(node, params, "memoryKey", used, "vector_store_key") or "vector_store_key"
            self.report.warnings.append(
                f"{node['name']!r}: n8n's in-memory store becomes an embedded Chroma collection"
            )
        specs = [("store", self._new_spec(node, type_name, config))]
        if mode in ("load", "retrieve-as-tool"):
            k = self.param(node, params, "topK", used, 4)
            if mode == "load":
                used.add("prompt")
                specs.append(("retriever", self._new_spec(node, "retriever.vector", {"k": k}, "retriever")))
            else:
                tool_name = self.param(node, params, "toolName", used) or slugify(node["name"]).replace("-", "_")
                tool_config: dict[str, Any] = {"name": tool_name, "k": k}
                description = self.param(node, params, "toolDescription", used)
                if description:
                    tool_config["description"] = description
                specs.append(("tool", self._new_spec(node, "retriever.tool", tool_config, "tool")))
        elif mode not in ("insert", "retrieve"):
            self.report.drop(node["name"], "mode", f"{mode!r} is not supported; the node is kept as a store")
        if params.get("useReranker"):
            self.report.drop(node["name"], "useReranker", "reranking is not supported; results are not reranked")
            used.add("useReranker")
        return specs

    # -- connections ----------------------------------------------------------------------------
    def _import_connections(self) -> None:
        connections = self.data.get("connections") or {}
        if not isinstance(connections, dict):
            raise FlowFileError(self.origin, '"connections" is not an object')
        links: list[tuple[str, str, str, str]] = []
        for source, outputs in connections.items():
            if not isinstance(outputs, dict):
                raise FlowFileError(self.origin, f"connections of {source!r} are not an object")
            for conn_type, groups in outputs.items():
                for group in groups or []:
                    for link in group or []:
                        if not isinstance(link, dict) or not isinstance(link.get("node"), str):
                            raise FlowFileError(
                                self.origin, f"a {conn_type} connection of {source!r} has no target node"
                            )
                        links.append((source, str(conn_type), link["node"], str(link.get("type") or conn_type)))
        splitter_of: dict[str, str] = {}
        loaders_of: dict[str, list[str]] = {}
        for source, conn_type, target, _ in links:
            if conn_type == "ai_textSplitter":
                splitter_of[target] = source
            elif conn_type == "ai_document":
                loaders_of.setdefault(target, []).append(source)
        for source, conn_type, target, in_type in links:
            if source not in self.mapped or target not in self.mapped:
                missing = source if source not in self.mapped else target
                self.report.connections_dropped.append(
                    f"{source!r} -{conn_type}-> {target!r}: no node named {missing!r}"
                )
                continue
            self._connect(source, conn_type, target, in_type, splitter_of, loaders_of)
        # n8n's simple text-splitting mode: the loader's built-in splitter sits between loader and store.
        for mapped in self.mapped.values():
            if "splitter" in mapped.ids and mapped.n8n_type == "documentDefaultDataLoader":
                self._edge(mapped.ids["main"], "records", mapped.ids["splitter"], "documents")
            for role in ("tool", "retriever"):
                if role in mapped.ids and "store" in mapped.ids:
                    self._edge(mapped.ids["store"], "store", mapped.ids[role], "store")

    def _edge(self, source: str, source_port: str, target: str, target_port: str) -> None:
        for end, port, key in ((source, source_port, "output_names"), (target, target_port, "input_names")):
            spec = self.flow.node(end)
            if spec.type == PLACEHOLDER and port not in spec.config.setdefault(key, []):
                spec.config[key].append(port)
        edge = Edge(source=source, source_port=source_port, target=target, target_port=target_port)
        if all(e.key != edge.key for e in self.flow.edges):
            self.flow.edges.append(edge)

    def _type(self, name: str, role: str = "main") -> str:
        mapped = self.mapped[name]
        return self.flow.node(mapped.ids.get(role, mapped.main)).type

    def _connect(
        self,
        source: str,
        conn_type: str,
        target: str,
        in_type: str,
        splitter_of: dict[str, str],
        loaders_of: dict[str, list[str]],
    ) -> None:
        src, tgt = self.mapped[source], self.mapped[target]
        src_type, tgt_type = self._type(source), self._type(target)
        if conn_type == "ai_textSplitter" and tgt_type in ("loader.file", PLACEHOLDER):
            port = "records" if tgt_type == "loader.file" else "ai_document"
            self._edge(tgt.main, port, src.main, "documents")
            return
        if conn_type == "ai_document" and src_type in ("loader.file", PLACEHOLDER):
            feeder, port = src.main, "records" if src_type == "loader.file" else "ai_document"
            splitter = splitter_of.get(source)
            if splitter in self.mapped:
                feeder, port = self.mapped[splitter].main, "chunks"
            elif "splitter" in src.ids:
                feeder, port = src.ids["splitter"], "chunks"
            target_port = "documents" if tgt_type != PLACEHOLDER else "ai_document"
            self._edge(feeder, port, tgt.ids.get("store", tgt.main), target_port)
            return
        if conn_type == "main" and src_type == "input.file" and tgt.mode == "insert" and "store" in tgt.ids:
            loaders = [self.mapped[n] for n in loaders_of.get(target, []) if n in self.mapped]
            loaders = [m for m in loaders if self._type(m.name) == "loader.file"]
            if not loaders:
                self.report.connections_dropped.append(f"{source!r} -main-> {target!r}: the store has no data loader")
            for loader in loaders:
                self._edge(src.main, "path", loader.main, "path")
            return
        out = self._out_port(src, src_type, conn_type)
        inp = self._in_port(tgt, tgt_type, in_type)
        if out is None or inp is None:
            side = "source" if out is None else "target"
            node_type = src_type if out is None else tgt_type
            self.report.connections_dropped.append(
                f"{source!r} -{conn_type}-> {target!r}: the {side} ({node_type}) has no matching port"
            )
            return
        self._edge(out[0], out[1], inp[0], inp[1])

    @staticmethod
    def _out_port(mapped: _Mapped, type_name: str, conn_type: str) -> tuple[str, str] | None:
        if type_name == PLACEHOLDER:
            return mapped.main, conn_type
        ids = mapped.ids
        table = {
            "ai_embedding": ("embedder", ("embedder.openai", "embedder.ollama", "embedder.local")),
            "ai_languageModel": ("model", ("llm.openai", "llm.groq", "llm.ollama")),
            "ai_memory": ("memory", ("memory.window",)),
        }
        if conn_type in table and type_name in table[conn_type][1]:
            return mapped.main, table[conn_type][0]
        if conn_type == "ai_tool" and "tool" in ids:
            return ids["tool"], "tool"
        if conn_type in ("ai_vectorStore",) and "store" in ids:
            return ids["store"], "store"
        if conn_type == "ai_retriever" and "retriever" in ids:
            return ids["retriever"], "retriever"
        if conn_type == "main":
            if "retriever" in ids:
                return ids["retriever"], "hits"
            ports = {"chat.input": "message", "input.file": "path", "agent.tools": "answer", "loader.file": "records"}
            if type_name in ports:
                return mapped.main, ports[type_name]
            if "store" in ids:
                return ids["store"], "hits"
        return None

    @staticmethod
    def _in_port(mapped: _Mapped, type_name: str, conn_type: str) -> tuple[str, str] | None:
        if type_name == PLACEHOLDER:
            return mapped.main, conn_type
        ids = mapped.ids
        if "store" in ids:
            if conn_type == "ai_embedding":
                return ids["store"], "embedder"
            if conn_type == "main" and "retriever" in ids:
                return ids["retriever"], "query"
            if conn_type == "main":
                return ids["store"], "query"
            return None
        if type_name == "agent.tools":
            ports = {"main": "message", "ai_languageModel": "model", "ai_memory": "memory", "ai_tool": "tools"}
            return (mapped.main, ports[conn_type]) if conn_type in ports else None
        if type_name == "loader.file" and conn_type == "main":
            return mapped.main, "path"
        return None


def _defaults_key(kind: str) -> str:
    return "vectorStore" if kind.startswith("vectorStore") else kind


_MAPPERS: dict[str, Any] = {
    "formTrigger": N8nImporter._map_form,
    "chatTrigger": N8nImporter._map_chat_trigger,
    "manualChatTrigger": N8nImporter._map_chat_trigger,
    "documentDefaultDataLoader": N8nImporter._map_loader,
    "textSplitterRecursiveCharacterTextSplitter": N8nImporter._map_recursive,
    "textSplitterCharacterTextSplitter": N8nImporter._map_character,
    "embeddingsOpenAi": N8nImporter._map_openai_embedder,
    "embeddingsOllama": N8nImporter._map_ollama_embedder,
    "lmChatOpenAi": N8nImporter._map_chat_model,
    "lmChatGroq": N8nImporter._map_chat_model,
    "lmChatOllama": N8nImporter._map_chat_model,
    "memoryBufferWindow": N8nImporter._map_memory,
    "agent": N8nImporter._map_agent,
}


def import_n8n(data: dict[str, Any], origin: str = "<n8n>") -> tuple[Flow, ImportReport]:
    """Convert a parsed n8n workflow into a Flowbuilder flow and an import report."""
    report = ImportReport(source_format="n8n", source_file=origin)
    importer = N8nImporter(data, origin, report)
    flow = importer.run()
    flow.layout.viewport = Viewport()
    return flow, report


# ==== export ========================================================================================

_UUID_NS = uuid.UUID("5f0c7a4e-4a43-4c2e-9a59-3b1f3e8a7c11")
_STORE_EXPORT = {
    "vectorstore.pinecone": ("vectorStorePinecone", 1.3),
    "vectorstore.chroma": ("vectorStoreInMemory", 1.1),
}
_AI_PORTS = {"embedder": "ai_embedding", "model": "ai_languageModel", "memory": "ai_memory", "tool": "ai_tool"}


class N8nExporter:
    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.warnings: list[str] = []
        self.nodes: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}
        """Flowbuilder node id -> the n8n node name that carries it."""
        self.store_nodes: dict[str, list[str]] = {}
        """Store id -> names of every n8n node made from it (one per role)."""
        self.insert_node: dict[str, str] = {}
        self.taken: set[str] = set()
        self.connections: dict[str, dict[str, list[list[dict[str, Any]]]]] = {}

    def _name(self, spec_name: str) -> str:
        base = spec_name.strip() or "Node"
        name, index = base, 1
        while name in self.taken:
            name = f"{base}{index}"
            index += 1
        self.taken.add(name)
        return name

    def _node(
        self, spec: NodeSpec, n8n_type: str, version: float, params: dict[str, Any], name: str | None = None
    ) -> str:
        name = name or self._name(spec.name or spec.id)
        pos = self.flow.position(spec.id)
        node: dict[str, Any] = {
            "parameters": params,
            "type": n8n_type,
            "typeVersion": version,
            "position": [round(pos.x), round(pos.y)],
            "id": str(uuid.uuid5(_UUID_NS, f"{self.flow.name}/{spec.id}/{name}")),
            "name": name,
        }
        if n8n_type.endswith(("formTrigger", "chatTrigger")):
            node["webhookId"] = str(uuid.uuid5(_UUID_NS, f"webhook/{self.flow.name}/{spec.id}"))
        slot = credential_slot(spec.type)
        ref = spec.credentials.get(slot.name) if slot else None
        if slot is not None and slot.provider in PROVIDER_CREDENTIALS:
            cred_name = ref.name if ref else "default"
            node["credentials"] = {PROVIDER_CREDENTIALS[slot.provider]: {"id": None, "name": cred_name}}
        if spec.disabled:
            node["disabled"] = True
        self.nodes.append(node)
        return name

    def _incoming(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self.flow.edges if e.target == node_id and (port is None or e.target_port == port)]

    def _outgoing(self, node_id: str, port: str | None = None) -> list[Edge]:
        return [e for e in self.flow.edges if e.source == node_id and (port is None or e.source_port == port)]

    def run(self) -> dict[str, Any]:
        for note in self.flow.notes:
            pos = self.flow.position(note.id)
            params: dict[str, Any] = {"content": note.text}
            if note.height is not None:
                params["height"] = note.height
            if note.width is not None:
                params["width"] = note.width
            if note.color is not None:
                params["color"] = int(note.color) if note.color.isdigit() else note.color
            name = self._name(note.id.replace("-", " ").title() if note.id.startswith("sticky") else note.id)
            self.nodes.append(
                {
                    "parameters": params,
                    "type": BASE + STICKY,
                    "position": [round(pos.x), round(pos.y)],
                    "typeVersion": 1,
                    "id": str(uuid.uuid5(_UUID_NS, f"{self.flow.name}/note/{note.id}")),
                    "name": name,
                }
            )
        by_type = {"retriever.tool", "retriever.vector"}
        for spec in self.flow.nodes:
            if spec.type not in by_type:
                self._export_node(spec)
        for spec in self.flow.nodes:
            if spec.type in by_type and spec.id not in self.names:
                self.warnings.append(
                    f"{spec.id}: a {spec.type} without a vector store cannot be expressed in n8n; left out"
                )
        for edge in self.flow.edges:
            self._export_edge(edge)
        return {
            "name": self.flow.name,
            "nodes": self.nodes,
            "pinData": {},
            "connections": self.connections,
            "active": False,
            "settings": {"executionOrder": "v1"},
            "meta": {"generatedBy": "flowbuilder"},
            "tags": [],
        }

    def _export_node(self, spec: NodeSpec) -> None:
        c = spec.config
        t = spec.type
        if t == PLACEHOLDER:
            original = c.get("original") if c.get("source_format") == "n8n" else None
            if not isinstance(original, dict):
                self.warnings.append(
                    f"{spec.id}: placeholder for {c.get('source_format')} type {c.get('original_type')!r} "
                    "has no n8n form; left out"
                )
                return
            node = copy.deepcopy(original)
            node["name"] = self._name(str(node.get("name") or spec.name or spec.id))
            pos = self.flow.position(spec.id)
            node["position"] = [round(pos.x), round(pos.y)]
            if spec.disabled:
                node["disabled"] = True
            self.nodes.append(node)
            self.names[spec.id] = node["name"]
            return
        if t in _STORE_EXPORT:
            self._export_store(spec)
            return
        simple: dict[str, tuple[str, float, dict[str, Any]]] = {}
        if t == "input.file":
            fields = {"values": [{"fieldLabel": "File", "fieldType": "file", "fieldName": "files"}]}
            simple[t] = (
                BASE + "formTrigger",
                2.6,
                {"formTitle": spec.name or "Upload a file", "formFields": fields, "options": {}},
            )
        elif t == "chat.input":
            simple[t] = (LC + "chatTrigger", 1.1, {"options": {}})
        elif t == "loader.file":
            splitters = [
                e
                for e in self._outgoing(spec.id, "records")
                if self.flow.node(e.target).type.startswith("splitter.") or self.flow.node(e.target).type == PLACEHOLDER
            ]
            params: dict[str, Any] = {"dataType": "binary", "options": {}}
            if splitters:
                params["textSplittingMode"] = "custom"
            else:
                self.warnings.append(
                    f"{spec.id}: no splitter wired; n8n's loader will split with its built-in 1000/200 splitter"
                )
            if c.get("path"):
                self.warnings.append(
                    f"{spec.id}: path {c['path']!r} not exported; n8n loads the file given to the form trigger"
                )
            simple[t] = (LC + "documentDefaultDataLoader", 1.1, params)
        elif t == "splitter.recursive":
            params = {}
            if c.get("chunk_size", 1000) != 1000:
                params["chunkSize"] = c.get("chunk_size", 1000)
            if c.get("chunk_overlap", 200) != 0:
                params["chunkOverlap"] = c.get("chunk_overlap", 200)
            simple[t] = (LC + "textSplitterRecursiveCharacterTextSplitter", 1, {**params, "options": {}})
        elif t == "splitter.character":
            params = {"separator": c.get("separator", "\n\n")}
            if c.get("chunk_size", 1000) != 1000:
                params["chunkSize"] = c.get("chunk_size", 1000)
            if c.get("chunk_overlap", 200) != 0:
                params["chunkOverlap"] = c.get("chunk_overlap", 200)
            simple[t] = (LC + "textSplitterCharacterTextSplitter", 1, params)
        elif t == "embedder.openai":
            params = {}
            if c.get("model", "text-embedding-3-small") != "text-embedding-3-small":
                params["model"] = c["model"]
            extra = {k: v for k, v in (("dimensions", c.get("dimensions")), ("baseURL", c.get("base_url"))) if v}
            simple[t] = (LC + "embeddingsOpenAi", 1.2, {**params, "options": extra})
        elif t == "embedder.ollama":
            simple[t] = (LC + "embeddingsOllama", 1, {"model": c.get("model", "nomic-embed-text")})
        elif t in ("llm.openai", "llm.groq", "llm.ollama"):
            simple[t] = self._chat_model(spec)
        elif t == "memory.window":
            window = c.get("window", 5)
            simple[t] = (LC + "memoryBufferWindow", 1.3, {} if window == 5 else {"contextWindowLength": window})
        elif t == "agent.tools":
            options: dict[str, Any] = {}
            if c.get("system_message") and c["system_message"] != "You are a helpful assistant":
                options["systemMessage"] = c["system_message"]
            if c.get("max_steps", 5) != 10:
                options["maxIterations"] = c.get("max_steps", 5)
            simple[t] = (LC + "agent", 3.1, {"options": options})
        if t not in simple:
            note = "chat output: n8n answers in the chat trigger" if t == "chat.output" else f"no n8n node for {t}"
            self.warnings.append(f"{spec.id}: {note}; left out")
            return
        n8n_type, version, params = simple[t]
        self.names[spec.id] = self._node(spec, n8n_type, version, params)

    def _chat_model(self, spec: NodeSpec) -> tuple[str, float, dict[str, Any]]:
        c = spec.config
        options: dict[str, Any] = {}
        if c.get("temperature", 0.2) != 0.7:
            options["temperature"] = c.get("temperature", 0.2)
        if c.get("max_tokens"):
            options["maxTokens"] = c["max_tokens"]
        if c.get("timeout") not in (None, 60):
            options["timeout"] = int(float(c["timeout"]) * 1000)
        if c.get("max_retries") not in (None, 2):
            options["maxRetries"] = c["max_retries"]
        if spec.type == "llm.openai":
            if c.get("base_url"):
                options["baseURL"] = c["base_url"]
            model = {"__rl": True, "mode": "list", "value": c.get("model", "gpt-4o-mini")}
            return LC + "lmChatOpenAi", 1.2, {"model": model, "options": options}
        if spec.type == "llm.groq":
            return LC + "lmChatGroq", 1, {"model": c.get("model", "llama-3.1-8b-instant"), "options": options}
        if c.get("base_url"):
            self.warnings.append(f"{spec.id}: Ollama base_url lives in n8n's ollamaApi credential; not exported")
        return LC + "lmChatOllama", 1, {"model": c.get("model", "llama3.2"), "options": options}

    def _export_store(self, spec: NodeSpec) -> None:
        c = spec.config
        n8n_kind, version = _STORE_EXPORT[spec.type]
        base: dict[str, Any] = {}
        if spec.type == "vectorstore.pinecone":
            index = c.get("index", "")
            base["pineconeIndex"] = {"__rl": True, "value": index, "mode": "list", "cachedResultName": index}
            options = {"pineconeNamespace": c["namespace"]} if c.get("namespace") else {}
        else:
            base["memoryKey"] = c.get("collection", "flowbuilder")
            options = {}
        consumers = [self.flow.node(e.target) for e in self._outgoing(spec.id, "store")]
        consumers = [n for n in consumers if n.type in ("retriever.tool", "retriever.vector")]
        has_docs = bool(self._incoming(spec.id, "documents"))
        names: list[str] = []
        if has_docs or not consumers:
            mode = "insert" if has_docs else "load" if self._incoming(spec.id, "query") else "retrieve"
            params = {"mode": mode, **base}
            if mode == "load" and c.get("k", 4) != 4:
                params["topK"] = c.get("k", 4)
            name = self._node(spec, LC + n8n_kind, version, {**params, "options": dict(options)})
            self.names[spec.id] = name
            self.insert_node[spec.id] = name
            names.append(name)
        for consumer in consumers:
            params = {"mode": "retrieve-as-tool" if consumer.type == "retriever.tool" else "load"}
            if consumer.type == "retriever.tool":
                params["toolDescription"] = consumer.config.get(
                    "description", "Search the knowledge base and return the most relevant passages."
                )
            params.update(base)
            if consumer.config.get("k", 4) != 4:
                params["topK"] = consumer.config.get("k", 4)
            label = spec.name if not names else consumer.name or consumer.id
            name = self._node(spec, LC + n8n_kind, version, {**params, "options": dict(options)}, self._name(label))
            self.names[consumer.id] = name
            self.names.setdefault(spec.id, name)
            names.append(name)
        self.store_nodes[spec.id] = names

    def _link(self, source: str, conn_type: str, target: str) -> None:
        groups = self.connections.setdefault(source, {}).setdefault(conn_type, [[]])
        link = {"node": target, "type": conn_type, "index": 0}
        if link not in groups[0]:
            groups[0].append(link)

    def _export_edge(self, edge: Edge) -> None:
        source, target = self.flow.find_node(edge.source), self.flow.find_node(edge.target)
        if source is None or target is None:
            return
        if target.type in ("retriever.tool", "retriever.vector") and edge.target_port == "store":
            return  # merged into the store's n8n node
        src_name, tgt_name = self.names.get(source.id), self.names.get(target.id)
        if src_name is None or tgt_name is None:
            self.warnings.append(f"connection {edge.key}: an end was left out of the n8n export")
            return
        if source.type == PLACEHOLDER and edge.source_port.startswith(("ai_", "main")):
            self._link(src_name, edge.source_port, self._target_for(target, tgt_name))
            return
        if target.type == PLACEHOLDER and edge.target_port.startswith(("ai_", "main")):
            self._link(src_name, edge.target_port, tgt_name)
            return
        port = edge.target_port
        if port in ("embedder",) and target.id in self.store_nodes:
            for name in self.store_nodes[target.id]:
                self._link(src_name, "ai_embedding", name)
            return
        if edge.source_port in _AI_PORTS and target.type == "agent.tools" and port in ("model", "memory", "tools"):
            self._link(src_name, _AI_PORTS[edge.source_port], tgt_name)
            return
        if (port == "documents" and target.type.startswith("splitter.")) or (
            target.type == PLACEHOLDER and port == "documents"
        ):
            self._link(tgt_name, "ai_textSplitter", src_name)  # sub-node -> root: splitter into the loader
            return
        if port == "documents" and target.id in self.store_nodes:
            loader = source
            if source.type.startswith("splitter.") or source.type == PLACEHOLDER:
                feeders = [self.flow.node(e.source) for e in self._incoming(source.id, "documents")]
                loaders = [f for f in feeders if f.type == "loader.file"]
                if not loaders:
                    self.warnings.append(f"connection {edge.key}: n8n needs a data loader in front of the splitter")
                    return
                loader = loaders[0]
            self._link(self.names[loader.id], "ai_document", self.insert_node.get(target.id, tgt_name))
            return
        if source.type == "input.file" and target.type == "loader.file":
            for store in self._stores_fed_by(target.id):
                self._link(src_name, "main", self.insert_node.get(store, self.names[store]))
            return
        if source.type == "chat.input" and port in ("message", "query"):
            self._link(src_name, "main", tgt_name)
            return
        self.warnings.append(f"connection {edge.key}: no n8n connection type for it; left out")

    def _target_for(self, target: NodeSpec, name: str) -> str:
        return self.insert_node.get(target.id, name)

    def _stores_fed_by(self, loader_id: str) -> list[str]:
        found: list[str] = []
        frontier = [loader_id]
        while frontier:
            node_id = frontier.pop()
            for edge in self._outgoing(node_id):
                target = self.flow.node(edge.target)
                if target.id in self.store_nodes and edge.target_port == "documents":
                    found.append(target.id)
                elif edge.target_port == "documents":
                    frontier.append(target.id)
        return found


def export_n8n(flow: Flow) -> tuple[dict[str, Any], list[str]]:
    """An n8n workflow JSON for ``flow``, and warnings for what n8n cannot express."""
    exporter = N8nExporter(flow)
    data = exporter.run()
    return data, exporter.warnings
