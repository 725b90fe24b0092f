"""The Python type behind every port type, the ports a node's ``run`` signature declares, and the one check
that a node's values match its ports.

A node types its ``run`` with ``Inputs``/``Outputs`` TypedDicts built from the aliases below, one key per
port, and that is its only port declaration (:func:`signature_ports`): the alias names the port type
(``Records``, ``Message``, a service protocol such as ``Embedder``), ``NotRequired`` makes an input optional,
and ``Annotated`` adds the rest::

    class StoreInputs(TypedDict):
        documents: NotRequired[Annotated[list[Chunks], MULTIPLE, "Chunks to store, one list per connection."]]
        embedder: Annotated[Embedder, "The embedder for documents and questions."]

A string in ``Annotated`` is the port's description; :data:`MULTIPLE` marks an input that takes several
connections (its value is a list, one item per connection). The executor calls :func:`check_port_values` on
what goes in and what comes out, so a node never re-checks its inputs by hand.

Records and chunks are a *batch*: a list of :class:`~flowbuilder.data.Document` handed to one ``run``
call (the whole input, or one batch of a streamed run). A ``multiple`` input receives one value per
connection: a list of the port's type.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args, get_origin

from typing_extensions import get_protocol_members

from flowbuilder.data import Document, Hit
from flowbuilder.errors import PortValueError
from flowbuilder.ports import Port, PortType
from flowbuilder.services import ChatModel, Embedder, Memory, Retriever, Tool, VectorStore

if TYPE_CHECKING:
    from flowbuilder.graph import ResolvedNode

Records: TypeAlias = Annotated[list[Document], PortType.RECORDS]
"""A batch of records (CSV rows, PDF pages, files)."""
Chunks: TypeAlias = Annotated[list[Document], PortType.CHUNKS]
"""A batch of chunks; a record is a whole chunk, so both are Documents."""
Hits: TypeAlias = Annotated[list[Hit], PortType.HITS]
Vectors: TypeAlias = Annotated[list[list[float]], PortType.VECTORS]
Text: TypeAlias = Annotated[str, PortType.TEXT]
"""Text; a chat message, a filled-in prompt and an answer are plain strings too, under their own port type."""
Message: TypeAlias = Annotated[str, PortType.MESSAGE]
Prompt: TypeAlias = Annotated[str, PortType.PROMPT]
Answer: TypeAlias = Annotated[str, PortType.ANSWER]
AnyValue: TypeAlias = Annotated[Any, PortType.ANY]
Tools: TypeAlias = Annotated[Tool | list[Tool], PortType.TOOL]
"""One tool, or a toolkit (``tool.mcp``: every tool of a server) on one connection."""

Side = Literal["input", "output"]

_SERVICES: dict[PortType, type] = {
    PortType.EMBEDDER: Embedder,
    PortType.VECTOR_STORE: VectorStore,
    PortType.CHAT_MODEL: ChatModel,
    PortType.MEMORY: Memory,
    PortType.TOOL: Tool,
    PortType.RETRIEVER: Retriever,
}
_ITEMS: dict[PortType, type] = {
    PortType.RECORDS: Document,
    PortType.CHUNKS: Document,
    PortType.HITS: Hit,
    PortType.VECTORS: list,
}

PYTHON_TYPES: Mapping[PortType, object] = {
    PortType.TEXT: Text,
    PortType.MESSAGE: Message,
    PortType.PROMPT: Prompt,
    PortType.ANSWER: Answer,
    PortType.RECORDS: Records,
    PortType.CHUNKS: Chunks,
    PortType.HITS: Hits,
    PortType.VECTORS: Vectors,
    PortType.ANY: AnyValue,
    **_SERVICES,
    PortType.TOOL: Tools,
}
"""The Python type of each port type: what a node's ``Inputs``/``Outputs`` declare for a port of that type."""

_BY_CLASS: dict[object, PortType] = {Any: PortType.ANY, **{protocol: kind for kind, protocol in _SERVICES.items()}}


def shape_ports(shape: Any, side: Side, where: str) -> tuple[Port, ...]:
    """The ports a TypedDict declares (see the module docstring); ``where`` names it in errors."""
    hints = typing.get_type_hints(shape, include_extras=True)
    return tuple(_port(name, hint, side, where) for name, hint in hints.items())


def _port(name: str, hint: Any, side: Side, where: str) -> Port:
    metadata: list[Any] = []
    hint, optional = _unwrap(hint, metadata)
    kind = _kind(hint, metadata)
    multiple = False
    if kind is None and get_origin(hint) is list and side == "input":
        item, _ = _unwrap(get_args(hint)[0], metadata)
        kind, multiple = _kind(item, metadata), True
    if kind is None:
        raise TypeError(
            f"{where}: port '{name}' has type {hint!r}, which is no port type; use an alias of "
            "flowbuilder.portvalues (Records, Chunks, Hits, Text, Message, Prompt, Answer, AnyValue, Tools), a "
            "service protocol of flowbuilder.services, or a list of one (an input taking several connections)"
        )
    description = next((m for m in metadata if isinstance(m, str) and not isinstance(m, PortType)), "")
    return Port(name, kind, required=side == "output" or not optional, multiple=multiple, description=description)


def _kind(hint: Any, metadata: list[Any]) -> PortType | None:
    return next((m for m in reversed(metadata) if isinstance(m, PortType)), None) or _BY_CLASS.get(hint)


def _unwrap(hint: Any, metadata: list[Any]) -> tuple[Any, bool]:
    """``hint`` without ``Required``/``NotRequired``/``Annotated`` (whose metadata goes into ``metadata``), and
    whether it was ``NotRequired``."""
    optional = False
    while True:
        origin = get_origin(hint)
        if origin in (typing.NotRequired, typing.Required):
            optional = optional or origin is typing.NotRequired
            hint = get_args(hint)[0]
        elif origin is Annotated:
            metadata.extend(hint.__metadata__)
            hint = hint.__origin__
        else:
            return hint, optional


_MEMBERS: dict[PortType, tuple[str, ...]] = {
    kind: tuple(sorted(get_protocol_members(protocol))) for kind, protocol in _SERVICES.items()
}


def expected(port_type: PortType) -> str:
    """What a value of ``port_type`` is, in words: "vector_store (VectorStore: count, name, search)"."""
    if port_type in _SERVICES:
        kit = " or a list of them" if port_type is PortType.TOOL else ""
        name = _SERVICES[port_type].__name__
        article = "an" if name[0] in "AEIOU" else "a"
        return f"{port_type.value} ({article} {name}: {', '.join(_MEMBERS[port_type])}{kit})"
    if port_type in _ITEMS:
        item = "lists of numbers" if port_type is PortType.VECTORS else f"{_ITEMS[port_type].__name__}s"
        return f"{port_type.value} (a list of {item})"
    return f"{port_type.value} (text)" if port_type is not PortType.ANY else "any value"


def describe(value: object) -> str:
    """What came, in words: "str", "list of 2 str", "list of 3 Document and 1 dict"."""
    if not isinstance(value, list | tuple):
        return type(value).__name__
    counts: dict[str, int] = {}
    for item in value:
        counts[type(item).__name__] = counts.get(type(item).__name__, 0) + 1
    if not counts:
        return f"empty {type(value).__name__}"
    return f"{type(value).__name__} of " + " and ".join(f"{n} {name}" for name, n in counts.items())


def matches(port_type: PortType, value: object) -> bool:
    """Whether ``value`` is a value of ``port_type``. Services are judged by their members, looked up
    without calling them (an embedder's ``dimension`` may ask its provider)."""
    if port_type is PortType.ANY:
        return True
    if port_type is PortType.TOOL and isinstance(value, list | tuple):
        return bool(value) and all(_is_service(port_type, v) for v in value)
    if port_type in _SERVICES:
        return _is_service(port_type, value)
    if port_type in _ITEMS:
        item = _ITEMS[port_type]
        if port_type is PortType.VECTORS:
            return isinstance(value, list | tuple) and all(isinstance(v, list | tuple) for v in value)
        return isinstance(value, list | tuple) and all(isinstance(v, item) for v in value)
    return isinstance(value, str)


def _is_service(port_type: PortType, value: object) -> bool:
    return not isinstance(value, type) and all(_has(value, name) for name in _MEMBERS[port_type])


def _has(value: object, name: str) -> bool:
    try:
        inspect.getattr_static(value, name)
    except AttributeError:
        return False
    return True


def port_value_problems(ports: Iterable[Port], side: Side, values: Mapping[str, Any]) -> list[str]:
    """Every way ``values`` differ from ``ports``: unknown names, a missing required input, a wrong type.
    ``None`` is "nothing delivered" and always allowed (the executor handles what is missing upstream)."""
    declared = {port.name: port for port in ports}
    problems = [
        f"'{name}' is no {side} of this node (declared: {', '.join(declared) or 'none'})"
        for name in values
        if name not in declared
    ]
    for name, port in declared.items():
        value = values.get(name)
        if value is None:
            if side == "input" and port.required and name not in values:
                problems.append(f"required input '{name}' expects {expected(port.type)}, got nothing")
            continue
        if port.multiple and side == "input":
            if not isinstance(value, list) or not all(v is None or matches(port.type, v) for v in value):
                got = describe(value) if not isinstance(value, list) else "; ".join(describe(v) for v in value)
                problems.append(f"{side} '{name}' expects one {expected(port.type)} per connection, got {got}")
        elif not matches(port.type, value):
            problems.append(f"{side} '{name}' expects {expected(port.type)}, got {describe(value)}")
    return problems


def check_port_values(node: ResolvedNode, side: Side, values: Mapping[str, Any]) -> None:
    """Raise :class:`PortValueError` naming the node, each port, what it expects and what came, when
    ``values`` (a node's inputs before ``run`` or its outputs after) do not match its declared ports."""
    ports = node.inputs if side == "input" else node.outputs
    problems = port_value_problems(ports.values(), side, values)
    if problems:
        raise PortValueError(node.spec.id, node.spec.type, side, problems)
