"""Schema-driven fuzzing of every node type's Config: no field value may produce a traceback.

For each case one registered node type gets a config whose fields come from its pydantic JSON schema,
bent at the edges: strings (URLs such as ``http://x:99999`` or ``http://[::1``, paths such as
``~nosuchuser/x``, escape sequences, format fields), numbers (``1e308``, ``inf``, ``nan``, ``-1``, huge
ints), wrong types and nested junk. The node is wired to small upstream nodes so that it can run, and the
flow goes through what a user can do with it:

- ``validate``: :func:`flowbuilder.graph.analyze` with a resolver, every issue formatted;
- ``run``: the executor up to that node (offline: nothing is bound, anything network goes to closed
  ports on 127.0.0.1 and an audit hook refuses, and reports, any other destination);
- ``export`` to n8n and to LangFlow, each written as strict JSON and read back by the importer;
- ``builder``: the builder's load path without a browser (session, issues, canvas views, forms, accounts).

Outcomes: ``clean`` (worked, or failed with a one-line :class:`FlowbuilderError`), ``traceback`` (another
exception escaped a step), ``node-crash`` (a node's ``run`` raised something other than a
:class:`FlowbuilderError`: the user sees ``ValueError: ...`` instead of what to do), ``hang``, ``egress``.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import logging
import math
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from flowbuilder.errors import FlowbuilderError

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_harness

STEP_SECONDS = 10.0
TARGET = "target"
CLOSED_PORT = 9  # "discard": nothing listens on it here; a request fails at once
CLOSED_URL = f"http://127.0.0.1:{CLOSED_PORT}"

URLS = [
    "http://x:99999",
    "http://[::1",
    "http://x:abc",
    "http://127.0.0.1:9",
    "http://127.0.0.1:9/v1",
    "https://127.0.0.1:9",
    "http://localhost:9",
    "http://[::1]:9",
    "127.0.0.1:9",
    "http://sneaky.localhost:9",
    "http://attacker.example:11434",
    "ftp://127.0.0.1:9",
    "http://",
    "://",
    "http://user:pass@127.0.0.1:9",
    "http://127.0.0.1:9/admin/delete?all=1",
    "http://127.0.0.1:0",
    "http://x\x00y",
    "http://%zz",
    "http://[fe80::1%25eth0]:9",
    "http://0.0.0.0:9",
    "javascript:alert(1)",
    "http://127.0.0.1:9" + "/a" * 500,
    "HTTP://LOCALHOST:9",
    "http://127.0.0.1:-1",
    "http://127.1:9",
]
PATHS = [
    "~nosuchuser/x",
    "~nosuchuser",
    "~nosuchuser/../x.csv",
    "~",
    "/nonexistent/x.csv",
    "../../../../nonexistent.csv",
    "",
    ".",
    "rows.csv",
    "x\x00y",
    "a" * 5000,
    "C:\\x.csv",
    "~/nonexistent-flowbuilder/x.csv",
    "chroma_db",
    "/",
    "\ud800.csv",
]
STRINGS = [
    "",
    " ",
    "x" * 10_000,
    "\x1b[2K\rvalid",
    "\ud800",
    "={{ $env.HOME }}",
    "${HOME}",
    "{question}",
    "{",
    "}",
    "{0}",
    "{a.b}",
    "{context",
    "%s",
    "null",
    "0",
    "-1",
    "inf",
    "nan",
    "1e308",
    "\u202e",
    "a,b",
    "[",
    "\n\n",
    "\x00",
    "x:y",
    "🙂" * 100,
]
NUMBERS: list[Any] = [
    0,
    -1,
    1,
    0.5,
    -0.0,
    1e308,
    -1e308,
    math.inf,
    -math.inf,
    math.nan,
    2**63,
    -(2**63),
    10**40,
    5e-324,
    65536,
    True,
]
JUNK: list[Any] = [None, [], {}, [[[[]]]], {"a": {"b": [None]}}, "x", 1e308, -1, True, [1, "a"], {"": None}]


@dataclass
class Outcome:
    kind: str
    step: str = ""
    detail: str = ""
    reached: str = ""
    """How far the target node got in ``run``: ``refused`` (validation), or its status (ok, failed ...)."""


@dataclass
class Campaign(fuzz_harness.Campaign):
    per_step: Counter[str] = field(default_factory=Counter)
    KINDS: ClassVar[tuple[str, ...]] = ("clean", "traceback", "node-crash", "hang", "egress")
    UNIT: ClassVar[str] = "cases"

    def table(self) -> str:
        reached = ", ".join(f"{name} {n}" for name, n in self.per_step.most_common())
        return super().table() + f"\ntarget node in run: {reached}"


# --- generating configs ----------------------------------------------------------------------------


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(root.get("$defs", {}).get(ref.split("/")[-1], {}))
    return schema


def _kind_of_name(name: str) -> str:
    lowered = name.lower()
    if any(word in lowered for word in ("url", "host", "endpoint")):
        return "url"
    if any(word in lowered for word in ("path", "dir", "cwd", "command", "file")):
        return "path"
    return ""


def value_for(name: str, schema: dict[str, Any], root: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value for field ``name``: often valid-looking, often at an edge, sometimes of the wrong type."""
    schema = _resolve(schema, root)
    if depth > 3 or rng.random() < 0.12:
        return copy.deepcopy(rng.choice(JUNK))
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return value_for(name, rng.choice(options), root, rng, depth + 1)
    if "enum" in schema and rng.random() < 0.6:
        return rng.choice(schema["enum"])
    if "const" in schema and rng.random() < 0.6:
        return schema["const"]
    kind = schema.get("type")
    special = _kind_of_name(name)
    if kind == "string" or (kind is None and special):
        if special == "url" and rng.random() < 0.8:
            return rng.choice(URLS)
        if special == "path" and rng.random() < 0.8:
            return rng.choice(PATHS)
        return rng.choice(STRINGS + URLS[:4] + PATHS[:3])
    if kind in ("integer", "number"):
        edges = [schema.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")]
        picks = NUMBERS + [e for e in edges if e is not None] + [(e or 0) - 1 for e in edges if e is not None]
        value = rng.choice(picks)
        return str(value) if rng.random() < 0.25 else value  # "inf" as a string: pydantic reads it
    if kind == "boolean":
        return rng.choice([True, False, "yes", 0, None])
    if kind == "array":
        items = schema.get("items") or {}
        return [value_for(name, items, root, rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 5]))]
    if kind == "object":
        extra = schema.get("additionalProperties")
        value_schema = extra if isinstance(extra, dict) else {"type": "string"}
        keys = ["a", "", "LD_PRELOAD", "\x1b[31m", "source", "$where", "x" * 300]
        return {rng.choice(keys): value_for(name, value_schema, root, rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if kind == "null":
        return None
    return copy.deepcopy(rng.choice(JUNK + STRINGS[:5] + NUMBERS[:5]))


def _accepted(cls: Any, config: dict[str, Any]) -> bool:
    try:
        cls.Config.model_validate(config)
    except Exception:
        return False
    return True


def fuzz_config(cls: Any, rng: random.Random) -> dict[str, Any]:
    """A config for ``cls``: 1-3 fields bent, occasionally an unknown field or a wholly wrong config."""
    schema = cls.Config.model_json_schema()
    properties: dict[str, Any] = schema.get("properties", {})
    config: dict[str, Any] = {}
    if not properties or rng.random() < 0.03:
        return rng.choice([{}, {"unknown": 1}, {"": None}])
    # half the cases keep only values the Config accepts, so the node gets past validation and runs
    accepted_only = rng.random() < 0.5
    for name in rng.sample(sorted(properties), k=min(len(properties), rng.randint(1, 3))):
        for _ in range(8 if accepted_only else 1):
            value = value_for(name, properties[name], schema, rng)
            if not accepted_only or _accepted(cls, {**config, name: value}):
                config[name] = value
                break
    if rng.random() < 0.03:
        config["not_a_field"] = "x"
    return config


# --- wiring the node so that it can run ------------------------------------------------------------

PROVIDERS: dict[str, tuple[str, dict[str, Any]]] = {
    "message": ("chat.input", {}),
    "text": ("chat.input", {}),
    "any": ("chat.input", {}),
    "records": ("loader.file", {"path": "rows.csv", "mode": "records"}),
    "chunks": ("splitter.recursive", {"chunk_size": 200, "chunk_overlap": 0}),
    "embedder": ("embedder.wordllama", {}),
    "vector_store": ("vectorstore.chroma", {"collection": "fuzz", "persist_directory": "chroma_db"}),
    "hits": ("retriever.keyword", {}),
    "chat_model": ("llm.ollama", {"base_url": f"http://127.0.0.1:{CLOSED_PORT}", "timeout": 2, "max_retries": 0}),
    "answer": ("llm.ollama", {"base_url": f"http://127.0.0.1:{CLOSED_PORT}", "timeout": 2, "max_retries": 0}),
    "prompt": ("prompt.template", {}),
    "tool": ("retriever.tool", {}),
    "memory": ("memory.window", {}),
    "retriever": ("retriever.vector", {}),
}


def build_flow(type_name: str, config: dict[str, Any], registry: Any) -> Any:
    """The target node with a default upstream node for each required input (recursively)."""
    from flowbuilder.flow import Edge, Flow, NodeSpec

    cls = registry.get(type_name)
    fields = cls.Config.model_json_schema().get("properties", {})
    # a server the fuzz did not pick is the closed port, never a provider's real service
    defaults = {name: CLOSED_URL for name in ("base_url", "host", "url") if name in fields and name not in config}
    if type_name == "vectorstore.qdrant":
        defaults.pop("url", None)  # empty = the embedded store
    nodes = [NodeSpec(id=TARGET, type=type_name, config={**defaults, **config})]
    edges: list[Edge] = []
    made: dict[str, str] = {}

    def supply(node_id: str, cls: Any, parsed: Any, depth: int) -> None:
        for port in cls.input_ports(parsed):
            if not port.required or depth > 4:
                continue
            provider = PROVIDERS.get(port.type.value)
            if provider is None:
                continue
            kind, provider_config = provider
            source_id = made.get(kind)
            provider_cls = registry.get(kind)
            if source_id is None:
                source_id = f"up_{kind.replace('.', '_')}"
                made[kind] = source_id
                nodes.append(NodeSpec(id=source_id, type=kind, config=dict(provider_config)))
                supply(source_id, provider_cls, provider_cls.Config.model_validate(provider_config), depth + 1)
            out = next((p for p in provider_cls.output_ports(None) if _fits(p.type.value, port.type.value)), None)
            if out is not None:
                edges.append(Edge(source=source_id, source_port=out.name, target=node_id, target_port=port.name))

    try:
        parsed = cls.Config.model_validate(config)
    except Exception:  # an invalid config: validate reports it; wire the defaults' ports
        parsed = cls.Config()
    supply(TARGET, cls, parsed, 0)
    return Flow(name=f"fuzz {type_name}", nodes=nodes, edges=edges)


def _fits(out_type: str, in_type: str) -> bool:
    from flowbuilder.ports import PortType, compatible

    return compatible(PortType(out_type), PortType(in_type))


# --- running -------------------------------------------------------------------------------------


class _Egress:
    """An audit hook: while armed, a connection beyond this machine is refused and noted. (Name lookups
    pass: the egress check itself resolves ``*.localhost`` names; offline, others fail at once.)"""

    armed = False
    seen: ClassVar[list[str]] = []
    installed = False

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            sys.addaudithook(cls._hook)
            cls.installed = True

    @classmethod
    def _hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if not cls.armed:
            return
        if event != "socket.connect" or len(args) < 2 or not isinstance(args[1], tuple) or not args[1]:
            return  # a unix socket path, or not a connection
        host = str(args[1][0])
        try:
            local = ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
        except ValueError:
            local = False
        if not local:
            cls.seen.append(host)
            raise OSError(f"fuzz: connection to {host!r} refused by the harness")


class _NodeCrashes(logging.Handler):
    """Collects the exceptions the executor logs for failed nodes (``log.debug(..., exc_info=True)``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.raw: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if not isinstance(exc, FlowbuilderError):
                self.raw.append(exc)


def builder_load(flow: Any, workdir: Path) -> None:
    """What the builder does to show a flow: session, layout, issues in UI words, canvas views, forms."""
    from flowbuilder.ui.accounts import accounts, apply_account_keys, issue_text
    from flowbuilder.ui.canvas import node_views
    from flowbuilder.ui.forms import form_fields
    from flowbuilder.ui.session import AppConfig, EditorSession

    session = EditorSession.create(flow, AppConfig(workspace=workdir), workdir / "case.json")
    if session.state.needs_layout():
        session.state.auto_layout()
    apply_account_keys(session)
    issues = session.state.issues_by_node(session.resolver)
    node_views(session.state, issues, base_dir=session.base_dir, describe=lambda issue: issue_text(session, issue))
    accounts(session)
    for spec in flow.nodes:
        if spec.type in session.state.registry:
            form_fields(session.state.registry.get(spec.type).Config.model_json_schema())


def _finite(value: Any) -> Any:
    """NaN and infinities as the strings a file can carry (JSON has no such numbers; pydantic reads them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def as_read_from_a_file(flow: Any) -> Any:
    """``flow`` as it arrives from a stranger's file: written as JSON and read back by the flow reader
    (limits, lone surrogates mended), so the steps see what they would see in real use."""
    from flowbuilder.formats.limits import parse_untrusted_json
    from flowbuilder.formats.native import flow_from_data

    data = {"format": "flowbuilder", "version": 1, **_finite(flow.model_dump(mode="python"))}
    text = json.dumps(data, ensure_ascii=True, default=repr)
    return flow_from_data(parse_untrusted_json(text, "case.json"), "case.json")


def prepare(workdir: Path) -> None:
    (workdir / "rows.csv").write_text("id,title,body\n1,Login,Reset the password\n2,Signup,Use the form\n")
    (workdir / "case.json").write_text("{}")


def run_case(type_name: str, config: dict[str, Any], workdir: Path, data_dir: Path) -> Outcome:
    from flowbuilder.errors import FlowValidationError
    from flowbuilder.executor import Executor
    from flowbuilder.formats.convert import convert_data, export_flow
    from flowbuilder.formats.limits import strict_dumps
    from flowbuilder.graph import analyze
    from flowbuilder.registry import default_registry
    from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
    from flowbuilder.trust.providers import PROVIDER_ENV_VARS

    registry = default_registry()
    # every key bound (nothing real), and approved only for the closed port: a destination the fuzz picks
    # must be refused by the egress check (the audit hook is the backstop that proves it)
    resolver = CredentialResolver(
        explicit={provider: f"fuzz-{provider}-key-0123456789" for provider in PROVIDER_ENV_VARS},
        store=CredentialStore(workdir / "no-credentials.json"),
        environ={},
        approved=[(provider, CLOSED_URL) for provider in (*PROVIDER_ENV_VARS, "mcp")],
    )
    crashes = _NodeCrashes()
    executor_log = logging.getLogger("flowbuilder.executor")
    executor_log.addHandler(crashes)
    level, disabled, propagate = executor_log.level, logging.root.manager.disable, executor_log.propagate
    executor_log.setLevel(logging.DEBUG)
    executor_log.propagate = False  # nothing printed: the handler keeps what it needs
    logging.disable(logging.NOTSET)  # the executor's debug record carries a failed node's exception
    _Egress.install()
    _Egress.seen = []
    step = "build"
    reached = ""
    try:
        step = "load"
        try:
            flow = as_read_from_a_file(build_flow(type_name, config, registry))
        except FlowbuilderError:  # the reader refused the file (a 41-digit integer): one clear line
            return Outcome("clean", "load")
        _Egress.armed = True
        for step in ("validate", "run", "export n8n", "export langflow", "builder"):
            with fuzz_harness.step_limit(STEP_SECONDS):
                try:
                    if step == "validate":
                        graph = analyze(flow, registry, resolver, base_dir=workdir)
                        "\n".join(str(issue) for issue in graph.issues + graph.warnings)
                    elif step == "run":
                        try:
                            result = Executor(registry, resolver, data_dir=data_dir).run(
                                flow, inputs="How do I reset my password?", to=TARGET, base_dir=workdir, use_cache=False
                            )
                            target = result.results.get(TARGET)
                            reached = target.status if target is not None else "not run"
                        except FlowValidationError as exc:
                            reached = "refused:" + ",".join(sorted({i.code for i in exc.issues}))
                    elif step.startswith("export"):
                        fmt = step.split()[1]
                        data, _ = export_flow(flow, fmt)
                        text = strict_dumps(data)
                        convert_data(json.loads(text), fmt, f"export.{fmt}.json")
                    else:
                        builder_load(flow, workdir)
                except FlowbuilderError:
                    pass
    except fuzz_harness.StepTimeout:
        return Outcome("hang", step)
    except Exception as exc:
        return Outcome("traceback", step, f"{type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc(limit=-4))
    finally:
        _Egress.armed = False
        executor_log.removeHandler(crashes)
        executor_log.setLevel(level)
        executor_log.propagate = propagate
        logging.disable(disabled)
    if _Egress.seen:
        return Outcome("egress", "run", f"tried to reach {sorted(set(_Egress.seen))}")
    if crashes.raw:
        exc = crashes.raw[0]
        where = "".join(traceback.format_exception(exc, limit=-3))
        return Outcome("node-crash", "run", f"{type(exc).__name__}: {str(exc)[:200]}" + "\n" + where[-1500:], reached)
    return Outcome("clean", "done", reached=reached)


def cases(count: int, seed: int = 0) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(label, node type, config)``; node types in turn, so every type gets its share."""
    from flowbuilder.registry import default_registry

    registry = default_registry()
    names = sorted(registry.names() if hasattr(registry, "names") else registry)
    rng = random.Random(seed)
    for index in range(count):
        type_name = names[index % len(names)]
        config = fuzz_config(registry.get(type_name), rng)
        yield f"{index}:{type_name}", type_name, config


def campaign(count: int, workdir: Path, seed: int = 0) -> Campaign:
    prepare(workdir)
    data_dir = workdir / "data"
    result = Campaign()
    started = time.perf_counter()
    for label, type_name, config in cases(count, seed):
        outcome = run_case(type_name, config, workdir, data_dir)
        result.counts[outcome.kind] += 1
        result.per_step[outcome.reached or outcome.step] += 1
        if outcome.kind != "clean":
            shown = json.dumps(config, default=repr, ensure_ascii=True)[:600]
            result.failures.append((label, outcome, shown))
    result.seconds = time.perf_counter() - started
    return result
