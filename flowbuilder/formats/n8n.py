"""n8n workflow JSON -> Flowbuilder flows, by walking :data:`n8n_table.N8N_TABLE` (export: n8n_export.py).

n8n wires LangChain sub-nodes into their root node with ``ai_*`` connections (embedder -> vector store,
model/memory/tool -> agent, splitter -> loader, loader -> store); those become our service ports and a
plain loader -> splitter -> store data path. Expressions (``={{ ... }}``) are never evaluated: they are
listed in the report and our default is used. Parameters n8n omits get n8n's default from the table
(stated in the report), since our defaults sometimes differ.

Structural hooks (what no table row can say): ``store`` (one n8n vector-store node per mode becomes a
store plus a retriever or tool node), ``loader`` (the data loader's built-in splitter and its inverted
``ai_textSplitter`` link), ``form`` (the form's file field), ``cloud_file`` / ``http`` (a file fetched
from elsewhere becomes a file input or loader with a report line saying which file).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from flowbuilder.errors import FlowFileError
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import (
    Adapter,
    credential_slot,
    get_path,
    import_hook,
    node_class,
    read_params,
    to_int,
    within_bounds,
)
from flowbuilder.formats.code_summary import summarize_code
from flowbuilder.formats.http_tool_params import from_ai_templates, parameter_names_of
from flowbuilder.formats.mapping import (
    PLACEHOLDER,
    IdAllocator,
    find_secrets,
    record_credentials,
    remember_secret,
    scrub,
    slugify,
)
from flowbuilder.formats.n8n_table import (
    CREDENTIAL_PROVIDERS,
    MCP_SERVER_TRIGGER,
    MCP_SERVER_VERSIONS,
    N8N_TABLE,
    STICKY,
    STORE_PREFIX,
)
from flowbuilder.formats.report import CredentialFound, ImportReport, NodeOutcome
from flowbuilder.trust.providers import CredentialRef

_FETCHED_PAGE = (
    "fetched {what} at run time: Flowbuilder does not fetch pages; it reads the file its input gives "
    "(save the page and give it as the file input)"
)
_DOC_EXTENSIONS = (".pdf", ".csv", ".txt", ".md", ".json", ".html", ".htm", ".docx", ".xlsx")


def short_type(n8n_type: str) -> str:
    return n8n_type.rsplit(".", 1)[-1]


def is_expression(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("=") and "{{" in value


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
        leaves = []
        for index, item in enumerate(value):
            leaves += _walk(item, f"{path}[{index}]")
        return leaves
    return [(path, value)]


_FIELD_REF = re.compile(
    r"^=\{\{\s*(?:\$\(['\"](?P<node>[^'\"]+)['\"]\)\.(?:item|first\(\)|last\(\))\.json|\$json)"
    r"\.(?P<field>[A-Za-z_][A-Za-z0-9_]*)\s*\}\}$"
)


def _lookup(params: dict[str, Any], resolve: Callable[[str], Any] | None = None) -> Any:
    def lookup(path: str) -> tuple[str, Any]:
        found, value = get_path(params, path)
        if isinstance(value, dict) and value.get("__rl") is True:
            value = value.get("value")
        if not found or value is None or value == "":
            return "absent", None
        if is_expression(value):
            resolved = resolve(value) if resolve else None
            return ("set", resolved) if resolved is not None else ("expression", value)
        if isinstance(value, str) and value.startswith("="):
            return "set", value[1:]
        return "set", value

    return lookup


def _static_fields(node: dict[str, Any], partial: bool = False) -> dict[str, Any] | None:
    """The fields an Edit Fields node sets when every value is a literal; None otherwise. With
    ``partial``, the literal fields of one that also sets expressions."""
    entry = N8N_TABLE.importer(node["type"])
    if entry is None or not entry.extra.get("sets_fields"):
        return None
    params = node.get("parameters") or {}
    entries = (params.get("assignments") or {}).get("assignments")
    if entries is None:  # typeVersion < 3.3: {"values": {"string": [{"name", "value"}], ...}}
        entries = [e for group in (params.get("values") or {}).values() if isinstance(group, list) for e in group]
    fields: dict[str, Any] = {}
    for entry in entries or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return None
        value = entry.get("value")
        if is_expression(value) or is_expression(entry["name"]):
            if partial:
                continue
            return None
        fields[entry["name"]] = value[1:] if isinstance(value, str) and value.startswith("=") else value
    return fields or None


def _through_edit_fields(
    links: list[tuple[str, str, str, str]], absorbed: Iterable[str]
) -> list[tuple[str, str, str, str]]:
    """Links with each absorbed Edit Fields node bridged: A -> Set -> B becomes A -> B, in the file's order
    (a set here would make the saved edge order change from one process to the next)."""
    for name in absorbed:
        into = [link for link in links if link[2] == name]
        out_of = [link for link in links if link[0] == name]
        links = [link for link in links if name not in (link[0], link[2])]
        links += [(a[0], a[1], b[2], b[3]) for a in into for b in out_of]
    return links


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    """Independent loops, each once: the simple cycles of each strongly connected part, cut one by one."""
    graph = graph.copy()
    found: list[list[str]] = []
    while True:
        try:
            cycle = [a for a, _ in nx.find_cycle(graph)]
        except nx.NetworkXNoCycle:
            return found
        found.append(cycle)
        graph.remove_edge(cycle[-1], cycle[0])


@dataclass
class _Mapped:
    """What one n8n node became: its Flowbuilder node ids by role."""

    name: str
    n8n_type: str
    adapter: Adapter | None
    ids: dict[str, str] = field(default_factory=dict)
    mode: str = ""

    @property
    def main(self) -> str:
        return next(iter(self.ids.values()))


Specs = list[tuple[str, NodeSpec]]


class N8nImporter:
    """One n8n workflow read into a Flowbuilder flow: the table walk, the structural hooks and the report."""

    def __init__(self, data: dict[str, Any], origin: str, report: ImportReport) -> None:
        self.data = data
        self.origin = origin
        self.report = report
        self.ids = IdAllocator()
        self.flow = Flow(name=str(data.get("name") or "Imported n8n workflow"))
        self.mapped: dict[str, _Mapped] = {}
        self.secrets: set[str] = set()
        self.outcomes: dict[str, NodeOutcome] = {}
        self.rerankers: dict[str, str] = {}
        """Reranker node name -> the store node name it is wired into (ai_reranker)."""
        self.chains: dict[str, dict[str, Any]] = {}
        """Q&A chains: name -> {"model": llm id, "retriever": id, "question": [(id, port)], "answer": [...]}"""
        self.superseded: set[str] = set()
        """Data loaders whose store gets its records from upstream nodes instead."""
        self.static: dict[str, dict[str, Any]] = {}
        """Edit Fields nodes whose values are all literals: node name -> {field: value}."""
        self.webhooks: dict[str, Any] = {"entry": {}, "answer": []}
        """Webhook entries (chat.input id -> path, method) and Respond to Webhook answers (chat.output ids)."""
        self.routes: dict[str, Adapter] = {}
        """Routing nodes (If, Switch, Split In Batches...) absorbed: node name -> n8n type."""
        self.partial: dict[str, dict[str, Any]] = {}
        """Edit Fields nodes with some expression values: node name -> their literal fields."""
        self.mcp_servers: dict[str, dict[str, Any]] = {}
        """MCP Server Triggers: node name -> its parameters (the trigger becomes serving, not a node)."""

    def _resolve(self, node_name: str) -> Callable[[str], Any]:
        """Resolve ``$('Edit Fields').item.json.x`` (or ``$json.x``) to a static value an Edit Fields
        node sets; anything else stays an unevaluated expression."""

        def resolve(expression: str) -> Any:
            value = self._static_value(expression)
            if value is not None:
                self.report.warnings.append(
                    f"{node_name!r}: {expression} resolved to {value!r} (a static value of Edit Fields)"
                )
            return value

        return resolve

    def _static_value(self, expression: str) -> Any:
        match = _FIELD_REF.match(expression.strip())
        if match is None:
            return None
        known = {**self.partial, **self.static}
        sources = [match["node"]] if match["node"] else list(known)
        values = [known[n][match["field"]] for n in sources if match["field"] in known.get(n, {})]
        return values[0] if len(values) == 1 else None  # unknown, or ambiguous between two Edit Fields

    # -- nodes -----------------------------------------------------------------------------------
    def run(self) -> Flow:
        """The phases: check the node list's shape, read Edit Fields' literals, import each node, wire the
        connections (where the structural hooks fold chains, loops and routing nodes), then the flow's meta."""
        nodes = self._checked_nodes()
        self.static = {n["name"]: v for n in nodes if (v := _static_fields(n)) is not None}
        self.partial = {n["name"]: v for n in nodes if n["name"] not in self.static and (v := _static_fields(n, True))}
        for node in nodes:
            self._import_node(node)
        self._import_connections()
        self.flow.meta["source"] = {"format": "n8n", "name": self.data.get("name"), "id": self.data.get("id")}
        if self.webhooks["entry"] or self.webhooks["answer"]:
            self.flow.meta["source"]["webhooks"] = self.webhooks
        self.report.flow_name = self.flow.name
        return self.flow

    def _checked_nodes(self) -> list[dict[str, Any]]:
        """The node list, each an object with a unique name, a type and object parameters (else one clear error)."""
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
        return nodes

    def _position(self, node: dict[str, Any]) -> Position:
        pos = node.get("position")
        if isinstance(pos, list) and len(pos) >= 2 and all(isinstance(v, int | float) for v in pos[:2]):
            return Position(x=float(pos[0]), y=float(pos[1]))
        self.report.warnings.append(f"{node['name']!r}: no usable position; placed at (0, 0)")
        return Position()

    def _import_note(self, node: dict[str, Any], params: dict[str, Any]) -> None:
        name = node["name"]
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
        self.report.node(name, node["type"]).note = f"note '{note_id}'"

    def _import_node(self, node: dict[str, Any]) -> None:
        name = node["name"]
        params: dict[str, Any] = node.get("parameters") or {}
        for path, value, reason in find_secrets(params):
            remember_secret(self.secrets, value)
            self.report.secret(name, path, reason)
        if node["type"] == STICKY:
            self._import_note(node, params)
            return
        if node["type"] == MCP_SERVER_TRIGGER:
            self._import_mcp_server(node, params)
            return
        if node["name"] in self.static:
            # Edit Fields with literal values: absorbed. Its values resolve the expressions that read
            # them and its connections pass straight through (see _import_connections).
            shown = ", ".join(f"{k}={v!r}" for k, v in self.static[node["name"]].items())
            self.report.node(name, node["type"]).note = f"absorbed: static values {shown} fill expressions"
            return
        for path, value in _walk(params):
            expression = value.get("value") if isinstance(value, dict) else value
            if isinstance(expression, str) and is_expression(expression) and self._static_value(expression) is None:
                self.report.expression(name, path, expression)
        outcome = self.report.node(name, node["type"])
        self.outcomes[name] = outcome
        adapter = N8N_TABLE.importer(node["type"])
        kept = N8N_TABLE.entry(node["type"]) if adapter is None else None
        used: set[str] = set()
        specs: Specs = []
        if kept is not None and kept.hook:  # a node kept as a placeholder whose hook says what it did
            hook = import_hook(self, kept)
            assert hook is not None
            hook(node, params, kept, used)
        if adapter is not None:
            version = node.get("typeVersion", 1)
            if isinstance(version, int | float) and version not in adapter.versions:
                self.report.warnings.append(
                    f"{name!r}: typeVersion {version} of {short_type(node['type'])} is not one this build knows "
                    f"({', '.join(map(str, adapter.versions))}); read as the nearest"
                )
            hook = import_hook(self, adapter) or self._generic
            specs = hook(node, params, adapter, used)
            if name in self.routes:
                return
        if not specs:
            specs = [("main", self._placeholder(node))]
        else:
            self._report_dropped(name, params, used | set(adapter.ignore if adapter else ()))
            if adapter is not None and adapter.note and not adapter.hook:
                self.report.warnings.append(f"{name!r}: " + adapter.note.format(id=specs[0][1].id, what="the file"))
        mapped = _Mapped(name, node["type"], adapter if specs[0][1].type != PLACEHOLDER else None)
        mapped.mode = str(params.get("mode", ""))
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

    def _import_mcp_server(self, node: dict[str, Any], params: dict[str, Any]) -> None:
        """n8n's MCP Server Trigger: no node of ours, since Flowbuilder serves the whole flow over MCP.
        Its tools stay; the outcome line (written once connections are read) says how to serve them."""
        name = node["name"]
        self.outcomes[name] = self.report.node(name, node["type"])
        self.mcp_servers[name] = params
        version = node.get("typeVersion", 1)
        if isinstance(version, int | float) and version not in MCP_SERVER_VERSIONS:
            self.report.warnings.append(
                f"{name!r}: typeVersion {version} of mcpTrigger is not one this build knows "
                f"({', '.join(map(str, MCP_SERVER_VERSIONS))}); read as the nearest"
            )
        if params.get("instructions"):
            self.report.drop(name, "instructions", "server instructions are not carried; the tool descriptions are")
        auth = str(params.get("authentication") or "none")
        if auth != "none":
            self.report.drop(name, "authentication", f"{auth!r}: give `flowbuilder serve FLOW --token TOKEN` instead")
        for cred_type, ref in (node.get("credentials") or {}).items():
            if isinstance(ref, dict):
                self.report.credentials.append(CredentialFound(name, "", cred_type, str(ref.get("name") or "")))

    def _mcp_server_note(self, name: str, tools: list[str]) -> None:
        served: list[str] = []
        for tool in tools:
            mapped = self.mapped[tool]
            node_id = mapped.ids.get("tool", mapped.main)
            spec = self.flow.node(node_id)
            cls = node_class(spec.type)
            if cls is not None and getattr(cls, "category", "") == "Retrieval":
                served.append(f"'{spec.config.get('name') or node_id}' ({spec.type} '{node_id}')")
            else:
                self.report.warnings.append(
                    f"{tool!r} -> {name!r}: {spec.type} '{node_id}' is kept, but `flowbuilder serve` offers "
                    "only retrieval tools over MCP"
                )
        path = self.mcp_servers[name].get("path")
        where = f" (n8n path {path!r}; ours is /mcp)" if isinstance(path, str) and path else ""
        # kept with the flow's serving settings, so an export writes the trigger back
        mcp = self.flow.meta.setdefault("mcp", {})
        mcp["n8n_trigger"] = {
            "name": name,
            "path": path if isinstance(path, str) else "",
            "tools": [self.mapped[t].ids.get("tool", self.mapped[t].main) for t in tools],
        }
        self.outcomes[name].note = (
            "MCP Server Trigger: served by `flowbuilder serve FLOW` (HTTP /mcp)" + where + ", `flowbuilder mcp "
            "FLOW` (stdio) or the builder's Serve tab; "
            + (
                f"its tools {', '.join(served)} are the flow's search tools"
                if served
                else "no retrieval tool is wired into it"
            )
        )

    def _report_dropped(self, name: str, params: dict[str, Any], used: set[str]) -> None:
        dropped: list[str] = []
        for path, _value in _walk(params):
            short = path.split("[")[0]
            if short not in used and not any(short.startswith(u + ".") for u in used) and short not in dropped:
                dropped.append(short)
        for path in dropped:
            self.report.drop(name, path)

    def _config(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> dict[str, Any]:
        """Walk the adapter's parameter table: our config, with n8n's defaults stated in the report."""
        version = node.get("typeVersion")
        lookup = _lookup(params, self._resolve(node["name"]))
        config, reads = read_params(adapter, lookup, version if isinstance(version, int | float) else None)
        for read in reads:
            used.add(read.param.theirs)
            if read.state == "default":
                self.report.default(node["name"], read.param.theirs, read.value, "n8n default, omitted in the export")
        return config

    def _new_spec(self, node: dict[str, Any], type_name: str, config: dict[str, Any], suffix: str = "") -> NodeSpec:
        stem = slugify(node["name"]) + (f"-{suffix}" if suffix else "")
        label = node["name"].strip() + (f" ({suffix})" if suffix else "")
        return NodeSpec(id=self.ids.take(stem), type=type_name, name=label, config=config)

    def _generic(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        return [("main", self._new_spec(node, adapter.ours, self._config(node, params, adapter, used)))]

    def _placeholder(self, node: dict[str, Any], why: str = "") -> NodeSpec:
        original = scrub(copy.deepcopy(node), self.secrets)
        known = N8N_TABLE.entry(node["type"])
        replacement = known.replace if known else ""
        config = {"source_format": "n8n", "original_type": node["type"], "original": original}
        if replacement:
            config["replace"] = replacement
        for cred_type, ref in (node.get("credentials") or {}).items():
            if isinstance(ref, dict):
                provider = CREDENTIAL_PROVIDERS.get(cred_type, cred_type)
                self.report.credentials.append(CredentialFound(node["name"], "", provider, str(ref.get("name") or "")))
        outcome = self.outcomes.get(node["name"])
        if outcome is not None and not outcome.note:
            outcome.note = why or (f"replace with {replacement}" if replacement else "no Flowbuilder equivalent")
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

    # -- structural hooks ------------------------------------------------------------------------
    def _hook_form(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        return [("main", self._new_spec(node, adapter.ours, {}))]

    def _hook_cloud_file(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        what = ""
        for path in ("fileId", "fileToWatch", "folderToWatch", "path", "fileSelector", "fileName"):
            found, value = get_path(params, path)
            if isinstance(value, dict):
                value = value.get("cachedResultName") or value.get("value")
            if found and value and not is_expression(value):
                label = {"folderToWatch": "a file from folder", "path": "the file"}.get(path, "the file")
                what = f"{label} {value!r}"
                break
            if found and is_expression(value):
                what = f"the file named by the expression {value}"
                break
        used.update(params)  # nothing of a cloud source runs here: the report line says what to fetch
        spec = self._new_spec(node, adapter.ours, {})
        self.report.warnings.append(f"{node['name']!r}: " + adapter.note.format(id=spec.id, what=what or "the file"))
        return [("main", spec)]

    def _hook_http(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        method = str(params.get("method") or "GET").upper()
        state, url = _lookup(params, self._resolve(node["name"]))("url")
        if state == "expression":
            url = None  # an address only known at run time: not a document we can name
        response = get_path(params, "options.response.response.responseFormat")[1]
        fetches_file = (
            isinstance(url, str)
            and not is_expression(url)
            and (url.lower().split("?")[0].endswith(_DOC_EXTENSIONS) or response == "file")
        )
        if method == "GET" and not fetches_file and self._feeds_ingestion(node["name"]):
            # a page fetched at run time (its address from a form or an expression): the loader reads the
            # file its input gives (the form's file, --input)
            shown = url if isinstance(url, str) else params.get("url")
            used.update(params)
            spec = self._new_spec(node, roles.LOADER, {})
            self.report.warnings.append(f"{node['name']!r}: " + _FETCHED_PAGE.format(what=shown))
            return [("main", spec)]
        if method != "GET" or not fetches_file:
            shown = f"{method} {url if isinstance(url, str) else params.get('url')}"
            why = (
                f"an HTTP call ({shown}) that does not fetch a document: Flowbuilder does not call APIs; "
                "replace it with the data it returns (a file into loader.file) or remove it"
            )
            self.report.warnings.append(f"{node['name']!r}: {why}")
            self.outcomes[node["name"]].note = why
            return []
        used.update(params)
        path = str(url).split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        spec = self._new_spec(node, adapter.ours, {"path": path})
        self.report.warnings.append(
            f"{node['name']!r}: fetched {url}: download it next to the flow as {path!r} (Flowbuilder reads local files)"
        )
        return [("main", spec)]

    def _hook_code(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        """Code (JavaScript or Python): kept as a placeholder, never run; the report says what it does."""
        source = next((params[k] for k in ("jsCode", "pythonCode", "code", "functionCode") if k in params), "")
        language = "Python" if params.get("language") == "python" or "pythonCode" in params else ""
        why = f"code, never run here ({summarize_code(source, language)}); replace it with nodes that do this"
        self.report.warnings.append(f"{node['name']!r}: {why}")
        self.outcomes[node["name"]].note = why
        return []

    def _feeds_ingestion(self, name: str) -> bool:
        """Whether ``name``'s main output reaches a vector store that inserts (a page fetched to be ingested)."""
        connections = self.data.get("connections") or {}
        types = {n.get("name"): n for n in self.data.get("nodes") or [] if isinstance(n, dict)}
        seen, todo = {name}, [name]
        while todo:
            outputs = connections.get(todo.pop())
            main = outputs.get("main") if isinstance(outputs, dict) else None
            for branch in main if isinstance(main, list) else []:
                for link in branch if isinstance(branch, list) else []:
                    target = link.get("node") if isinstance(link, dict) else None
                    if not isinstance(target, str) or target in seen:
                        continue
                    node = types.get(target) or {}
                    params = node.get("parameters")
                    mode = params.get("mode") if isinstance(params, dict) else None
                    if "vectorStore" in str(node.get("type", "")) and mode == "insert":
                        return True
                    seen.add(target)
                    todo.append(target)
        return False

    def _hook_route(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        """A routing or item-shaping node: absorbed like a static Edit Fields node (its connections pass
        straight through); its logic (expressions) is never evaluated, and the report says so."""
        name = node["name"]
        note = "absorbed: " + adapter.note
        static = self.partial.get(name)
        if static:
            note += "; static: " + ", ".join(f"{k}={v!r}" for k, v in static.items())
        self.outcomes[name].note = note
        self.report.warnings.append(f"{name!r}: {note}")
        self.routes[name] = adapter
        return []

    def _hook_webhook(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        used.update(params)
        path = params.get("path")
        shown = path if isinstance(path, str) and path and not is_expression(path) else "<path>"
        note = adapter.note.format(what=f"webhook/{shown}")
        self.outcomes[node["name"]].note = note
        self.report.warnings.append(f"{node['name']!r}: {note}")
        spec = self._new_spec(node, adapter.ours, {})
        # kept so an n8n export writes the webhook (and its Respond to Webhook) back, not a chat trigger
        method = str(params.get("httpMethod") or "GET")
        self.webhooks["entry"][spec.id] = {"path": shown if shown != "<path>" else "", "httpMethod": method}
        return [("main", spec)]

    def _hook_respond(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        used.update(params)
        self.outcomes[node["name"]].note = adapter.note
        self.report.warnings.append(f"{node['name']!r}: {adapter.note}")
        spec = self._new_spec(node, adapter.ours, {})
        self.webhooks["answer"].append(spec.id)
        return [("main", spec)]

    def _hook_chain(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        self.chains[node["name"]] = {}
        if adapter.note:
            self.report.warnings.append(f"{node['name']!r}: {adapter.note}")
        return self._generic(node, params, adapter, used)

    def _hook_reranker(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        self.rerankers[node["name"]] = ""
        return self._generic(node, params, adapter, used)

    def _hook_http_tool(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        """An HTTP Request tool: ``$fromAI`` values become ``{name}`` parameters (read, never evaluated), the
        tool is named after the node (as n8n names it for the model) and the report says to approve it."""
        descriptions: dict[str, str] = {}
        specs = self._generic(node, from_ai_templates(params, descriptions), adapter, used)
        config = specs[0][1].config
        config["name"] = slugify(node["name"]).replace("-", "_")[:64] or "http_request"
        if descriptions:
            config["placeholders"] = {**descriptions, **config.get("placeholders", {})}
        # its expressions were read as parameters the model fills, not kept unevaluated
        self.report.expressions = [e for e in self.report.expressions if e.node != node["name"].strip()]
        self.outcomes[node["name"]].note = adapter.note
        filled = ", ".join(parameter_names_of(config)) or "none"
        self.report.warnings.append(
            f"{node['name']!r}: {adapter.note} ({config.get('url', 'no url')}; the model fills: {filled})"
        )
        return specs

    def _hook_mcp(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        specs = self._generic(node, params, adapter, used)
        config = specs[0][1].config
        if config.get("selection") in ("selected", "all_except"):
            key = "includeTools" if config["selection"] == "selected" else "excludeTools"
            config["tools"] = [str(t) for t in params.get(key) or []]
        if params.get("authentication", "none") != "none":
            self.report.warnings.append(
                f"{node['name']!r}: the MCP server's {params['authentication']} credential is not carried: "
                "bind the token slot of the tool.mcp node"
            )
        return specs

    def _hook_loader(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        if params.get("dataType", "json") != "binary":
            self.report.drop(
                node["name"], "dataType", f"{params.get('dataType', 'json')!r}: only files are loaded (binary)"
            )
        specs: Specs = [("main", self._new_spec(node, adapter.ours, self._config(node, params, adapter, used)))]
        version = node.get("typeVersion", 1)
        if (
            isinstance(version, int | float)
            and version >= 1.1
            and params.get("textSplittingMode", "simple") != "custom"
        ):
            # n8n's "simple" mode splits with a recursive splitter of 1000/200 built into the loader.
            splitter = self._new_spec(node, roles.SPLITTER, {"chunk_size": 1000, "chunk_overlap": 200}, "splitter")
            self.report.default(
                node["name"], "textSplittingMode", "simple", "n8n's built-in splitter 1000/200 made explicit"
            )
            specs.append(("splitter", splitter))
        return specs

    def _hook_store(self, node: dict[str, Any], params: dict[str, Any], adapter: Adapter, used: set[str]) -> Specs:
        mode = params.get("mode") or "retrieve"
        used.add("mode")
        if "mode" not in params:
            self.report.default(node["name"], "mode", mode, "n8n default, omitted in the export")
        if adapter.note:
            self.report.warnings.append(f"{node['name']!r}: {adapter.note}")
        specs: Specs = [("store", self._new_spec(node, adapter.ours, self._config(node, params, adapter, used)))]
        if mode in ("load", "retrieve-as-tool"):
            lookup = _lookup(params)
            state, k = lookup("topK")
            used.add("topK")
            if state != "set":
                k = 4
                if state == "absent":
                    self.report.default(node["name"], "topK", 4, "n8n default, omitted in the export")
            role = roles.RETRIEVER if mode == "load" else roles.TOOL
            bounded = within_bounds(role, "k", to_int(k) or 4)
            if bounded != to_int(k):
                self.report.drop(node["name"], "topK", f"{k!r} is out of range here: {bounded} is used")
            k = bounded
            if mode == "load":
                used.add("prompt")
                specs.append(("retriever", self._new_spec(node, roles.RETRIEVER, {"k": k}, "retriever")))
            else:
                used.update({"toolName", "toolDescription"})
                state, tool_name = lookup("toolName")
                tool_config: dict[str, Any] = {
                    "name": tool_name if state == "set" else slugify(node["name"]).replace("-", "_"),
                    "k": k,
                }
                state, description = lookup("toolDescription")
                if state == "set":
                    tool_config["description"] = description
                specs.append(("tool", self._new_spec(node, roles.TOOL, tool_config, "tool")))
        elif mode not in ("insert", "retrieve"):
            self.report.drop(node["name"], "mode", f"{mode!r} is not supported; the node is kept as a store")
        if params.get("useReranker"):
            used.add("useReranker")  # the reranker wired in with ai_reranker carries it
            if not any(a.hook == "reranker" for a in N8N_TABLE.adapters):
                self.report.drop(node["name"], "useReranker", "no reranker node here; results are not reranked")
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
        links = self._fold_loops(_through_edit_fields(links, self.static))
        links = _through_edit_fields(links, self.routes)
        splitter_of: dict[str, str] = {}
        loaders_of: dict[str, list[str]] = {}
        for source, conn_type, target, _ in links:
            if conn_type == "ai_textSplitter":
                splitter_of[target] = source
            elif conn_type == "ai_document":
                loaders_of.setdefault(target, []).append(source)
        served: dict[str, list[str]] = {name: [] for name in self.mcp_servers}
        for source, conn_type, target, in_type in links:
            if target in self.mcp_servers and source in self.mapped and conn_type == "ai_tool":
                served[target].append(source)
                continue
            if target in self.mcp_servers or source in self.mcp_servers:
                self.report.connections_dropped.append(
                    f"{source!r} -{conn_type}-> {target!r}: an MCP Server Trigger only takes tools (ai_tool)"
                )
                continue
            if source not in self.mapped or target not in self.mapped:
                missing = source if source not in self.mapped else target
                self.report.connections_dropped.append(
                    f"{source!r} -{conn_type}-> {target!r}: no node named {missing!r}"
                )
                continue
            self._connect(source, conn_type, target, in_type, splitter_of, loaders_of)
        for name, tools in served.items():
            self._mcp_server_note(name, tools)
        # n8n's simple text-splitting mode: the loader's built-in splitter sits between loader and store.
        for name, chain in self.chains.items():
            self._wire_chain(self.mapped[name], chain)
        for name, store in self.rerankers.items():
            self._wire_reranker(self.mapped[name], self.mapped.get(store))
        for name in self.superseded:
            loader = self.mapped[name]
            self.flow.node(loader.main).disabled = True
            self.flow.edges = [e for e in self.flow.edges if e.source != loader.main]
        for mapped in self.mapped.values():
            builtin = "splitter" in mapped.ids and mapped.adapter is not None and mapped.adapter.hook == "loader"
            if builtin and mapped.name not in self.superseded:
                self._edge(mapped.ids["main"], "records", mapped.ids["splitter"], "documents")
            for role in ("tool", "retriever"):
                if role in mapped.ids and "store" in mapped.ids:
                    self._edge(mapped.ids["store"], "store", mapped.ids[role], "store")

    def _runs(self, name: str) -> bool:
        """Whether a node runs here: mapped, or a store ``--local`` swaps for Chroma."""
        mapped = self.mapped.get(name)
        if mapped is None:
            return False
        known = N8N_TABLE.entry(mapped.n8n_type)
        return mapped.adapter is not None or bool(known and known.local and known.local.collection)

    def _loops(self, name: str) -> bool:
        """Whether a node is an absorbed loop head (Split In Batches)."""
        route = self.routes.get(name)
        return route is not None and bool(route.extra.get("loop"))

    def _fold_loops(self, links: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
        """Cut every loop's closing ``main`` link. A Split In Batches loop whose body our nodes run in one
        pass (they batch internally) is folded into a straight path; any other loop is reported with the
        nodes on it, and the rest of the flow imports and runs."""
        graph = nx.DiGraph()
        graph.add_edges_from((a, b) for a, kind, b, _ in links if kind == "main")
        cut: set[tuple[str, str]] = set()
        for cycle in _cycles(graph):
            head = next((n for n in cycle if self._loops(n)), None)
            if head is None:  # no Split In Batches: cut where the loop returns to its earliest node
                order = {name: i for i, name in enumerate([*self.mapped, *self.routes])}
                head = min(cycle, key=lambda n: order.get(n, len(order)))
            back = cycle[cycle.index(head) - 1]
            cut.add((back, head))
            body = [n for n in cycle if n != head]
            runnable = all(n in self.routes or self._runs(n) for n in body)
            names = ", ".join(repr(n) for n in body)
            if self._loops(head) and runnable:
                self.report.warnings.append(
                    f"{head!r}: loop folded into one pass over all items: its body ({names}) batches internally; "
                    f"the link {back!r} -> {head!r} that closed the loop is left out"
                )
            else:
                why = "its body has nodes Flowbuilder does not run" if self._loops(head) else "a cycle"
                self.report.warnings.append(
                    f"{head!r}: a loop through {names} ({why}) runs once here: the link {back!r} -> {head!r} "
                    "that closed it is left out; the rest of the flow imports and runs"
                )
            self.report.connections_dropped.append(f"{back!r} -main-> {head!r}: closed a loop (see the warning)")
        return [link for link in links if not (link[1] == "main" and (link[0], link[2]) in cut)]

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
        if conn_type == "ai_textSplitter" and tgt_type in (roles.LOADER, PLACEHOLDER):
            port = "records" if tgt_type == roles.LOADER else "ai_document"
            self._edge(tgt.main, port, src.main, "documents")
            return
        if conn_type == "ai_document" and src_type in (roles.LOADER, PLACEHOLDER):
            feeder, port = src.main, "records" if src_type == roles.LOADER else "ai_document"
            splitter = splitter_of.get(source)
            if splitter in self.mapped:
                feeder, port = self.mapped[splitter].main, "chunks"
            elif "splitter" in src.ids:
                feeder, port = src.ids["splitter"], "chunks"
            target_port = "documents" if tgt_type != PLACEHOLDER else "ai_document"
            self._edge(feeder, port, tgt.ids.get("store", tgt.main), target_port)
            return
        if conn_type == "ai_reranker" and source in self.rerankers:
            self.rerankers[source] = target  # placed after the store's retriever once every link is read
            return
        if target in self.chains and conn_type != "main":
            self.chains[target][conn_type] = src  # the model and retriever are wired once all links are read
            return
        if target in self.chains or source in self.chains:
            self.chains[target if target in self.chains else source].setdefault("main", []).append(
                (src, conn_type, tgt, in_type, source in self.chains)
            )
            return
        store = self._store_of(tgt) if conn_type == "main" and tgt.mode == "insert" else None
        if store is not None and src_type == roles.FILE_INPUT:
            loaders = [self.mapped[n] for n in loaders_of.get(target, []) if n in self.mapped]
            loaders = [m for m in loaders if self._type(m.name) == roles.LOADER]
            if not loaders:
                self.report.connections_dropped.append(
                    f"{source!r} -main-> {target!r}: the store has no data loader; ingestion is cut off here"
                )
            for loader in loaders:
                self._edge(src.main, "path", loader.main, "path")
            return
        if store is not None and src_type == roles.LOADER:
            # Items read upstream (Extract from File, a download) are what the store's data loader
            # would split: they go to its splitter, and the data loader itself has nothing to read.
            loaders = [self.mapped[n] for n in loaders_of.get(target, []) if n in self.mapped]
            into = [(m.ids["splitter"], "documents") for m in loaders if "splitter" in m.ids]
            into += [(self.mapped[s].main, "documents") for m in loaders if (s := splitter_of.get(m.name))]
            for node_id, port in into or [store]:
                self._edge(src.main, "records", node_id, port)
            for loader in loaders:
                if self._type(loader.name) == roles.LOADER and loader.name not in self.superseded:
                    self.superseded.add(loader.name)
                    self.report.warnings.append(
                        f"{loader.name!r}: disabled: the records of {source!r} reach its splitter directly"
                    )
            return
        out = self._out_port(src, src_type, conn_type)
        inp = self._in_port(tgt, tgt_type, in_type)
        if out is None or inp is None:
            side = "source" if out is None else "target"
            node_type = src_type if out is None else tgt_type
            cut = " (ingestion is cut off here)" if conn_type in ("ai_document", "ai_textSplitter") else ""
            self.report.connections_dropped.append(
                f"{source!r} -{conn_type}-> {target!r}: the {side} ({node_type}) has no matching port{cut}"
            )
            return
        self._edge(out[0], out[1], inp[0], inp[1])

    def _wire_reranker(self, reranker: _Mapped, store: _Mapped | None) -> None:
        """n8n reranks inside the store's search: ours goes after the store's retriever (load mode)."""
        retriever = store.ids.get("retriever") if store is not None else None
        if retriever is None:
            # A tool-mode or retrieve-mode store: our retriever.tool cannot rerank, so results come unreranked.
            self.flow.node(reranker.main).disabled = True
            where = f"{store.name!r}" if store is not None else "no store"
            self.report.warnings.append(
                f"{reranker.name!r}: kept disabled: it reranks inside {where}'s tool search, which Flowbuilder's "
                "retriever.tool does not do (hits come unreranked)"
            )
            return
        for edge in [e for e in self.flow.edges if e.source == retriever and e.source_port == "hits"]:
            edge.source = reranker.main  # consumers now read the reranked hits
        for edge in [e for e in self.flow.edges if e.target == retriever and e.target_port == "query"]:
            self._edge(edge.source, edge.source_port, reranker.main, "query")
        self._edge(retriever, "hits", reranker.main, "hits")

    def _wire_chain(self, prompt: _Mapped, chain: dict[str, Any]) -> None:
        """question -> prompt and retriever; retriever hits -> prompt context; prompt -> model; model answers."""
        model: _Mapped | None = chain.get("ai_languageModel")
        retriever: _Mapped | None = chain.get("ai_retriever")
        if model is not None and roles.chat_model(self._type(model.name)):
            self._edge(prompt.main, "prompt", model.main, "prompt")
        else:
            self.report.connections_dropped.append(f"{prompt.name!r}: the Q&A chain has no chat model")
        if retriever is not None and "retriever" in retriever.ids:
            self._edge(retriever.ids["retriever"], "hits", prompt.main, "context")
        elif retriever is not None and self._type(retriever.name) == roles.RETRIEVER:
            self._edge(retriever.main, "hits", prompt.main, "context")
        for src, conn_type, tgt, in_type, outgoing in chain.get("main", []):
            if outgoing and model is not None:  # the chain's answer is the model's
                inp = self._in_port(tgt, self._type(tgt.name), in_type)
                if inp is not None:
                    self._edge(model.main, "answer", inp[0], inp[1])
                continue
            out = self._out_port(src, self._type(src.name), conn_type)
            if out is None:
                continue
            self._edge(out[0], out[1], prompt.main, "question")
            if retriever is not None and self._type(retriever.name) == roles.RETRIEVER:
                self._edge(out[0], out[1], retriever.main, "query")

    def _store_of(self, mapped: _Mapped) -> tuple[str, str] | None:
        """Where an n8n vector store (mapped, or kept as a placeholder) takes documents."""
        if "store" in mapped.ids:
            return mapped.ids["store"], "documents"
        if mapped.adapter is None and short_type(mapped.n8n_type).startswith(STORE_PREFIX):
            return mapped.main, "ai_document"
        return None

    @staticmethod
    def _out_port(mapped: _Mapped, type_name: str, conn_type: str) -> tuple[str, str] | None:
        if type_name == PLACEHOLDER:
            return mapped.main, conn_type
        ids = mapped.ids
        roles = {
            "ai_tool": ("tool", "tool"),
            "ai_vectorStore": ("store", "store"),
            "ai_retriever": ("retriever", "retriever"),
        }
        if conn_type in roles and roles[conn_type][0] in ids and "store" in ids:
            role, port = roles[conn_type]
            return ids[role], port
        if conn_type == "main" and "store" in ids:
            return (ids["retriever"], "hits") if "retriever" in ids else (ids["store"], "hits")
        found = mapped.adapter.our_output(conn_type) if mapped.adapter else None
        return (mapped.main, found) if found else None

    @staticmethod
    def _in_port(mapped: _Mapped, type_name: str, conn_type: str) -> tuple[str, str] | None:
        if type_name == PLACEHOLDER:
            return mapped.main, conn_type
        ids = mapped.ids
        if "store" in ids:
            if conn_type == "ai_embedding":
                return ids["store"], "embedder"
            if conn_type == "main":
                return (ids["retriever"], "query") if "retriever" in ids else (ids["store"], "query")
            return None
        port = mapped.adapter.our_input(conn_type) if mapped.adapter else None
        return (mapped.main, port) if port else None
