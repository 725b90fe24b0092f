"""The node convention: a pydantic Config, declared ports, credential slots and a ``run`` method.

::

    class SplitterConfig(BaseModel):
        chunk_size: int = Field(1000, ge=1, description="Max characters per chunk.")

    class SplitterInputs(TypedDict):
        documents: Records

    class SplitterOutputs(TypedDict):
        chunks: Annotated[Chunks, "The chunks, in document order."]  # a string in Annotated: the description

    @register_node
    class RecursiveSplitter(Node[SplitterConfig, SplitterInputs, SplitterOutputs]):
        \"\"\"Split documents like LangChain's RecursiveCharacterTextSplitter.\"\"\"
        type_name = "splitter.recursive"
        category = "Splitters"
        Config = SplitterConfig

        def run(self, inputs: SplitterInputs, ctx: RunContext) -> SplitterOutputs:
            return {"chunks": ...}

The class docstring's first line is the node's one-line description in the palette. A node whose
ports depend on its config (a prompt template's variables) overrides :meth:`Node.input_ports`.

``Inputs``/``Outputs`` are TypedDicts with one key per port, typed by :data:`flowbuilder.portvalues.PYTHON_TYPES`
(optional ports are ``NotRequired``; a ``multiple`` input is a list of the port's type; a string in ``Annotated``
is the description): they are the node's only port declaration (:class:`SignaturePorts` reads ``inputs`` and
``outputs`` from them). The executor checks the values against those ports before and after ``run``
(:func:`flowbuilder.portvalues.check_port_values`), so ``run`` trusts its inputs' types. The class-method hooks
receive the node's own Config type.
"""

from __future__ import annotations

import threading
import time
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, get_args, get_origin
from typing import TypeVar as PlainTypeVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from flowbuilder.capabilities import Capability
from flowbuilder.errors import CredentialError, RunCancelledError
from flowbuilder.ports import Port
from flowbuilder.portvalues import Side, shape_ports
from flowbuilder.trust.egress import Destination
from flowbuilder.trust.pathguard import FileRoots, PathKind
from flowbuilder.trust.places import default_data_dir, resolve_path
from flowbuilder.trust.providers import ENDPOINT_FIELDS, LOCAL_PROVIDERS, CredentialSlot
from flowbuilder.trust.scopes import FlowScope

if TYPE_CHECKING:
    from flowbuilder.trust.ledger import StoreAccess


@dataclass(frozen=True)
class Runtime:
    """An optional library a node type runs on that the builder can install for the user (``llm.local``'s
    llama.cpp). The node class carries it (:attr:`Node.runtime`), so the UI offers the install without
    importing a node module."""

    name: str
    """What is installed, in words ("llama.cpp")."""
    available: Callable[[], bool]
    install_command: Callable[[], list[str]]
    """The argv that installs it into this interpreter's environment."""
    install_env: Callable[[], dict[str, str]]
    bundled_files: Callable[[], list[Path]]
    """Files shipped with it that a file field may pick (a default model)."""
    install_note: str = ""
    """Shown next to the install button (what it builds, how long it takes)."""


class EmptyConfig(BaseModel):
    """For nodes with nothing to configure."""

    model_config = ConfigDict(extra="forbid")


ConfigT = TypeVar("ConfigT", bound=BaseModel)
InputsT = TypeVar("InputsT", bound=Mapping[str, Any], default=Any)
"""A node's ``Inputs`` TypedDict (port name -> value)."""
OutputsT = TypeVar("OutputsT", bound=Mapping[str, Any], default=Any)
"""A node's ``Outputs`` TypedDict (port name -> value)."""

EventSink = Callable[[str, dict[str, Any]], None]

_PROGRESS_INTERVAL_S = 0.1  # progress events are throttled so a UI stays responsive on big batches


class RunContext:
    """What a running node may use: its run input, secrets, progress, cancellation and details.

    ``details`` is for inspection only (the exact messages sent to a model, a sample vector); it
    is shown in the output inspector but never passed to other nodes.
    """

    def __init__(
        self,
        node_id: str,
        *,
        run_input: str | None = None,
        secrets: Mapping[str, str] | None = None,
        cancel_event: threading.Event | None = None,
        emit: EventSink | None = None,
        data_dir: Path | None = None,
        base_dir: Path | None = None,
        session_id: str = "default",
        files: FileRoots | None = None,
        scope: FlowScope | None = None,
    ) -> None:
        self.node_id = node_id
        self.run_input = run_input
        self._secrets = dict(secrets or {})
        self._cancel = cancel_event or threading.Event()
        self._emit = emit
        self.data_dir = data_dir or default_data_dir()
        self.base_dir = base_dir
        """The folder of the flow file; relative paths in configs resolve against it first."""
        self.session_id = session_id
        self.files = files
        """The folders this run may read (:mod:`flowbuilder.trust.pathguard`); None: only never-readable places
        are refused (a node run on its own, a flow built in code)."""
        self.scope = scope
        """Which flow this run belongs to (:mod:`flowbuilder.trust.scopes`): its state lives in :attr:`state_dir`. None
        for a node run by itself (no flow, no executor): then the data dir it was given is its own."""
        self.collection: StoreAccess | None = None
        """For a store node: its collection's address and who may open it (:mod:`flowbuilder.trust.ledger`), set by
        the executor; the node calls :meth:`claim_collection` once the collection is open."""
        self.details: dict[str, Any] = {}
        self._last_progress = 0.0
        self.warning = ""
        """Set through :meth:`warn`: the node succeeded but its result is suspicious (status ``warning``)."""
        self.headline = ""
        """What the node's summary starts with (a store's sync line), set by ``run``: a result of this run that
        is no output, so it travels here rather than on the node object."""
        self.remark = ""
        """A few words the summary ends with in brackets (why a search found nothing), set by ``run``."""
        self.connected_inputs: frozenset[str] = frozenset()
        """Input ports with a connection in the flow (set by the executor)."""
        self.missing_inputs: dict[str, str] = {}
        """Connected optional inputs whose upstream delivered nothing -> why ("was disabled", "failed",
        "did not run"), set by the executor."""
        self.writers: dict[str, str] = {}
        """For a store node that only reads: the nodes writing the same collection (implicit dependencies)
        -> "ok" or why they delivered nothing ("was disabled", "failed", "did not run")."""

    def resolve_path(self, path: str, kind: PathKind = "file", what: str = "path") -> Path:
        """A path from the config or an input made absolute against the flow's folder (as named: a symlink's
        own name stays the record source), once :meth:`check_path` allows what it resolves to."""
        self.check_path(path, kind, what)
        return resolve_path(path, self.base_dir)

    def check_path(self, path: str | Path, kind: PathKind = "file", what: str = "path") -> Path:
        """The resolved ``path`` (symlinks followed) if this run may read it (see :mod:`flowbuilder.trust.pathguard`);
        :class:`~flowbuilder.errors.UntrustedPathError` saying why not otherwise."""
        files = self.files or FileRoots(flow_dir=None, data_dir=self.data_dir)
        return files.require(path, kind, what, self.base_dir)

    @property
    def state_dir(self) -> Path:
        """The flow's own folder in the data dir (default stores, chat memory, keyword indexes), created; the data
        dir itself for a node run without a flow."""
        return self.scope.prepare(self.data_dir) if self.scope is not None else self.data_dir

    def claim_collection(self, count: int) -> None:
        """Before a store node reads or writes its open collection (holding ``count`` chunks): refuses, with
        :class:`~flowbuilder.errors.UntrustedStoreError`, a collection this flow may not open, and records a
        writer (:meth:`flowbuilder.trust.ledger.StoreAccess.claim`)."""
        if self.collection is not None:
            self.collection.claim(count)

    def summary(self, summary: str) -> str:
        """The node's summary with this run's :attr:`headline` and :attr:`remark`, if any."""
        summary = ", ".join(part for part in (self.headline, summary) if part)
        return f"{summary} ({self.remark})" if self.remark else summary

    def warn(self, message: str) -> None:
        """Mark the result as suspicious (an empty collection, a branch that did not run); shown as a warning."""
        self.warning = f"{self.warning}; {message}" if self.warning else message

    def secret(self, slot: str) -> str:
        """The bound secret for ``slot``; raises :class:`CredentialError` naming the slot if unbound."""
        value = self._secrets.get(slot)
        if not value:
            raise CredentialError(f"Node '{self.node_id}': credential slot '{slot}' is not bound.")
        return value

    def has_secret(self, slot: str) -> bool:
        return bool(self._secrets.get(slot))

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check_cancelled(self) -> None:
        if self._cancel.is_set():
            raise RunCancelledError(f"The run was cancelled inside node '{self.node_id}'.")

    def progress(self, done: int, total: int, message: str = "") -> None:
        """Report batch progress; also the place where long batches notice a cancel."""
        self.check_cancelled()
        now = time.monotonic()
        if self._emit and (done >= total or now - self._last_progress >= _PROGRESS_INTERVAL_S):
            self._last_progress = now
            self._emit("progress", {"done": done, "total": total, "message": message})

    def token(self, text: str) -> None:
        """Stream a piece of a model's answer into the run's events."""
        if self._emit and text:
            self._emit("token", {"text": text})

    def log(self, message: str) -> None:
        if self._emit:
            self._emit("log", {"message": message})


class SignaturePorts:
    """``Node.inputs`` / ``Node.outputs``: the ports the ``run`` signature's ``Inputs``/``Outputs`` TypedDicts
    declare (:func:`flowbuilder.portvalues.shape_ports`), read once per class when first asked. A node typed
    with plain dicts (ports that follow its config) declares none here and overrides :meth:`Node.input_ports`."""

    def __init__(self, side: Side) -> None:
        self.side: Side = side

    def __get__(self, instance: object, owner: type[Any]) -> tuple[Port, ...]:
        return signature_ports(owner, self.side)


_SIGNATURE_PORTS: dict[tuple[type[Any], Side], tuple[Port, ...]] = {}


def signature_ports(cls: type[Any], side: Side) -> tuple[Port, ...]:
    """The ports of ``cls.run``'s ``inputs`` parameter (side ``input``) or return type (``output``)."""
    key = (cls, side)
    if key not in _SIGNATURE_PORTS:
        _SIGNATURE_PORTS[key] = _read_signature(cls, side)
    return _SIGNATURE_PORTS[key]


def _read_signature(cls: type[Any], side: Side) -> tuple[Port, ...]:
    """The TypedDict ``run`` is typed with: the class's own type arguments (``Node[Config, Inputs, Outputs]``,
    which ``run``'s parameters are declared as), else ``run``'s annotations. The type arguments come first: they
    stay true when something wraps or replaces ``run`` on the class (a test's stand-in, a tracing decorator)."""
    where = f"{cls.__name__}.run"
    shape = _bound(cls, InputsT if side == "input" else OutputsT)
    if shape is Any:
        try:
            hints = typing.get_type_hints(cls.run, include_extras=True)
        except NameError as exc:
            raise TypeError(f"{where}: cannot read the signature's types ({exc})") from None
        shape = _bound(cls, hints.get("inputs" if side == "input" else "return", Any))
    if shape is Any or shape is dict or get_origin(shape) in (dict, Mapping):
        return ()  # untyped: ports that follow the config, or none
    if not typing.is_typeddict(shape):
        raise TypeError(f"{where}: {side}s must be a TypedDict (one key per port), got {shape!r}")
    return shape_ports(shape, side, f"{where} ({shape.__name__})")


def _bound(cls: type[Any], annotation: Any) -> Any:
    """``annotation`` with the class's type parameters filled in (a splitter's inputs are ``SplitInputsT``)."""
    bound: dict[Any, Any] = {}
    for klass in cls.__mro__:  # the most derived binding wins
        for base in getattr(klass, "__orig_bases__", ()):
            origin = get_origin(base)
            params = getattr(origin, "__parameters__", ()) if origin is not None else ()
            for param, arg in zip(params, get_args(base), strict=False):
                bound.setdefault(param, bound.get(arg, arg))
    seen = 0
    while isinstance(annotation, PlainTypeVar | TypeVar) and seen < 10:
        annotation = bound.get(annotation, getattr(annotation, "__default__", Any))
        seen += 1
    return annotation


class Node(Generic[ConfigT, InputsT, OutputsT]):
    """Base class of every node type. Subclasses set the class attributes and implement ``run``."""

    type_name: ClassVar[str]
    category: ClassVar[str] = "Other"
    Config: ClassVar[type[BaseModel]] = EmptyConfig
    inputs = SignaturePorts("input")
    """The input ports, read from ``run``'s ``inputs`` TypedDict (never declared a second time)."""
    outputs = SignaturePorts("output")
    """The output ports, read from ``run``'s return TypedDict."""
    credential_slots: ClassVar[tuple[CredentialSlot, ...]] = ()
    run_input: ClassVar[str | None] = None
    """``"text"`` for nodes fed by ``--input TEXT`` (chat input); ``"file"`` for a path (file loader)."""
    cacheable: ClassVar[bool] = True
    """False for nodes whose result must not be reused (a chat model's reply in a conversation)."""
    display_name: ClassVar[str] = ""
    """The name people know (palette, new nodes), e.g. "Vector Store Retriever"; "" = the UI's own table."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names for search: what n8n and LangFlow call this node ("Split Text", "LLM")."""
    stream_in: ClassVar[str | None] = None
    """The input port this node can take batch by batch (:mod:`flowbuilder.streaming`): a per-item transform's
    ``run`` is then called once per batch; a sink's ``run`` gets a :class:`~flowbuilder.streaming.Batches`."""
    stream_out: ClassVar[str | None] = None
    """The output port this node can produce batch by batch; a head (no ``stream_in``) implements
    :meth:`iter_batches`."""
    version: ClassVar[int] = 1
    """The type's description version: bumped when a saved config or port changes, with a migration for it."""
    migrations: ClassVar[Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {}
    """What changed, as :data:`flowbuilder.formats.native.NODE_MIGRATIONS` describes (``"config.FIELD"``,
    ``"port.NAME"`` -> a function from a saved node dict to its new form); applied on load."""
    mappings: ClassVar[Mapping[str, Sequence[Any]]] = {}
    """This type's entries in foreign formats, by format name (``{"n8n": (Adapter(theirs=...),), "langflow":
    ...}``, :class:`flowbuilder.formats.adapters.Adapter`): the format engines read them from the registry, so
    a node pack brings its mappings with its nodes."""
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    """What this type does that other code asks about (:mod:`flowbuilder.capabilities`): never its name."""
    runtime: ClassVar[Runtime | None] = None
    """An optional library this node needs that the builder can install (:class:`Runtime`)."""

    def __init__(self, config: ConfigT) -> None:
        self.config = config

    @classmethod
    def description(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    @classmethod
    def input_ports(cls, config: ConfigT | None = None) -> tuple[Port, ...]:
        return cls.inputs

    @classmethod
    def output_ports(cls, config: ConfigT | None = None) -> tuple[Port, ...]:
        return cls.outputs

    @classmethod
    def fingerprint(
        cls, config: ConfigT, base_dir: Path | None, run_input: str | None, inputs: Mapping[str, Any]
    ) -> str | None:
        """Extra state the result depends on beyond config and inputs (a file's size and mtime),
        so that the result cache notices when it changes. ``inputs`` are this run's input values."""
        return None

    @classmethod
    def can_stream(cls, config: ConfigT) -> bool:
        """Whether this config lets the node stream (a labeller that joins every record into one cannot)."""
        return cls.stream_in is not None or cls.stream_out is not None

    @classmethod
    def stream_size(cls, config: ConfigT, base_dir: Path | None, run_input: str | None) -> int | None:
        """For a head: how many bytes it will read (the executor streams big inputs), None if unknown."""
        return None

    def iter_batches(self, inputs: InputsT, ctx: RunContext) -> Iterator[list[Any]]:
        """For a head: its ``stream_out`` output as batches (lists), read lazily."""
        raise NotImplementedError(f"{type(self).__name__}.iter_batches")

    @classmethod
    def collection_address(cls, config: ConfigT, base_dir: Path | None) -> str | None:
        """For a vector store: where its collection lives (``chroma:<folder>:<name>``), so that a reader and
        the writer of the same collection run in order; None for every other node."""
        return None

    @classmethod
    def command_line(cls, config: ConfigT, base_dir: Path | None = None) -> str | None:
        """The program this node would start on the user's machine (``tool.mcp`` over stdio), or None.
        A flow file names it, so it runs only once the user approved that exact command line (which
        names the resolved program and the absolute folder it runs in)."""
        return None

    @classmethod
    def config_paths(cls, config: ConfigT) -> list[tuple[str, str, PathKind]]:
        """``(field, path, kind)`` for every non-empty config field that names something on disk to read, so
        that ``validate`` judges it before a run (:mod:`flowbuilder.trust.pathguard`); ``run`` checks again."""
        return []

    @classmethod
    def path_problems(cls, config: ConfigT, base_dir: Path | None) -> list[tuple[str | None, str]]:
        """What ``validate`` can tell about the files a config names before a run (a type no reader supports, a
        folder with nothing to read): ``[(port or None, message)]``. Called only for paths the flow may read."""
        return []

    @classmethod
    def path_warnings(cls, config: ConfigT, base_dir: Path | None) -> list[str]:
        """Like :meth:`path_problems`, for what a run survives but the user should know (files it will skip);
        ``validate`` prints them as notes."""
        return []

    @classmethod
    def destinations(cls, config: ConfigT) -> list[Destination]:
        """The servers this node sends requests to, as its config names them (checked by
        :mod:`flowbuilder.trust.egress` before anything is sent). By default: the config's endpoint fields
        (``base_url``, ``host``, ``url`` ...), for the provider of the node's credential slot."""
        provider = cls.credential_slots[0].provider if cls.credential_slots else cls.type_name.split(".")[-1]
        return [
            Destination(name, value, provider, provider in LOCAL_PROVIDERS)
            for name in ENDPOINT_FIELDS
            if isinstance(value := getattr(config, name, None), str) and value.strip()
        ]

    @classmethod
    def config_problems(cls, config: ConfigT) -> list[tuple[str | None, str]]:
        """Checks beyond the Config schema that need no data: ``[(port or None, message)]``."""
        return []

    def run(self, inputs: InputsT, ctx: RunContext) -> OutputsT:
        raise NotImplementedError(f"{type(self).__name__}.run")

    def summarize(self, outputs: OutputsT) -> str:
        """A short summary for the run table and the node badge, e.g. "481 chunks"."""
        return summarize_outputs(self.output_ports(self.config), outputs)


def summarize_outputs(ports: tuple[Port, ...], outputs: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for port in ports:
        if port.name not in outputs or outputs[port.name] is None:
            continue
        value = outputs[port.name]
        if isinstance(value, list):
            noun = port.type.value if port.type.value.endswith("s") else port.name
            parts.append(f"{len(value)} {noun}")
        elif isinstance(value, str):
            parts.append(f"{len(value)} chars")
        elif port.kind.value == "service":
            parts.append(f"{port.type.value} ready")
    return ", ".join(parts)


def node_class_problem(cls: type[Node[Any]]) -> str | None:
    """Why a class cannot be registered as a node, or None."""
    if not isinstance(getattr(cls, "type_name", None), str) or not cls.type_name:
        return f"{cls.__name__} has no type_name"
    if not cls.description():
        return f"{cls.__name__} ({cls.type_name}) has no docstring to describe it"
    sides: tuple[tuple[Side, str], ...] = (("input", "inputs"), ("output", "outputs"))
    for side, attribute in sides:
        try:
            typed = signature_ports(cls, side)
        except TypeError as exc:
            return f"{cls.type_name}: {exc}"
        explicit = next((k.__dict__[attribute] for k in cls.__mro__ if attribute in k.__dict__), None)
        if typed and isinstance(explicit, tuple):
            return (
                f"{cls.type_name} declares its {side} ports twice: in its run signature's TypedDict and in "
                f"'{attribute}'; keep the TypedDict"
            )
    names = [p.name for p in cls.inputs]
    if len(names) != len(set(names)):
        return f"{cls.type_name} declares an input port twice"
    return None
