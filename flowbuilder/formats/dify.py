"""Dify DSL (YAML) -> Flowbuilder flows, by walking :data:`dify_table.DIFY_TABLE`.

Three shapes of DSL are read:

- **workflow / chatflow apps** (``app.mode`` ``workflow`` or ``advanced-chat``): ``workflow.graph`` nodes.
  Dify passes data by *variable reference* (``{{#1711.text#}}`` in a text, ``[node, var]`` selectors), and
  its edges only order the run. So each node's hook says which variables it gives (``exports``: Dify
  variable -> our node and port) and which it takes (``wants``: selector -> our node and port); the
  references are resolved once every node is read. Routing nodes (if-else, question classifier), loops
  and variable aggregators are absorbed (their conditions are never evaluated; an aggregator's variables
  become alternatives); a code node is kept and never run (its one input may pass through, said in the
  report).
- **chat apps** (``chat``, ``agent-chat``, ``completion``): ``model_config`` with ``dataset_configs``: chat input
  -> knowledge base -> prompt (``pre_prompt``) -> model -> chat output.
- **Knowledge Pipelines** (``kind: rag_pipeline``): datasource -> extractor -> chunker -> knowledge index as
  file input -> loader -> splitter -> embedder + store.

A Dify knowledge base is referenced by id and lives on the Dify server: it stays a placeholder, and
``--local`` swaps it for an embedded Chroma collection that the first run fills from the file the user gives
(``formats/local.py`` adds the file -> loader -> splitter branch and says so).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from flowbuilder.errors import FlowFileError
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position
from flowbuilder.formats import roles
from flowbuilder.formats.adapters import Adapter, credential_slot, get_path, read_params, to_float
from flowbuilder.formats.dify_table import CHAT_IN, CHAT_OUT, DIFY_TABLE, NOTE_TYPES, PROMPT, provider_key
from flowbuilder.formats.mapping import (
    PLACEHOLDER,
    IdAllocator,
    find_secrets,
    placeholder_config,
    remember_secret,
    scrub,
    slugify,
)
from flowbuilder.formats.report import CredentialFound, ImportReport, NodeOutcome
from flowbuilder.trust.providers import CredentialRef

_REF = re.compile(r"\{\{#([^#{}]+)#\}\}")
"""A Dify variable reference inside a text: ``{{#node_id.var#}}``, ``{{#sys.query#}}``, ``{{#context#}}``."""
_TEXT_VARS = {"text-input", "paragraph", "select", "string", "text", ""}
_FILE_VARS = {"file", "file-list"}
_CHAT_MODES = {"chat", "agent-chat", "completion"}
Target = tuple[str, str]
"""Our node id and port."""


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def graph_of(data: dict[str, Any]) -> dict[str, Any]:
    return _obj(_obj(data.get("workflow")).get("graph"))


def selector_of(value: Any) -> tuple[str, str] | None:
    """A ``[node_id, var, ...]`` selector as (node, var); ``sys.query`` style vars keep their dot."""
    items = [str(v) for v in _list(value) if isinstance(v, str | int)]
    if len(items) < 2:
        return None
    return items[0], items[1]


def ref_selector(text: str) -> tuple[str, str]:
    """``node.var`` / ``sys.query`` / ``context`` inside ``{{#...#}}`` as (node, var)."""
    if text == "context":
        return "", "context"
    node, _, var = text.partition(".")
    return (node, var) if var else ("", node)


@dataclass
class _Want:
    selector: tuple[str, str]
    target: Target
    node: str
    """The Dify node that takes it (for report lines)."""


@dataclass
class _Exported:
    """A Dify variable: our port, another variable it stands for (absorbed nodes), or alternatives."""

    target: Target | None = None
    alias: list[tuple[str, str]] = field(default_factory=list)


class DifyImporter:
    """One Dify DSL (workflow, chatflow, chat app or Knowledge Pipeline) read into a Flowbuilder flow, with its
    report."""

    def __init__(self, data: dict[str, Any], origin: str, report: ImportReport) -> None:
        self.data = data
        self.origin = origin
        self.report = report
        self.secrets: set[str] = set()
        self.ids = IdAllocator()
        app = _obj(data.get("app")) or _obj(data.get("rag_pipeline"))
        self.mode = str(app.get("mode") or ("rag_pipeline" if data.get("kind") == "rag_pipeline" else "workflow"))
        self.flow = Flow(
            name=str(app.get("name") or "Imported Dify app")[:200], description=str(app.get("description") or "")
        )
        self.exports: dict[tuple[str, str], _Exported] = {}
        self.wants: list[_Want] = []
        self.outcomes: dict[str, NodeOutcome] = {}
        self.chat: dict[str, str] = {}
        """Start variable (or ``sys.query``) -> our chat input id."""
        self.start_ids: set[str] = set()
        self.loaders: dict[str, str] = {}
        """A Knowledge Pipeline's data source node id -> the loader it became."""
        self.shared: dict[str, Any] = {}
        self.specs: dict[str, NodeSpec] = {}
        """Dify node id -> our main node for it."""

    # -- the phases -----------------------------------------------------------------------------
    def run(self) -> Flow:
        for path, value, reason in find_secrets(self.data):
            if ".graph.nodes" in path or path.startswith(("model_config", "workflow.environment_variables")):
                remember_secret(self.secrets, value)
                self.report.secret("(dsl)", path, reason)
        if self.mode in _CHAT_MODES and not graph_of(self.data):
            self._chat_app()
        else:
            self._graph()
        self.flow.meta["source"] = {"format": "dify", "mode": self.mode, "version": str(self.data.get("version", ""))}
        self.report.flow_name = self.flow.name
        return self.flow

    def _graph(self) -> None:
        graph = graph_of(self.data)
        nodes, edges = graph.get("nodes"), graph.get("edges")
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise FlowFileError(self.origin, 'a Dify workflow needs "workflow": {"graph": {"nodes", "edges"}}')
        seen: set[str] = set()
        for index, node in enumerate(nodes):
            problem = _node_problem(node)
            if problem:
                raise FlowFileError(self.origin, f"Dify node #{index + 1} {problem}")
            if str(node["id"]) in seen:
                raise FlowFileError(self.origin, f"Dify node id {node['id']!r} is used twice")
            seen.add(str(node["id"]))
        self.shared = {
            str(v.get("variable")): v.get("default_value")
            for v in _list(_obj(self.data.get("workflow")).get("rag_pipeline_variables"))
            if isinstance(v, dict) and v.get("variable")
        }
        # data sources first: the extractors and chunkers after them read the loader each one becomes
        for node in sorted(nodes, key=lambda n: _obj(n.get("data")).get("type") != "datasource"):
            self._import_node(node)
        self._resolve()

    # -- nodes ----------------------------------------------------------------------------------
    def _import_node(self, node: dict[str, Any]) -> None:
        node_id = str(node["id"])
        data = _obj(node.get("data"))
        dify_type = str(data.get("type") or "")
        pos = _position(node)
        if node.get("type") in NOTE_TYPES or (not dify_type and "text" in data):
            note_id = self.ids.take(_safe_id(node_id))
            self.flow.notes.append(
                Note(
                    id=note_id,
                    text=note_text(data.get("text")),
                    width=to_float(data.get("width")),
                    height=to_float(data.get("height")),
                )
            )
            self.flow.layout.positions[note_id] = pos
            self.report.notes += 1
            self.report.node(node_id, "note").note = f"note '{note_id}'"
            return
        if dify_type == "tool":
            dify_type = f"tool:{data.get('tool_name') or data.get('provider_name') or ''}"
            if DIFY_TABLE.entry(dify_type) is None:
                # a tool that reads a data source's file (markitdown, a parser plugin) extracts its text: the
                # loader does that here; any other tool stays a kept placeholder
                reads_file = any(
                    (found := _param_selector(v)) is not None and found[0] in self.loaders
                    for v in _obj(data.get("tool_parameters")).values()
                )
                dify_type = "tool:dify_extractor" if reads_file else "tool"
        outcome = self.report.node(f"{node_id} ({data.get('title') or dify_type})", dify_type)
        self.outcomes[node_id] = outcome
        adapter = DIFY_TABLE.importer(dify_type) or DIFY_TABLE.entry(dify_type)
        if adapter is None:
            self._add(node_id, self._placeholder(node_id, data, dify_type), pos)
            outcome.note = "no Dify mapping"
            return
        specs: list[NodeSpec] = getattr(self, f"_hook_{adapter.hook}")(node_id, data, adapter)
        for offset, spec in enumerate(specs):
            self._add(node_id, spec, Position(x=pos.x, y=pos.y + 160 * offset))
        if adapter.note and not outcome.note:
            outcome.note = adapter.note
        if adapter.note and not specs:
            self.report.warnings.append(f"{node_id}: {adapter.note}")

    def _add(self, node_id: str, spec: NodeSpec, pos: Position) -> None:
        self.flow.nodes.append(spec)
        self.flow.layout.positions[spec.id] = pos
        self.specs.setdefault(node_id, spec)
        if node_id in self.outcomes:
            self.outcomes[node_id].targets.append((spec.id, spec.type))

    def _new(self, node_id: str, type_name: str, config: dict[str, Any], label: str, suffix: str = "") -> NodeSpec:
        """A node named after its Dify title when that reads as an id (else its type and the Dify id's end)."""
        stem = slugify(label, "")[:40]
        if sum(c.isalpha() for c in stem) < 3:
            kind = str(config.get("original_type") or type_name.split(".")[-1]) if type_name == PLACEHOLDER else ""
            stem = f"{slugify(kind or type_name.split('.')[-1])}-{_safe_id(node_id)[-6:]}"
        if suffix and not stem.endswith(suffix):
            stem += f"-{suffix}"
        return NodeSpec(id=self.ids.take(stem), type=type_name, name=label, config=config)

    def _placeholder(self, node_id: str, data: dict[str, Any], dify_type: str) -> NodeSpec:
        original = scrub({"id": node_id, "data": copy.deepcopy(data)}, self.secrets)
        known = DIFY_TABLE.entry(dify_type)
        config = placeholder_config("dify", dify_type, original, replace=known.replace if known else "")
        label = str(data.get("title") or dify_type)
        if node_id in self.outcomes and not self.outcomes[node_id].note:
            self.outcomes[node_id].note = (
                f"replace with {known.replace}" if known and known.replace else "no equivalent"
            )
        return self._new(node_id, PLACEHOLDER, config, label)

    def _export(self, node_id: str, var: str, target: Target | None = None, *alias: tuple[str, str]) -> None:
        self.exports[(node_id, var)] = _Exported(target, list(alias))

    def _want(self, selector: tuple[str, str] | None, target: Target, node: str) -> None:
        if selector is not None:
            self.wants.append(_Want(selector, target, node))

    def _config(self, adapter: Adapter, source: dict[str, Any]) -> dict[str, Any]:
        def lookup(path: str) -> tuple[str, Any]:
            found, value = get_path(source, path)
            return ("set", value) if found and value not in (None, "") else ("absent", None)

        config, _ = read_params(adapter, lookup)
        return config

    # -- structural hooks -----------------------------------------------------------------------
    def _hook_start(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        self.start_ids.add(node_id)
        specs: list[NodeSpec] = []
        first = ""
        for variable in _list(data.get("variables")):
            if not isinstance(variable, dict) or not isinstance(variable.get("variable"), str):
                continue
            name, kind = variable["variable"], str(variable.get("type") or "")
            label = str(variable.get("label") or name)
            if kind in _FILE_VARS:
                spec = self._new(node_id, roles.FILE_INPUT, {}, label, "file")
                self._export(node_id, name, (spec.id, "path"))
            elif kind in _TEXT_VARS:
                spec = self._new(node_id, CHAT_IN, {}, label)
                self._export(node_id, name, (spec.id, "message"))
                self.chat[name] = spec.id
                first = first or spec.id
            else:
                self.report.drop(node_id, f"variables.{name}", f"a {kind} input: not carried (a text input is)")
                continue
            specs.append(spec)
        if self.mode != "workflow" or not first:  # a chat's message (sys.query)
            spec = self._new(node_id, CHAT_IN, {}, "Chat message")
            specs.insert(0, spec)
            first = spec.id
        self.chat["sys.query"] = first
        self._export(node_id, "sys.query", (first, "message"))
        return specs

    def _hook_llm(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        title = str(data.get("title") or "LLM")
        model = self._model(node_id, _obj(data.get("model")), title)
        messages = data.get("prompt_template")
        texts: list[str] = []
        for message in _list(messages) if isinstance(messages, list) else [messages]:
            message = _obj(message)
            text = message.get("text") if message.get("edition_type") != "jinja2" else message.get("jinja2_text")
            if isinstance(text, str) and text.strip():
                texts.append(text)
        memory = _obj(data.get("memory"))
        query = str(memory.get("query_prompt_template") or "")
        if self.mode != "workflow" and "sys.query" not in " ".join(texts):
            texts.append(query if "{{#sys.query#}}" in query else "{{#sys.query#}}")
        prompt = self._new(node_id, PROMPT, {}, f"{title} prompt")
        context = selector_of(_obj(data.get("context")).get("variable_selector"))
        template = self._template(node_id, "\n\n".join(texts) or "{{#sys.query#}}", prompt.id, context)
        prompt.config["template"] = template
        self._edge(prompt.id, "prompt", model.id, "prompt")
        self._export(node_id, "text", (model.id, "answer"))
        return [prompt, model]

    def _model(self, node_id: str, block: dict[str, Any], title: str) -> NodeSpec:
        provider = provider_key(block.get("provider"))
        key = f"model:{provider}"
        adapter = DIFY_TABLE.importer(key)
        if adapter is None:
            kept = DIFY_TABLE.entry(key) is not None
            data = {"title": f"{title} model", "model": block}
            spec = self._placeholder(node_id, data, key if kept else "model:other")
            spec.config["output_names"] = ["answer", "model"]
            spec.config["input_names"] = ["prompt"]
            self.report.warnings.append(
                f"{node_id}: model {block.get('name')!r} of provider {block.get('provider')!r} has no Flowbuilder "
                "node: kept as a placeholder (--local runs the local model instead)"
            )
            return spec
        spec = self._new(node_id, adapter.ours, self._config(adapter, block), f"{title} model")
        slot = credential_slot(spec.type)
        if slot is not None:  # Dify keeps provider keys in the workspace: one account per provider
            spec.credentials[slot.name] = CredentialRef(provider=slot.provider, name="dify")
            self.report.credentials.append(CredentialFound(spec.id, slot.name, slot.provider, "dify", bound=False))
        return spec

    def _template(self, node_id: str, text: str, prompt_id: str, context: tuple[str, str] | None) -> str:
        """Dify's text with ``{{#node.var#}}`` references as our ``{name}`` variables, each wanted from its
        source; literal braces doubled (ours reads ``{{`` as one brace)."""
        names: dict[tuple[str, str], str] = {}
        out: list[str] = []
        last = 0
        for match in _REF.finditer(text):
            out.append(text[last : match.start()].replace("{", "{{").replace("}", "}}"))
            last = match.end()
            selector = ref_selector(match.group(1).strip())
            if selector[1] == "context":
                name = "context"
                if context is not None and selector not in names:
                    self._want(context, (prompt_id, "context"), node_id)
            else:
                if (selector[0] in ("sys", "") and selector[1] == "query") or selector[1] == "sys.query":
                    name = "question"
                    selector = ("sys", "query")
                else:
                    name = re.sub(r"[^A-Za-z0-9_]", "_", selector[1]) or "value"
                    if name[0].isdigit():
                        name = f"v_{name}"
                    while name in names.values() and names.get(selector) != name:
                        name += "_2"
                if selector not in names:
                    self._want(selector, (prompt_id, name), node_id)
            names[selector] = name
            out.append("{" + name + "}")
        out.append(text[last:].replace("{", "{{").replace("}", "}}"))
        return "".join(out)

    def _hook_answer(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        refs = [ref_selector(m.group(1).strip()) for m in _REF.finditer(str(data.get("answer") or ""))]
        if not refs:
            self.outcomes[node_id].note = "a fixed reply: not carried (nothing runs before it here)"
            return []
        spec = self._new(node_id, CHAT_OUT, {}, str(data.get("title") or "Answer"))
        # the reply's main value: the last reference (Dify's replies end with the model's text)
        self._want(_sys(refs[-1]), (spec.id, "message"), node_id)
        if len(refs) > 1:
            self.report.drop(node_id, "answer", f"{len(refs) - 1} more reference(s) in the reply are not shown")
        return [spec]

    def _hook_end(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        specs = []
        for output in _list(data.get("outputs")):
            selector = selector_of(_obj(output).get("value_selector"))
            if selector is None:
                continue
            label = str(_obj(output).get("variable") or "output")
            spec = self._new(node_id, CHAT_OUT, {}, label)
            self._want(selector, (spec.id, "message"), node_id)
            specs.append(spec)
        if not specs:
            self.outcomes[node_id].note = "an end with no outputs: nothing to show"
        return specs

    def _hook_retrieval(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        spec = self._placeholder(node_id, data, adapter.theirs)
        spec.config["input_names"], spec.config["output_names"] = ["query"], ["result"]
        query = selector_of(data.get("query_variable_selector")) or ("sys", "query")
        self._want(query, (spec.id, "query"), node_id)
        if _sys(query) != ("sys", "query") and query[1] != "sys.query":
            # a query another node makes (a model's rewrite, a loop's item): the chat message is searched
            # when that gives nothing (offline, no model answers)
            self._want(("sys", "query"), (spec.id, "query"), node_id)
            self.report.warnings.append(
                f"{node_id}: searches {'.'.join(query)}; when that gives nothing the chat message is searched"
            )
        self._export(node_id, "result", (spec.id, "result"))
        ids = self._shown_ids(data.get("dataset_ids"))
        config = _obj(data.get("multiple_retrieval_config")) or _obj(data.get("single_retrieval_config"))
        k = config.get("top_k")
        self.report.warnings.append(
            f"{node_id}: searches Dify knowledge base(s) {', '.join(ids) or '(none named)'} on the Dify server: "
            "import with --local to search an embedded Chroma collection instead, filled on the first run from "
            "the file you give" + (f" (top_k {k} is not carried: 4 results)" if k not in (None, 4) else "")
        )
        return [spec]

    def _shown_ids(self, ids: Any) -> list[str]:
        """Knowledge base ids fit to print: newer exports encrypt them (random-looking: never printed)."""
        found = [str(d) for d in _list(ids)]
        hidden = sum(1 for d in found if d in self.secrets)
        shown = [d for d in found if d not in self.secrets]
        return shown + ([f"{hidden} encrypted id(s)"] if hidden else [])

    def _hook_template(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        template = str(data.get("template") or "")
        if "{%" in template:  # Jinja control flow: our template has none; its first input passes through
            return self._pass_through(node_id, data, "a Jinja template with control flow")
        variables = {
            str(_obj(v).get("variable")): selector_of(_obj(v).get("value_selector"))
            for v in _list(data.get("variables"))
        }
        spec = self._new(node_id, PROMPT, {}, str(data.get("title") or "Template"))

        ours, complex_refs = jinja_to_template(template)
        for expression in complex_refs:
            self.report.warnings.append(
                f"{node_id}: Jinja expression {{{{ {expression} }}}} is read as the whole variable here"
            )
        spec.config["template"] = ours
        for name in re.findall(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", ours):
            self._want(variables.get(name), (spec.id, name), node_id)
        self._export(node_id, "output", (spec.id, "prompt"))
        return [spec]

    def _hook_extractor(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        source = selector_of(data.get("variable_selector"))
        if source is not None and source[0] in self.loaders:  # a pipeline's file: its loader reads the text
            self._export(node_id, "text", (self.loaders[source[0]], "records"))
            self.outcomes[node_id].note = "absorbed: the data source's loader reads the file's text"
            return []
        spec = self._new(node_id, adapter.ours, {}, str(data.get("title") or "Document extractor"))
        self._want(selector_of(data.get("variable_selector")), (spec.id, "path"), node_id)
        self._export(node_id, "text", (spec.id, "records"))
        return [spec]

    def _hook_aggregate(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        selectors = [s for s in (selector_of(v) for v in _list(data.get("variables"))) if s]
        groups = _list(_obj(data.get("advanced_settings")).get("groups"))
        for group in groups:
            group = _obj(group)
            items = [s for s in (selector_of(v) for v in _list(group.get("variables"))) if s]
            self._export(node_id, f"{group.get('group_name')}.output", None, *items)
            selectors += items
        self._export(node_id, "output", None, *selectors)
        self.outcomes[node_id].note = adapter.note
        return []

    def _hook_route(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        self.outcomes[node_id].note = adapter.note
        if data.get("type") == "question-classifier":
            self._export(node_id, "class_name", None)
        return []

    def _hook_loop(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        items = selector_of(data.get("iterator_selector"))
        out = selector_of(data.get("output_selector"))
        self._export(node_id, "item", None, *([items] if items else []))
        self._export(node_id, "output", None, *([out] if out else []))
        self.outcomes[node_id].note = adapter.note
        self.report.warnings.append(f"{node_id}: {data.get('type')} {adapter.note}")
        return []

    def _hook_code(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        inputs = [s for s in (selector_of(_obj(v).get("value_selector")) for v in _list(data.get("variables"))) if s]
        if len(inputs) == 1:
            return self._pass_through(node_id, data, f"{data.get('code_language') or 'code'}, never run")
        self.outcomes[node_id].note = "code, never run here: kept as a placeholder (replace it with nodes)"
        self.report.warnings.append(f"{node_id}: {self.outcomes[node_id].note}")
        return [self._placeholder(node_id, data, "code")]

    def _pass_through(self, node_id: str, data: dict[str, Any], what: str) -> list[NodeSpec]:
        """A node we do not run whose one input goes on as each of its outputs (said in the report)."""
        inputs = [s for s in (selector_of(_obj(v).get("value_selector")) for v in _list(data.get("variables"))) if s]
        outputs = list(_obj(data.get("outputs"))) or ["output", "result", "text"]
        for name in outputs:
            self._export(node_id, str(name), None, *inputs[:1])
        note = f"absorbed: {what}; its input goes on unchanged as {', '.join(map(str, outputs))}"
        self.outcomes[node_id].note = note
        self.report.warnings.append(f"{node_id}: {note}")
        return []

    def _hook_kept(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        spec = self._placeholder(node_id, data, adapter.theirs)
        self.report.warnings.append(f"{node_id}: a {adapter.theirs} node is kept as a placeholder, never run")
        return [spec]

    # -- Knowledge Pipeline -----------------------------------------------------------------------
    def _hook_datasource(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        kind = str(data.get("provider_type") or data.get("datasource_type") or "")
        title = str(data.get("title") or "File")
        if "local_file" not in (kind, str(data.get("plugin_id") or ""), str(data.get("provider_name") or "")) and (
            "file" not in kind.lower()
        ):
            spec = self._placeholder(node_id, data, "datasource:online")
            spec.config["output_names"] = ["records"]
            self._export(node_id, "*", (spec.id, "records"))
            return [spec]
        file = self._new(node_id, roles.FILE_INPUT, {}, f"{title} (file)", "file")
        loader = self._new(node_id, roles.LOADER, {}, f"{title} (read)")
        self._edge(file.id, "path", loader.id, "path")
        self._export(node_id, "*", (loader.id, "records"))
        self.loaders[node_id] = loader.id
        return [file, loader]

    def _hook_extractor_tool(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        params = _obj(data.get("tool_parameters"))
        source = next((s for s in (_param_selector(v) for v in params.values()) if s), None)
        loader = self.loaders.get(source[0]) if source else None
        self._export(
            node_id, "*", (loader, "records") if loader else None, *([source] if source and not loader else [])
        )
        self.outcomes[node_id].note = adapter.note
        return []

    def _hook_chunker(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        values: dict[str, Any] = dict(_obj(data.get("tool_configurations")))
        source: tuple[str, str] | None = None
        for key, param in _obj(data.get("tool_parameters")).items():
            selector = _param_selector(param)
            if selector is None:
                values[key] = _obj(param).get("value", param)
            elif selector[0] == "rag":  # a pipeline variable ({{#rag.shared.x#}}): its default value
                name = selector[1].split(".")[-1] if "." in selector[1] else selector[1]
                found = _list(_obj(param).get("value"))
                name = str(found[-1]) if len(found) > 2 else name
                if self.shared.get(name) not in (None, ""):
                    values[key] = self.shared[name]
            elif source is None or key in ("input_variable", "input_text", "input", "text", "documents"):
                source = selector
        spec = self._new(node_id, adapter.ours, self._config(adapter, values), str(data.get("title") or "Chunker"))
        self._want(source, (spec.id, "documents"), node_id)
        self._export(node_id, "*", (spec.id, "chunks"))
        if adapter.note:
            self.report.warnings.append(f"{node_id}: {adapter.note}")
        return [spec]

    def _hook_index(self, node_id: str, data: dict[str, Any], adapter: Adapter) -> list[NodeSpec]:
        store = self._placeholder(node_id, data, adapter.theirs)
        store.config["input_names"], store.config["output_names"] = ["documents", "embedder"], []
        self._want(selector_of(data.get("index_chunk_variable_selector")), (store.id, "documents"), node_id)
        specs = [store]
        model = {"model": data.get("embedding_model"), "provider": data.get("embedding_model_provider")}
        if model["model"] or model["provider"]:
            embedder = self._embedder(node_id, model)
            specs.append(embedder)
            self._edge(embedder.id, "embedder", store.id, "embedder")
        self.report.warnings.append(
            f"{node_id}: the pipeline writes into a Dify knowledge base on the Dify server: import with --local to "
            "fill an embedded Chroma collection instead, from the file you give"
        )
        return specs

    def _embedder(self, node_id: str, block: dict[str, Any]) -> NodeSpec:
        key = f"embedding:{provider_key(block.get('provider'))}"
        adapter = DIFY_TABLE.importer(key)
        if adapter is None:
            spec = self._placeholder(
                node_id,
                {"title": "Embedding model", "model": block},
                key if DIFY_TABLE.entry(key) else "embedding:other",
            )
            spec.config["output_names"] = ["embedder"]
            return spec
        spec = self._new(node_id, adapter.ours, self._config(adapter, block), "Embedding model", "embedder")
        slot = credential_slot(spec.type)
        if slot is not None:
            spec.credentials[slot.name] = CredentialRef(provider=slot.provider, name="dify")
            self.report.credentials.append(CredentialFound(spec.id, slot.name, slot.provider, "dify", bound=False))
        return spec

    # -- chat apps (model_config) ---------------------------------------------------------------
    def _chat_app(self) -> None:
        config = _obj(self.data.get("model_config"))
        chat = self._new("app", CHAT_IN, {}, "Chat message")
        self.flow.nodes.append(chat)
        self.flow.layout.positions[chat.id] = Position(x=0, y=0)
        self.report.node("user message", "chat").targets.append((chat.id, chat.type))
        model = self._model("app", _obj(config.get("model")), "Chat")
        self.outcomes["model"] = outcome = self.report.node("model_config.model", "model")
        outcome.targets.append((model.id, model.type))
        pre = str(config.get("pre_prompt") or "")
        datasets = _obj(config.get("dataset_configs"))
        ids = [
            str(_obj(_obj(item).get("dataset")).get("id"))
            for item in _list(_obj(datasets.get("datasets")).get("datasets"))
            if _obj(_obj(item).get("dataset")).get("enabled", True) and _obj(_obj(item).get("dataset")).get("id")
        ]
        template = re.sub(
            r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}",
            r"{\1}",
            pre.replace("{", "{{").replace("}", "}}").replace("{{{{", "{{").replace("}}}}", "}}"),
        )
        template = re.sub(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}", r"{\1}", template)
        prompt = self._new("app", PROMPT, {}, "Prompt")
        nodes = [prompt, model]
        if ids:
            data = {"title": "Knowledge", "dataset_ids": ids, "dataset_configs": datasets}
            store = self._placeholder("app", data, "knowledge-retrieval")
            store.config["input_names"], store.config["output_names"] = ["query"], ["result"]
            nodes.insert(0, store)
            self.report.node("model_config.dataset_configs", "knowledge-retrieval").targets.append(
                (store.id, PLACEHOLDER)
            )
            self._edge(chat.id, "message", store.id, "query")
            self._edge(store.id, "result", prompt.id, "context")
            if "{context}" not in template:
                template = (template + "\n\n" if template else "") + "Context:\n{context}"
            self.report.warnings.append(
                f"the app searches Dify knowledge base(s) {', '.join(self._shown_ids(ids))} on the Dify server: "
                "import with --local "
                "to search an embedded Chroma collection instead, filled on the first run from the file you give"
            )
        if "{question}" not in template and "{query}" not in template:
            template = (template + "\n\n" if template else "") + "Question: {question}"
        prompt.config["template"] = template
        for name in re.findall(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", template):
            if name in ("question", "query"):
                self._edge(chat.id, "message", prompt.id, name)
        self._edge(prompt.id, "prompt", model.id, "prompt")
        out = self._new("app", CHAT_OUT, {}, "Answer")
        nodes.append(out)
        self._edge(model.id, "answer", out.id, "message")
        for offset, spec in enumerate(nodes):
            self.flow.nodes.append(spec)
            self.flow.layout.positions[spec.id] = Position(x=320.0 * (offset + 1), y=0)
        if self.mode == "agent-chat":
            tools = _list(_obj(config.get("agent_mode")).get("tools"))
            if tools:
                self.report.warnings.append(
                    f"the agent's {len(tools)} tool(s) are not carried: the app runs as a retrieval chat here"
                )

    # -- references -----------------------------------------------------------------------------
    def _resolve(self) -> None:
        for want in self.wants:
            found = self._targets(want.selector, set())
            if not found:
                node, var = want.selector
                what = f"{node}.{var}" if node else var
                spec = next((n for n in self.flow.nodes if n.id == want.target[0]), None)
                if spec is not None and spec.type == CHAT_OUT:
                    # an answer showing only what a node we do not run gives: nothing to show here
                    self.flow.nodes.remove(spec)
                    self.flow.layout.positions.pop(spec.id, None)
                    for outcome in self.report.nodes:
                        outcome.targets = [t for t in outcome.targets if t[0] != spec.id]
                    self.report.warnings.append(
                        f"{want.node}: shows {what!r}, which nothing Flowbuilder runs gives: left out"
                    )
                    continue
                self.report.connections_dropped.append(
                    f"{want.node}: the variable {what!r} is given by nothing Flowbuilder runs"
                )
                continue
            for source in found:
                self._edge(source[0], source[1], want.target[0], want.target[1])

    def _targets(self, selector: tuple[str, str], seen: set[tuple[str, str]]) -> list[Target]:
        node, var = selector
        if selector in seen:
            return []
        seen.add(selector)
        if node == "sys" or var.startswith("sys."):
            var = var if var.startswith("sys.") else f"sys.{var}"
            chat = self.chat.get(var) or (self.chat.get("sys.query") if var == "sys.query" else None)
            return [(chat, "message")] if chat else []
        found = self.exports.get((node, var)) or self.exports.get((node, "*"))
        if found is None:
            return []
        if found.target is not None:
            return [found.target]
        targets: list[Target] = []
        for alias in found.alias:
            targets += self._targets(alias, seen)
        return targets

    def _edge(self, source: str, source_port: str, target: str, target_port: str) -> None:
        for end, port, key in ((source, source_port, "output_names"), (target, target_port, "input_names")):
            spec = next((n for n in self.flow.nodes if n.id == end), None)
            if spec is not None and spec.type == PLACEHOLDER and port not in spec.config.setdefault(key, []):
                spec.config[key].append(port)
        edge = Edge(source=source, source_port=source_port, target=target, target_port=target_port)
        if all(e.key != edge.key for e in self.flow.edges):
            self.flow.edges.append(edge)


_JINJA = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)([^{}]*?)\s*\}\}")


def jinja_to_template(text: str) -> tuple[str, list[str]]:
    """A Jinja text's ``{{ name }}`` (or ``{{ name[0].content }}``, read as ``name``) as our ``{name}``;
    other braces doubled (literal). Returns the template and the expressions read as their variable."""
    out: list[str] = []
    complex_refs: list[str] = []
    last = 0
    for match in _JINJA.finditer(text):
        out.append(text[last : match.start()].replace("{", "{{").replace("}", "}}"))
        last = match.end()
        if match.group(2).strip():
            complex_refs.append(match.group(1) + match.group(2).strip())
        out.append("{" + match.group(1) + "}")
    out.append(text[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(out), complex_refs


def _sys(selector: tuple[str, str]) -> tuple[str, str]:
    node, var = selector
    return ("sys", "query") if var in ("sys.query", "query") and node in ("", "sys") else selector


def _param_selector(value: Any) -> tuple[str, str] | None:
    """A pipeline tool parameter that references a variable: ``{"type": "variable", "value": [node, var]}``
    or a ``{{#node.var#}}`` text."""
    value = _obj(value)
    inner = value.get("value")
    if value.get("type") == "variable":
        return selector_of(inner)
    if isinstance(inner, str):
        match = _REF.search(inner)
        if match:
            return ref_selector(match.group(1).strip())
    return None


def note_text(value: Any) -> str:
    """A Dify note's text: Lexical editor JSON (its ``text`` leaves joined), or plain text."""
    if not isinstance(value, str):
        return ""
    try:
        tree = json.loads(value)
    except ValueError:
        return value
    lines: list[str] = []

    def walk(item: Any, line: list[str]) -> None:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                line.append(item["text"])
            for child in _list(item.get("children")):
                walk(child, line)
            if item.get("type") in ("paragraph", "heading", "listitem") and line:
                lines.append("".join(line))
                line.clear()
        elif isinstance(item, list):
            for child in item:
                walk(child, line)

    rest: list[str] = []
    walk(_obj(tree).get("root", tree), rest)
    if rest:
        lines.append("".join(rest))
    return "\n".join(lines)


def _node_problem(node: Any) -> str | None:
    if not isinstance(node, dict):
        return "is not an object"
    if not isinstance(node.get("id"), str | int) or node.get("id") in ("", None):
        return 'has no "id"'
    if not isinstance(node.get("data"), dict):
        return f'{node["id"]!r} has no "data" object; every node needs "id" and "data": {{"type", ...}}'
    return None


def _position(node: dict[str, Any]) -> Position:
    pos = _obj(node.get("position"))
    return Position(x=to_float(pos.get("x")) or 0.0, y=to_float(pos.get("y")) or 0.0)


def _safe_id(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", node_id).strip("-") or "node"
