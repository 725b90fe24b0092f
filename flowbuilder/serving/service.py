"""What a flow offers to the outside (MCP tools, resources, prompts; the HTTP search API), independent of
any transport.

A :class:`FlowService` runs the flow through the normal :class:`~flowbuilder.executor.Executor`, so the
first call ingests exactly as ``flowbuilder run`` does. The nodes that do not depend on the question
(loader, labeller, splitter, embedder, store) run under an exclusive lock, and their results are then
reused by every later call: searches and questions run concurrently under a shared lock, and only the
question's nodes (retriever, reranker, prompt, model) run per call. When a loaded file changes (checked
at most once a second), the next call ingests again, alone, so a store keeps mirroring its source.

Tool names and descriptions come from the flow and its nodes, and can be edited in the flow's
``meta["mcp"]`` mapping (saved with the flow; node configs are untouched so every saved flow still loads)::

    "meta": {"mcp": {"tools": {"retriever": {"name": "search_test_cases", "description": "...",
                                             "enabled": true}},
                     "ask": {"name": "ask", "description": "...", "enabled": true}}}
"""

from __future__ import annotations

import contextlib
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

import networkx as nx

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document, Hit
from flowbuilder.errors import ServeError
from flowbuilder.executor import GENERIC_INPUT, Executor, NodeResult, RunEvent, RunResult
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import FlowGraph, analyze
from flowbuilder.node import RunContext
from flowbuilder.ports import PortType
from flowbuilder.serving.rwlock import ReadWriteLock
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.secrets import mask_secrets, mask_secrets_obj, redact, redact_obj

REFRESH_SECONDS = 1.0
"""How often a search checks that the ingested files did not change (a stat per file)."""
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_K = 100


@dataclass
class SearchEndpoint:
    """One retrieval node offered as a search tool."""

    node_id: str
    name: str
    description: str
    default_k: int
    kind: str
    """``hits``: the node outputs hits for the chat input's text; ``tool``: it outputs a search tool service."""


@dataclass
class PromptEndpoint:
    """A prompt node offered as an MCP prompt: its template and variables."""

    node_id: str
    name: str
    description: str
    template: str
    variables: list[str]


@dataclass
class SearchResult:
    """What one search tool call found."""

    tool: str
    node_id: str
    query: str
    k: int
    hits: list[Hit]

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready data (masked)."""
        return {
            "tool": self.tool,
            "node": self.node_id,
            "query": self.query,
            "k": self.k,
            "hits": [hit_json(hit) for hit in self.hits],
        }

    def to_text(self) -> str:
        """The result as numbered passages for a model to read."""
        if not self.hits:
            return f"No passages found for {self.query!r} (node '{self.node_id}', k={self.k})."
        lines = [
            f"Top {len(self.hits)} for {self.query!r} (node '{self.node_id}'; score = similarity, higher is better):"
        ]
        for hit in self.hits:
            data = hit_json(hit)
            where = data["source"] or "unknown source"
            if data["record_id"]:
                where += f", {data['record_id']}"
            lines.append(f"\n[{hit.rank}] score {hit.score:.4f}  ({where})\n{data['text'].strip()}")
        return "\n".join(lines)


@dataclass
class AskResult:
    """What one ``ask`` call answered, with the passages it was given."""

    question: str
    answer: str | None
    ok: bool
    error: str | None = None
    answer_node: str | None = None
    sources: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready data (masked)."""
        return {
            "question": self.question,
            "ok": self.ok,
            "answer": self.answer,
            "error": self.error,
            "answer_node": self.answer_node,
            "sources": self.sources,
        }


def hit_json(hit: Hit) -> dict[str, Any]:
    """The wire form of a hit: rank, score, text, source, record id (and offsets when known)."""
    meta = hit.document.metadata
    record_id = meta.get("record_id")
    data: dict[str, Any] = {
        "rank": hit.rank,
        "score": round(float(hit.score), 6),
        "text": mask_secrets(hit.document.text),
        "source": mask_secrets(str(meta.get("source") or "")),
        "record_id": None if record_id is None else mask_secrets(str(record_id)),
        "id": hit.id,
    }
    for key in ("start", "end", "chunk_index", "page", "row"):
        if isinstance(meta.get(key), int):
            data[key] = meta[key]
    if isinstance(meta.get("record_ids"), list):
        data["record_ids"] = [mask_secrets(str(r)) for r in meta["record_ids"]]
    return data


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]+", "_", text).strip("_")[:64] or "flow"


class _StderrProgress:
    """Run events as short lines on a text stream (stderr), never on stdout (the stdio protocol stream)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._last: dict[str, int] = {}

    def __call__(self, event: RunEvent) -> None:
        node = event.node_id or ""
        if event.kind == "progress":
            done, total = int(event.data.get("done", 0)), int(event.data.get("total", 0) or 0)
            step = max(1, total // 10)
            if done != total and done - self._last.get(node, -step) < step:
                return
            self._last[node] = done
            self._write(f"  {node}: {event.data.get('message') or 'working'} {done}/{total}")
        elif event.kind == "node_started":
            self._write(f"> {node}")
        elif event.kind == "node_failed":
            self._write(f"! {event.data.get('error', 'failed')}")

    def _write(self, line: str) -> None:
        try:
            self.stream.write(redact(line) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr must not break serving
            pass


class FlowService:
    """A loaded flow plus an executor: search, ask, chunks, prompts and the public flow definition."""

    def __init__(
        self,
        flow: str | Path | Flow,
        *,
        base_dir: Path | None = None,
        resolver: CredentialResolver | None = None,
        data_dir: Path | None = None,
        log: TextIO | None = None,
        executor: Executor | None = None,
        inspect_only: bool = False,
        flow_file: Path | None = None,
    ) -> None:
        """``flow`` is a flow file, or a Flow (the builder's open flow; then ``base_dir`` resolves its paths and
        ``flow_file``, when it was saved, says which flow it is). ``inspect_only``: only to list what it would offer
        (no refusal of paths it may not read; nothing runs). Everything served is masked, sources before they
        are cut (``Executor.served``)."""
        if isinstance(flow, Flow):
            self.flow = flow.model_copy(deep=True)
            self.path = Path(f"{_slug(flow.name)}.json")
            self.base_dir = (base_dir or Path.cwd()).resolve()
            self.flow_file = flow_file
        else:
            self.path = Path(flow)
            self.flow = load_flow(self.path)
            self.base_dir = base_dir or self.path.resolve().parent
            self.flow_file = self.path
        self.executor = executor or Executor(resolver=resolver, data_dir=data_dir)
        self.executor.served = True
        self.progress: Callable[[RunEvent], None] = _StderrProgress(log or sys.stderr)
        self._rw = ReadWriteLock()
        self._latest: dict[str, NodeResult] = {}
        """The latest successful result of every node any run produced (chunks come from here)."""
        self._snapshot: dict[str, NodeResult] = {}
        """The results of the ingest (question-independent) nodes, reused by every concurrent search."""
        self._prints: dict[str, str | None] = {}
        self._ingested_scopes: set[frozenset[str]] = set()
        self._checked_at = 0.0
        self.refresh_seconds = REFRESH_SECONDS
        self._sessions: dict[str, threading.Lock] = {}
        self._sessions_guard = threading.Lock()
        self._search_flows: dict[tuple[str, int], Flow] = {}
        """The flow as one search endpoint and k run it (built once, not copied on every search)."""
        self._analyses: dict[tuple[int, str | None], FlowGraph] = {}
        """``analyze`` of those flows (and of the flow itself), reused while the ingest snapshot holds."""
        self.graph: FlowGraph = analyze(
            self.flow,
            self.executor.registry,
            self.executor.resolver,
            base_dir=self.base_dir,
            flow_file=self.flow_file,
            data_dir=self.executor.data_dir,
        )
        refused = ("untrusted-path", "untrusted-store")
        untrusted = [str(issue) for issue in self.graph.issues if issue.code in refused]
        if untrusted and not inspect_only:  # nothing is served from a file the user did not allow
            raise ServeError(f"{self.path}: refused to serve:\n  - " + "\n  - ".join(untrusted))
        self._asked = self._downstream_of_input() | self._text_inputs()
        self.searches = self._find_searches()
        self.answer_node = self._find_answer_node()
        self.prompts = self._find_prompts()

    # ------------------------------------------------------------------ what the flow offers
    @property
    def meta(self) -> dict[str, Any]:
        """The flow's ``meta.mcp`` settings (tool names, descriptions, enabled)."""
        value = self.flow.meta.get("mcp")
        return value if isinstance(value, dict) else {}

    def _tool_meta(self, node_id: str) -> dict[str, Any]:
        tools = self.meta.get("tools")
        entry = tools.get(node_id) if isinstance(tools, dict) else None
        return entry if isinstance(entry, dict) else {}

    def _text_inputs(self) -> set[str]:
        return {nid for nid, node in self.graph.nodes.items() if node.cls.run_input == "text"}

    def _downstream_of_input(self) -> set[str]:
        found: set[str] = set()
        for nid in self._text_inputs():
            if nid in self.graph.graph:
                found |= nx.descendants(self.graph.graph, nid)
        return found

    def _find_searches(self) -> list[SearchEndpoint]:
        asked = self._downstream_of_input()
        candidates: dict[str, str] = {}
        for nid, node in self.graph.nodes.items():
            if node.spec.disabled:
                continue
            types = {port.type for port in node.outputs.values()}
            if PortType.HITS in types and nid in asked and node.cls.category != "Agents":
                # an agent's hits are what its tools found on the way to an answer, not a search of their own
                candidates[nid] = "hits"
            elif PortType.TOOL in types and node.cls.category == "Retrieval":
                candidates[nid] = "tool"
        # A stage whose hits feed another retrieval stage (retriever -> reranker, legs -> fusion) is part of
        # that stage's search: offer the last stage unless the flow's meta enables the inner one explicitly.
        chosen = []
        for nid, kind in candidates.items():
            hits_ports = {name for name, port in self.graph.nodes[nid].outputs.items() if port.type is PortType.HITS}
            feeds = {
                e.target
                for e in self.flow.edges
                if e.source == nid and e.source_port in hits_ports and e.target in candidates
            }
            enabled = self._tool_meta(nid).get("enabled")
            if enabled is False or (feeds and enabled is not True):
                continue
            chosen.append((nid, kind))
        chosen.sort()
        endpoints: list[SearchEndpoint] = []
        names: set[str] = set()
        for nid, kind in chosen:
            node = self.graph.nodes[nid]
            config = node.config
            default_name = "search" if len(chosen) == 1 else f"search_{_slug(nid)}"
            description = (
                f"Search '{self.flow.name}' with node '{node.spec.label}' ({node.spec.type}) and return the "
                "best passages with their similarity scores, sources and record ids."
            )
            if self.flow.description:
                description += f" The flow: {self.flow.description}"
            if kind == "tool":
                default_name = str(getattr(config, "name", "") or default_name)
                description = str(getattr(config, "description", "") or description)
            meta = self._tool_meta(nid)
            name = str(meta.get("name") or default_name)
            if not TOOL_NAME.match(name):
                raise ServeError(
                    f"{self.path}: meta.mcp.tools.{nid}.name '{name}' is not a valid tool name "
                    "(letters, digits, '_' or '-', at most 64)."
                )
            if name in names:
                raise ServeError(
                    f"{self.path}: two search tools are both named '{name}'; rename one in meta.mcp.tools."
                )
            names.add(name)
            k = getattr(config, "k", None)
            endpoints.append(
                SearchEndpoint(
                    node_id=nid,
                    name=name,
                    description=str(meta.get("description") or description),
                    default_k=int(k) if isinstance(k, int) else 4,
                    kind=kind,
                )
            )
        return endpoints

    def _find_answer_node(self) -> str | None:
        asked = self._downstream_of_input()
        try:
            order = list(nx.lexicographical_topological_sort(self.graph.graph))
        except nx.NetworkXUnfeasible:
            cycle = " -> ".join(u for u, *_ in nx.find_cycle(self.graph.graph))
            raise ServeError(
                f"{self.path}: the flow has a cycle through {cycle}; remove one of these connections to serve it."
            ) from None
        answers = [
            nid
            for nid in order
            if nid in asked
            and not self.graph.nodes[nid].spec.disabled
            and any(p.type is PortType.ANSWER for p in self.graph.nodes[nid].outputs.values())
        ]
        return answers[-1] if answers else None

    @property
    def ask_enabled(self) -> bool:
        """Whether ``ask`` is offered: a model or agent fed by the chat input, not switched off."""
        ask = self.meta.get("ask")
        enabled = ask.get("enabled") if isinstance(ask, dict) else None
        return self.answer_node is not None and enabled is not False

    @property
    def ask_name(self) -> str:
        """The ``ask`` tool's name (the flow's meta, else ``ask``)."""
        ask = self.meta.get("ask")
        name = ask.get("name") if isinstance(ask, dict) else None
        return str(name) if isinstance(name, str) and TOOL_NAME.match(name) else "ask"

    @property
    def ask_description(self) -> str:
        """The ``ask`` tool's description (the flow's meta, else one that names the flow)."""
        ask = self.meta.get("ask")
        text = ask.get("description") if isinstance(ask, dict) else None
        if isinstance(text, str) and text.strip():
            return text
        node = self.graph.nodes[self.answer_node].spec.type if self.answer_node else "model"
        return (
            f"Ask '{self.flow.name}' a question: runs the whole flow (retrieval, prompt, {node}) and returns "
            "the answer with the sources it was given."
        )

    def _find_prompts(self) -> list[PromptEndpoint]:
        found = []
        for nid, node in sorted(self.graph.nodes.items()):
            if Capability.RENDERS_PROMPT not in node.cls.capabilities:
                continue
            template = str(getattr(node.config, "template", ""))
            found.append(
                PromptEndpoint(
                    node_id=nid,
                    name=_slug(nid),
                    description=f"The prompt template '{node.spec.label}' of '{self.flow.name}'.",
                    template=template,
                    variables=[port.name for port in node.cls.input_ports(node.config)],
                )
            )
        return found

    # ------------------------------------------------------------------ running
    def _ingest_scope(self, to: str | None) -> frozenset[str]:
        """The nodes of a run (to ``to``, or the whole flow) that do not depend on the question: loaders,
        labellers, splitters, embedders, stores. They run once, exclusively; searches reuse their results."""
        scope = set(self.graph.nodes) if to is None else {to} | self.graph.ancestors(to)
        return frozenset(
            n for n in scope if n in self.graph.nodes and n not in self._asked and not self.graph.nodes[n].spec.disabled
        )

    def _fingerprints(self, nodes: frozenset[str]) -> dict[str, str | None]:
        """What each ingested node's result depends on outside the flow (a loader's file size and mtime)."""
        prints: dict[str, str | None] = {}
        for nid in sorted(nodes):
            node = self.graph.nodes[nid]
            values: dict[str, Any] = {}
            for edge in self.graph.incoming(nid):
                source = self._snapshot.get(edge.source)
                port = node.inputs.get(edge.target_port)
                if source is None or port is None:
                    continue
                value = source.outputs.get(edge.source_port)
                if port.multiple:
                    values.setdefault(port.name, []).append(value)
                else:
                    values[port.name] = value
            try:
                prints[nid] = node.cls.fingerprint(node.config, self.base_dir, None, values)
            except Exception:  # a fingerprint that cannot be taken means: ingest again to find out
                prints[nid] = f"unreadable {time.monotonic()}"
        return prints

    def _ingested(self, scope: frozenset[str]) -> bool:
        """True when ``scope`` was ingested and its sources have not changed since (checked at most once per
        ``refresh_seconds``: a stat per loaded file)."""
        if scope not in self._ingested_scopes:
            return False
        now = time.monotonic()
        if now - self._checked_at < self.refresh_seconds:
            return True
        self._checked_at = now
        current = self._fingerprints(frozenset(self._prints))
        if current != self._prints:
            self._ingested_scopes.clear()
            return False
        return True

    def _run(self, flow: Flow, *, inputs: dict[str, str], to: str | None, session_id: str) -> RunResult:
        # No contextlib.redirect_stdout here: it swaps sys.stdout for every thread, including the
        # transport's writer. On stdio the SDK instead points fd 1 at stderr while it serves and writes the
        # protocol to a private duplicate, so whatever a node prints (Python or native code) lands on stderr.
        scope = self._ingest_scope(to)
        with self._rw.reading():
            if self._ingested(scope):
                # Concurrent: only the question's nodes run (retriever, reranker, prompt, model); the stores
                # are only read, and the embedder batches the questions that arrive together. The analysis
                # is reused and the per-node progress lines are left out (only failures are logged): at
                # many searches a second they cost as much as the search.
                run = self._execute(
                    flow, inputs, to, session_id, reuse=self._snapshot, analyzed=self._analysis(flow, to)
                )
                for failed in run.failed():
                    self.progress(RunEvent("node_failed", failed.node_id, {"error": failed.error or "failed"}))
                self._latest.update({nid: r for nid, r in run.results.items() if r.succeeded})
                return run
        with self._rw.writing():  # ingest (or re-ingest after a source changed): alone
            self._analyses.clear()  # a file the flow reads may have gone or come: analyse again
            run = self._execute(flow, inputs, to, session_id, reuse=None)
            self._latest.update({nid: r for nid, r in run.results.items() if r.succeeded})
            done = {nid: run.results[nid] for nid in scope if nid in run.results}
            if len(done) == len(scope) and all(r.succeeded for r in done.values()):
                self._snapshot.update(done)
                self._prints.update(self._fingerprints(scope))
                self._ingested_scopes.add(scope)
                self._checked_at = time.monotonic()
            return run

    def _execute(
        self,
        flow: Flow,
        inputs: dict[str, str],
        to: str | None,
        session_id: str,
        reuse: dict[str, NodeResult] | None,
        analyzed: FlowGraph | None = None,
    ) -> RunResult:
        # searches and ingests share no chat memory; one caller's chat memory is not written twice at once
        guard = contextlib.nullcontext() if session_id.startswith("serve-") else self._session_lock(session_id)
        with guard:
            return self.executor.run(
                flow,
                inputs=inputs,
                to=to,
                on_event=None if analyzed is not None else self.progress,
                session_id=session_id,
                base_dir=self.base_dir,
                reuse=reuse,
                analyzed=analyzed,
                flow_file=self.flow_file,
            )

    def _session_lock(self, session_id: str) -> threading.Lock:
        with self._sessions_guard:
            return self._sessions.setdefault(session_id, threading.Lock())

    def refresh(self) -> None:
        """Forget the ingested snapshot: the next call ingests again (exclusively)."""
        with self._rw.writing():
            self._ingested_scopes.clear()
            self._snapshot.clear()
            self._prints.clear()
            self._analyses.clear()

    def endpoint(self, name: str | None) -> SearchEndpoint:
        """The search endpoint named ``name`` (the only one when None); ServeError listing the names otherwise."""
        if not self.searches:
            raise ServeError(f"{self.path}: the flow has no retrieval node fed by a chat input; nothing to search.")
        if name is None:
            return self.searches[0]
        for endpoint in self.searches:
            if name in (endpoint.name, endpoint.node_id):
                return endpoint
        available = ", ".join(e.name for e in self.searches)
        raise ServeError(f"no search tool named '{name}'; available: {available}.")

    def search(self, query: str, k: int | None = None, tool: str | None = None) -> SearchResult:
        """Run the flow to one search node with ``query`` as the chat input and ``k`` hits; ingest runs first if its
        files changed."""
        endpoint = self.endpoint(tool)
        if not isinstance(query, str) or not query.strip():
            raise ServeError("the query is empty: give the text to search for.")
        k = endpoint.default_k if k is None else int(k)
        if not 1 <= k <= MAX_K:
            raise ServeError(f"k must be between 1 and {MAX_K}, got {k}.")
        flow = self._search_flow(endpoint.node_id, k)
        run = self._run(flow, inputs={GENERIC_INPUT: query}, to=endpoint.node_id, session_id="serve-search")
        result = run.results.get(endpoint.node_id)
        if result is None or not result.succeeded:
            raise ServeError(redact(self._failure(run, endpoint.node_id)))
        if endpoint.kind == "tool":
            hits = self._search_tool_service(result.outputs, query, k)
        else:
            hits = next((v for v in result.outputs.values() if isinstance(v, list)), [])
            hits = [h for h in hits if isinstance(h, Hit)][:k]
        return SearchResult(endpoint.name, endpoint.node_id, query, k, hits)

    def _search_flow(self, node_id: str, k: int) -> Flow:
        """The flow with the endpoint's ``k``: one copy per (endpoint, k), never edited after it is made."""
        flow = self._search_flows.get((node_id, k))
        if flow is None:
            flow = self.flow.model_copy(deep=True)
            if "k" in type(self.graph.nodes[node_id].config).model_fields:
                flow.node(node_id).config["k"] = k
            with self._sessions_guard:
                flow = self._search_flows.setdefault((node_id, k), flow)
        return flow

    def _analysis(self, flow: Flow, to: str | None) -> FlowGraph:
        """``analyze`` of ``flow`` (one of the service's own, never edited) up to ``to``: done once, since
        with the ingest reused a search's run is short and the analysis was a large share of it."""
        key = (id(flow), to)
        graph = self._analyses.get(key)
        if graph is None:
            executor = self.executor
            graph = analyze(
                flow,
                executor.registry,
                executor.resolver,
                only={to} if to else None,
                base_dir=self.base_dir,
                flow_file=self.flow_file,
                data_dir=executor.data_dir,
            )
            with self._sessions_guard:
                graph = self._analyses.setdefault(key, graph)
        return graph

    def _search_tool_service(self, outputs: dict[str, Any], query: str, k: int) -> list[Hit]:
        from flowbuilder.services import VectorStore

        for value in outputs.values():
            store = getattr(value, "store", None)
            if isinstance(store, VectorStore):
                with self._rw.reading():
                    return store.search(query, k)
        raise ServeError("the retrieval tool gives no searchable store; connect a vector store to it.")

    def _failure(self, run: RunResult, node_id: str) -> str:
        failed = run.failed()
        if failed:
            return str(failed[0].error)
        result = run.results.get(node_id)
        if result is not None:
            return f"node '{node_id}' {result.status}: {result.summary}"
        return f"node '{node_id}' did not run."

    def warm_up(self) -> None:
        """Ingest now (the first search of each tool runs the whole chain up to it)."""
        for endpoint in self.searches:
            self.search("warm-up", 1, endpoint.name)

    def start_warm_up(self) -> threading.Thread:
        """:meth:`warm_up` in a background thread while a client connects; calls wait for it (one lock). A
        failure is written to stderr; each call then reports the same failure itself."""

        def work() -> None:
            try:
                self.warm_up()
            except Exception as exc:
                sys.stderr.write(f"warm-up failed: {redact(str(exc))}\n")

        thread = threading.Thread(target=work, name="flowbuilder-warm-up", daemon=True)
        thread.start()
        return thread

    def ask(self, question: str, session_id: str = "serve") -> AskResult:
        """Run the whole flow with ``question`` as the chat input; the answer and the passages it was given."""
        if not self.ask_enabled or self.answer_node is None:
            raise ServeError(f"{self.path}: the flow has no model or agent fed by a chat input; use search instead.")
        if not isinstance(question, str) or not question.strip():
            raise ServeError("the question is empty.")
        run = self._run(self.flow, inputs={GENERIC_INPUT: question}, to=None, session_id=session_id)
        sources = self._sources(run)
        answer_result = run.results.get(self.answer_node)
        if answer_result is None or not answer_result.succeeded:
            return AskResult(
                question, None, False, redact(self._failure(run, self.answer_node)), self.answer_node, sources
            )
        answer = next((v for v in answer_result.outputs.values() if isinstance(v, str)), "")
        return AskResult(question, mask_secrets(answer), True, None, self.answer_node, sources)

    def _sources(self, run: RunResult) -> list[dict[str, Any]]:
        seen: set[tuple[str, str | None, str]] = set()
        sources: list[dict[str, Any]] = []

        def add(item: dict[str, Any], node_id: str) -> None:
            key = (str(item.get("source") or ""), item.get("record_id"), str(item.get("text", ""))[:80])
            if key in seen:
                return
            seen.add(key)
            sources.append({"node": node_id, **item})

        for nid in run.order:
            result = run.results[nid]
            for value in result.outputs.values():
                if isinstance(value, list) and value and all(isinstance(h, Hit) for h in value):
                    for hit in value:
                        add(hit_json(hit), nid)
            for call in result.details.get("tool_calls", []) if isinstance(result.details, dict) else []:
                for hit in call.get("hits", []) if isinstance(call, dict) else []:
                    if isinstance(hit, dict):
                        add({k: hit.get(k) for k in ("rank", "score", "text", "source", "record_id")}, nid)
        return cast(list[dict[str, Any]], mask_secrets_obj(sources))

    # ------------------------------------------------------------------ resources
    def _store_feeds(self) -> list[tuple[str, str, str]]:
        """``(source node, source port, store node)`` for every edge that feeds documents into a vector store."""
        feeds = []
        for edge in self.flow.edges:
            target = self.graph.nodes.get(edge.target)
            if target is None or target.spec.disabled:
                continue
            port = target.inputs.get(edge.target_port)
            is_store = any(p.type is PortType.VECTOR_STORE for p in target.outputs.values())
            if is_store and port is not None and port.type in (PortType.CHUNKS, PortType.RECORDS):
                feeds.append((edge.source, edge.source_port, edge.target))
        return feeds

    def chunks(self) -> dict[str, list[dict[str, Any]]]:
        """The chunks the flow indexes, by source, with offsets (runs each store's ingest first if needed)."""
        for _, _, store in self._store_feeds():
            if store not in self._latest:
                # The store's own query (if any) is not needed to ingest; a failure is reported by the caller.
                run = self._run(self.flow, inputs={}, to=store, session_id="serve-chunks")
                if store not in self._latest:
                    raise ServeError(redact(self._failure(run, store)))
        by_source: dict[str, list[dict[str, Any]]] = {}
        for source, port, store in self._store_feeds():
            source_result = self._latest.get(source)
            value = source_result.outputs.get(port) if source_result else None
            if not isinstance(value, list):
                continue
            total = getattr(value, "total", None)  # streamed (flowbuilder.streaming): only a sample was kept
            if isinstance(total, int) and total > len(value):
                raise ServeError(
                    f"node '{source}' streamed its {total} chunks into '{store}' without holding them, so they "
                    "cannot be listed here; search the store instead (or serve with FLOWBUILDER_STREAM=never)"
                )
            for doc in value:
                if not isinstance(doc, Document):
                    continue
                meta = doc.metadata
                item = {
                    "store": store,
                    "chunk_index": meta.get("chunk_index"),
                    "start": meta.get("start"),
                    "end": meta.get("end"),
                    "record_id": meta.get("record_id"),
                    "text": doc.text,
                }
                # what leaves the machine from the user's files: keys in them are masked (shape, name, entropy)
                masked = mask_secrets_obj(item)
                assert isinstance(masked, dict)
                by_source.setdefault(mask_secrets(str(meta.get("source") or "unknown")), []).append(masked)
        return by_source

    def flow_definition(self) -> dict[str, Any]:
        """The flow as saved, minus credential references and layout (nothing secret is ever in a flow)."""
        data = self.flow.model_dump(mode="json")
        for node in data.get("nodes", []):
            node.pop("credentials", None)
        data.pop("layout", None)
        return cast(dict[str, Any], redact_obj(data))

    def render_prompt(self, node_id: str, values: dict[str, str]) -> str:
        """The template filled with ``values`` by the node itself (so it renders exactly as in a run)."""
        prompt = next((p for p in self.prompts if p.node_id == node_id), None)
        if prompt is None:
            raise ServeError(f"no prompt template node '{node_id}'.")
        node = self.graph.nodes[node_id]
        filled = {name: values.get(name, "") for name in prompt.variables}
        outputs = node.cls(node.config).run(filled, RunContext(node_id, base_dir=self.base_dir))
        return str(outputs.get("prompt", ""))

    def summary(self) -> dict[str, Any]:
        """What the flow serves, in words (tools, ask, prompts), for the log and the Serve panel."""
        return {
            "flow": self.flow.name,
            "file": self.path.name,
            "search_tools": [{"name": e.name, "node": e.node_id, "k": e.default_k} for e in self.searches],
            "ask": self.ask_name if self.ask_enabled else None,
            "prompts": [p.name for p in self.prompts],
        }
