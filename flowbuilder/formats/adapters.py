"""Declarative two-way adapters: the table entry is the unit of a mapping.

One :class:`Adapter` (an *entry*) says everything about one Flowbuilder node type in one foreign format:

- **import**: the foreign type(s) it reads (``theirs``, ``also``, ``versions``), each config field's
  foreign parameter with the foreign default and a converter each way (``params``), values the foreign
  node implies (``preset``), parameters that mean nothing here (``ignore``), a report line (``note``);
- **export**: whether it writes ``ours`` (``export``), at which version (``export_version``), parameters
  always written (``fixed``), LangFlow's outputs, handle types and secret field (``extra``);
- **connect**: which foreign connection type (n8n) or handle (LangFlow) each port becomes (``inputs``,
  ``outputs``, older names in ``in_aliases`` / ``out_aliases``);
- **--local**: what ``import --local`` swaps the node for (``local``: a :class:`Local`; the shared
  :data:`OFFLINE_EMBEDDER`, :data:`OFFLINE_CHAT`, :func:`offline_store`);
- **structure no row can say** (n8n's vector-store modes, its loader's built-in splitter, LangFlow's File
  outputs): ``hook``, the name of a method each engine may have: ``_hook_<name>`` in the importer,
  ``_write_<name>`` in the n8n exporter, a ``_SHAPES[<name>]`` function in the LangFlow exporter.

A foreign type we know but do not run is a *kept* entry: ``ours`` is :data:`PLACEHOLDER`, and it says what
replaces it (``replace``), what ``--local`` swaps it for (``local``, a store's collection parameter in
``offline_store(...)``), its credential provider (``provider``), that it gives search hits (``hits``) or a
hook that explains it (n8n's code nodes). LangFlow entries name the model providers a provider-neutral
component or an Agent picks them for (``providers``).

The engines (``n8n.py``, ``langflow.py``, ``n8n_export.py``, ``langflow_export.py``, ``local.py``) walk the
entries and name no node type: structure between nodes speaks of the roles in ``roles.py``. Our own
defaults, config fields, ports and credential slots are read from the registered node class, never copied
into the tables; ``tests/formats/test_adapter_tables.py`` checks every name an entry uses and
``tests/formats/test_fixtures.py`` globs the fixtures.

**Adding a mapping, both directions** = one entry in ``n8n_table.py`` or ``langflow_table.py`` (one per
format it exists in) plus one small flow in ``tests/formats/fixtures/<format>/``. An entry in the older
style (no ``local``/``replace``/``provider``) is still valid as it is; to port the side tables it used to
need, move each fact onto the entry:

====================================================  ======================================================
before                                                 now, on the entry
====================================================  ======================================================
``local.py`` ``EMBEDDERS`` / ``LLMS``                  ``local=OFFLINE_EMBEDDER`` / ``local=OFFLINE_CHAT``
``local.py`` ``PLACEHOLDER_EMBEDDERS`` / ``_LLMS``     kept entry ``Adapter(PLACEHOLDER, theirs, export=False,
                                                       local=...)``
``*_table.SWAP_COLLECTION[theirs] = field``            kept entry with ``local=offline_store(field)``
``*_table.REPLACEMENTS[theirs] = text``                ``replace=text`` (kept or mapped entry)
``langflow._PROVIDER_BY_TYPE[theirs] = provider``      kept entry with ``provider=provider``
``langflow_table.VECTOR_STORES`` (unmapped store)      kept entry with ``hits=True``
``langflow_table.PROVIDER_NODES[kind][name]``          ``providers=(name, ...)`` on the entry
``if t == "loader.file"`` in an exporter               ``hook=...`` and the exporter's hook function
====================================================  ======================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from flowbuilder.formats import roles
from flowbuilder.placeholder import PLACEHOLDER_TYPE
from flowbuilder.trust.providers import CredentialSlot

PLACEHOLDER = PLACEHOLDER_TYPE


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""The foreign format has no default for a parameter (it is always written)."""

Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class Param:
    """Our config field ``ours`` <-> the foreign parameter ``theirs`` (dotted path in n8n, template field
    name in LangFlow). ``default`` is the *foreign* default: the value a foreign file means when it omits
    the parameter, and the value an exporter leaves out. ``to_ours`` / ``to_theirs`` convert values."""

    ours: str
    theirs: str
    default: Any = NO_DEFAULT
    to_ours: Convert | None = None
    to_theirs: Convert | None = None
    widget: str = "StrInput"
    """LangFlow only: the ``_input_type`` and ``type`` an exported template field gets."""
    kind: str = "str"
    export: bool = True
    """False: read on import only (an older spelling of a parameter another entry writes)."""
    keep: bool = False
    """Written on export even when it equals the foreign default (n8n asks for a model)."""

    def ours_value(self, value: Any) -> Any:
        return self.to_ours(value) if self.to_ours else value

    def theirs_value(self, value: Any) -> Any:
        return self.to_theirs(value) if self.to_theirs else value


@dataclass(frozen=True)
class Local:
    """``import --local``: the offline node an entry's node (or kept placeholder) is swapped for: the type
    ``to``, or the type that fills ``role`` (a name in :mod:`flowbuilder.formats.roles`, looked up when used)."""

    to: str = ""
    keep: tuple[str, ...] = ()
    """Config fields carried over to the new node."""
    collection: tuple[str, ...] = ()
    """A store's collection name: the first of these our config fields (a mapped node) or foreign parameters
    (a kept placeholder) that is set. Empty: not a store."""
    detail: str = ""
    """Added to the report line; ``{collection}`` is the new collection's name."""
    fixed: tuple[tuple[str, Any], ...] = ()
    """Config the new node always gets (``(field, value)`` pairs; a tuple so that a ``Local`` stays hashable)."""
    role: str = ""

    @property
    def target(self) -> str:
        """The type the node becomes."""
        return self.to or str(getattr(roles, self.role))


@dataclass(frozen=True)
class Adapter:
    """One Flowbuilder node type in one foreign format. On a node class (``mappings = {"n8n": (Adapter(
    theirs=...),)}``) ``ours`` may stay empty: it is the class's type."""

    ours: str = ""
    theirs: str = ""
    versions: tuple[float, ...] = (1,)
    """n8n typeVersions this entry reads; the exporter writes ``export_version`` or the last one."""
    export_version: float | None = None
    params: tuple[Param, ...] = ()
    inputs: Mapping[str, str] = field(default_factory=dict)
    """Our input port -> their connection type (n8n) or input handle (LangFlow)."""
    outputs: Mapping[str, str] = field(default_factory=dict)
    """Our output port -> their connection type (n8n) or output handle (LangFlow)."""
    also: tuple[str, ...] = ()
    """More foreign types this entry imports (renamed or sibling components)."""
    in_aliases: Mapping[str, str] = field(default_factory=dict)
    """Import only: more foreign input handles -> our input port (older names)."""
    out_aliases: Mapping[str, str] = field(default_factory=dict)
    """Import only: more foreign output handles -> our output port."""
    fixed: Mapping[str, Any] = field(default_factory=dict)
    """Foreign parameters always written on export (n8n ``options: {}``...)."""
    preset: Mapping[str, Any] = field(default_factory=dict)
    """Our config values an import always sets: what the foreign node does without a parameter for it."""
    ignore: tuple[str, ...] = ()
    """Foreign parameters that mean nothing to a Flowbuilder run (not reported as dropped)."""
    hook: str | Callable[..., Any] = ""
    """Name of a structural hook in the format module; empty = fully generic. A node pack's entry may give its
    own import hook instead: a function called as the engine's would be, with the engine first
    (:func:`import_hook`)."""
    export: bool = True
    """False: import only (the exporter uses another entry for ``ours``)."""
    imports: bool = True
    """False: export only (``embedder.local`` written as its nearest foreign equivalent)."""
    display: str = ""
    """LangFlow: display name; n8n: unused."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Format-specific export details (LangFlow: outputs with types and methods, input handle types)."""
    note: str = ""
    """A report line added on import (what the user must do, e.g. which file to fetch)."""
    local: Local | None = None
    """What ``import --local`` swaps the node for (on the entry that exports ``ours``, or a kept entry)."""
    replace: str = ""
    """Shown when the foreign node stays a placeholder: what replaces it."""
    provider: str = ""
    """A kept entry: the credential provider of the component's secret fields."""
    hits: bool = False
    """A kept entry: the component gives search hits (a store)."""
    providers: tuple[str, ...] = ()
    """LangFlow: the model providers (lower case) for which a provider-neutral model component or an
    Agent's own model becomes this entry's node."""

    @property
    def kept(self) -> bool:
        """A foreign type we know but do not run: it imports as a placeholder with this entry's replace,
        provider and --local swap."""
        return self.ours == PLACEHOLDER

    @property
    def gives_hits(self) -> bool:
        return self.hits or "hits" in self.outputs

    @property
    def version(self) -> float:
        return self.export_version if self.export_version is not None else self.versions[-1]

    def their_input(self, port: str) -> str | None:
        return self.inputs.get(port)

    def our_input(self, theirs: str) -> str | None:
        for port, name in self.inputs.items():
            if name == theirs:
                return port
        return self.in_aliases.get(theirs)

    def our_output(self, theirs: str) -> str | None:
        for port, name in self.outputs.items():
            if name == theirs:
                return port
        return self.out_aliases.get(theirs)


Mappings = Mapping[str, Sequence[Adapter]]
"""A node class's ``mappings``: its entries per foreign format name."""


# The offline stand-ins ``import --local`` swaps remote nodes for (shared by both formats' entries).
OFFLINE_EMBEDDER = Local(role="OFFLINE_EMBEDDER")
OFFLINE_CHAT = Local(
    role="OFFLINE_CHAT",
    keep=("temperature", "max_tokens", "system_message", "timeout", "max_retries", "stream", "when_unreachable"),
    detail=" (default model llama3.2 on a local Ollama server)",
)


def offline_store(*collection: str) -> Local:
    """An embedded Chroma store named after the first of ``collection`` that is set."""
    detail = " (embedded, collection {collection!r})"
    return Local("", ("k", "min_score", "where"), collection, detail, role="OFFLINE_STORE")


class Table:
    """The adapters of one format, looked up by our type (export) or the foreign type (import).

    Its entries are the format's own (foreign types we keep as placeholders, structure such as n8n's routing
    nodes, and the built-in entries not yet moved next to their nodes) followed by every registered node
    class's ``mappings[fmt]`` (:func:`node_mappings`): a node pack brings its mappings with its nodes. The
    format's own entries come first, so a pack cannot take over a foreign type a built-in entry reads.

    ``original_param(original, name)`` reads a parameter of a kept placeholder's original foreign node."""

    def __init__(
        self, fmt: str, adapters: Iterable[Adapter], original_param: Callable[[Mapping[str, Any], str], Any]
    ) -> None:
        self.fmt = fmt
        self.own = tuple(adapters)
        self.original_param = original_param
        self._key: tuple[int, int] | None = None
        self._adapters: tuple[Adapter, ...] = ()
        self._by_theirs: dict[str, Adapter] = {}
        self._known: dict[str, Adapter] = {}
        self._by_ours: dict[str, Adapter] = {}

    def _index(self) -> None:
        from flowbuilder.registry import default_registry

        registry = default_registry()
        key = (id(registry), len(registry))
        if key == self._key:
            return
        self._adapters = self.own + node_mappings(self.fmt)
        self._by_theirs, self._known, self._by_ours = {}, {}, {}
        for adapter in self._adapters:
            for theirs in (adapter.theirs, *adapter.also):
                if adapter.imports and not adapter.kept:
                    self._by_theirs.setdefault(theirs, adapter)
                if adapter.imports:
                    self._known.setdefault(theirs, adapter)
            if adapter.export and not adapter.kept:
                self._by_ours.setdefault(adapter.ours, adapter)
        self._key = key

    @property
    def adapters(self) -> tuple[Adapter, ...]:
        """Every entry: the format's own, then the registered node classes'."""
        self._index()
        return self._adapters

    @property
    def by_theirs(self) -> dict[str, Adapter]:
        self._index()
        return self._by_theirs

    @property
    def known(self) -> dict[str, Adapter]:
        self._index()
        return self._known

    @property
    def by_ours(self) -> dict[str, Adapter]:
        self._index()
        return self._by_ours

    def importer(self, theirs: str) -> Adapter | None:
        return self.by_theirs.get(theirs)

    def hooked(self, hook: str, ours: str) -> Adapter | None:
        """The entry of ``ours`` with that hook (an import-only form written back, n8n's webhook)."""
        return next((a for a in self.adapters if a.hook == hook and a.ours == ours), None)

    def entry(self, theirs: str) -> Adapter | None:
        """The entry of a foreign type, mapped or kept (for its replace, provider and --local swap)."""
        return self.known.get(theirs)

    def by_provider(self, kind: str, provider: str) -> str | None:
        """Our node of family ``kind`` (``llm``, ``embedder``) for a model provider's name."""
        for adapter in self.adapters:
            if provider.lower() in adapter.providers and adapter.ours.split(".", 1)[0] == kind:
                return adapter.ours
        return None

    def hit_sources(self) -> set[str]:
        """Foreign types whose output is search hits."""
        return {theirs for theirs, adapter in self.known.items() if adapter.gives_hits}

    def exporter(self, ours: str) -> Adapter | None:
        return self.by_ours.get(ours)

    def ports_of(self, ours: str) -> Adapter | None:
        """The entry that says how ``ours``'s ports look in this format (import-only entries too)."""
        return self.by_ours.get(ours) or next((a for a in self.adapters if a.ours == ours), None)


def import_hook(engine: Any, adapter: Adapter) -> Callable[..., Any] | None:
    """An entry's import hook: the engine's ``_hook_<name>`` for a named hook, or the entry's own function (a
    pack's hook) bound to the engine; None for a generic entry."""
    if not adapter.hook:
        return None
    if callable(adapter.hook):
        return partial(adapter.hook, engine)
    hook: Callable[..., Any] = getattr(engine, f"_hook_{adapter.hook}")
    return hook


# -- what the registered node classes say ------------------------------------------------------------


def node_mappings(fmt: str) -> tuple[Adapter, ...]:
    """The entries of format ``fmt`` that the registered node classes carry (``Node.mappings[fmt]``), each
    with ``ours`` set to its class's type (an entry next to its node need not repeat the type name)."""
    from flowbuilder.registry import default_registry

    found: list[Adapter] = []
    for cls in default_registry():
        for adapter in cls.mappings.get(fmt, ()):
            if not isinstance(adapter, Adapter):
                raise TypeError(f"{cls.type_name}.mappings[{fmt!r}] holds {adapter!r}, not an Adapter")
            found.append(adapter if adapter.ours else replace(adapter, ours=cls.type_name))
    return tuple(found)


def node_class(type_name: str) -> Any:
    from flowbuilder.registry import default_registry

    registry = default_registry()
    return registry.get(type_name) if type_name in registry else None


def our_defaults(type_name: str) -> dict[str, Any]:
    """Each config field's default as the registered node's Config declares it."""
    cls = node_class(type_name)
    if cls is None:
        return {}
    defaults: dict[str, Any] = {}
    for name, info in cls.Config.model_fields.items():
        if info.default_factory is not None:
            defaults[name] = info.default_factory()
        elif not info.is_required():
            defaults[name] = info.default
    return defaults


def our_default(type_name: str, field_name: str) -> Any:
    return our_defaults(type_name).get(field_name)


def within_bounds(type_name: str, field_name: str, value: Any) -> Any:
    """``value`` brought within the ``ge``/``le`` bounds of the registered node's config field (a foreign
    file's top-k of 500 for a field that takes at most 100); other values unchanged."""
    cls = node_class(type_name)
    info = cls.Config.model_fields.get(field_name) if cls is not None else None
    if info is None or not isinstance(value, int | float) or isinstance(value, bool):
        return value
    for bound in info.metadata:
        low, high = getattr(bound, "ge", None), getattr(bound, "le", None)
        if low is not None and value < low:
            value = low
        if high is not None and value > high:
            value = high
    return value


def credential_slot(type_name: str) -> CredentialSlot | None:
    cls = node_class(type_name)
    if cls is None or not cls.credential_slots:
        return None
    slot: CredentialSlot = cls.credential_slots[0]
    return slot


def port_names(type_name: str, side: str) -> set[str]:
    cls = node_class(type_name)
    if cls is None:
        return set()
    ports = cls.input_ports(None) if side == "in" else cls.output_ports(None)
    return {p.name for p in ports}


# -- the generic walk ----------------------------------------------------------------------------------


@dataclass
class ParamRead:
    """What reading one parameter of a foreign node found."""

    param: Param
    value: Any
    state: str
    """``set`` (a literal), ``default`` (omitted: the foreign default), ``expression`` (kept unevaluated),
    ``absent`` (omitted, no foreign default: ours applies)."""


@dataclass(frozen=True)
class ByVersion:
    """A foreign default that changed with the node's typeVersion: ``{version: default}`` for old
    versions, ``latest`` for the others."""

    old: Mapping[float, Any]
    latest: Any

    def at(self, version: float | None) -> Any:
        return self.old.get(version, self.latest) if version is not None else self.latest


def default_at(param: Param, version: float | None) -> Any:
    return param.default.at(version) if isinstance(param.default, ByVersion) else param.default


def read_params(
    adapter: Adapter, lookup: Callable[[str], tuple[str, Any]], version: float | None = None
) -> tuple[dict[str, Any], list[ParamRead]]:
    """Our config from a foreign node. ``lookup(path)`` returns ``(state, value)`` with state ``set``,
    ``absent`` or ``expression``. Values equal to our default are still written when the foreign file
    set them, so that the import shows what the source said."""
    config: dict[str, Any] = dict(adapter.preset)
    reads: list[ParamRead] = []
    for param in adapter.params:
        if param.ours in config:
            continue  # an earlier spelling already gave it
        state, raw = lookup(param.theirs)
        default = default_at(param, version)
        if state == "absent" and default is not NO_DEFAULT:
            state, raw = "default", default
        if state in ("set", "default"):
            value = param.ours_value(raw)
            if value is None:
                reads.append(ParamRead(param, raw, "absent"))
                continue
            config[param.ours] = value
        reads.append(ParamRead(param, raw, state))
    return config, reads


def write_params(adapter: Adapter, config: Mapping[str, Any], keep_defaults: bool = False) -> list[tuple[Param, Any]]:
    """``(param, foreign value)`` of each exported parameter; values equal to the foreign default are left
    out unless ``keep_defaults`` (LangFlow writes every field, n8n omits defaults)."""
    defaults = our_defaults(adapter.ours)
    written: list[tuple[Param, Any]] = []
    for param in adapter.params:
        if not param.export:
            continue
        value = param.theirs_value(config.get(param.ours, defaults.get(param.ours)))
        default = default_at(param, adapter.version)
        if value is None or (not keep_defaults and not param.keep and _same(value, default)):
            if keep_defaults and default is not NO_DEFAULT:
                written.append((param, default))
            continue
        written.append((param, value))
    return written


def _same(value: Any, default: Any) -> bool:
    if default is NO_DEFAULT:
        return False
    if isinstance(value, dict) and value.get("__rl") is True:
        value = value.get("value")
    if isinstance(value, bool) or isinstance(default, bool):
        return value is default
    return bool(value == default)


def set_path(target: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value


def get_path(source: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    value: Any = source
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


# -- converters shared by both formats ---------------------------------------------------------------


def to_int(value: Any) -> int | None:
    """``value`` as an int; None when it is no finite number (``"inf"``, ``"nan"``, ``1e999``, ``"x"``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = to_float(value)
    return int(number) if number is not None else None


def to_float(value: Any) -> float | None:
    """``value`` as a finite float, else None (a file's ``"inf"`` or ``NaN`` is no setting)."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def positive_int(value: Any) -> int | None:
    number = to_int(value)
    return number if number and number > 0 else None


def to_bool(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def to_str(value: Any) -> str | None:
    return None if value is None else str(value)


def nonempty_str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def unescape(text: Any) -> str:
    """LangFlow stores separators either as real characters or escaped (``"\\\\n"``)."""
    return str(text).replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
