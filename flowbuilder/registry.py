"""The node registry: stable type names to node classes.

The built-in nodes (the repository's ``nodes/`` folder, imported as ``flowbuilder.nodes`` so that a
stray ``nodes.py`` in the working directory cannot shadow them) register through the same
``flowbuilder.nodes`` entry-point group as node packs from other distributions (the entry point names
a module to import or a callable that takes the registry). Nothing named inside a flow file is ever
imported: a flow can only use types that are already registered.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

from flowbuilder.capabilities import ONE_PER_KIND, SINGULAR, Capability
from flowbuilder.errors import DuplicateNodeTypeError, RegistryError, UnknownNodeTypeError
from flowbuilder.node import Node, node_class_problem
from flowbuilder.ports import PortType

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "flowbuilder.nodes"
BUILTIN_PACKAGE = "flowbuilder.nodes"
"""The built-in nodes' package: no class from it registered means the entry points are missing."""

NodeClass = type[Node[Any]]


class NodeRegistry:
    """A closed map from ``type_name`` to node class."""

    def __init__(self) -> None:
        self._types: dict[str, NodeClass] = {}

    def register(self, cls: NodeClass) -> NodeClass:
        problem = node_class_problem(cls)
        if problem:
            raise RegistryError(f"Cannot register node class: {problem}.")
        existing = self._types.get(cls.type_name)
        if existing is not None and existing is not cls:
            raise DuplicateNodeTypeError(
                f"Node type '{cls.type_name}' is registered twice: by {existing.__module__}.{existing.__name__} "
                f"and by {cls.__module__}.{cls.__name__}."
            )
        if existing is None:
            self._check_roles(cls)
        self._types[cls.type_name] = cls
        return cls

    def _check_roles(self, cls: NodeClass) -> None:
        """A role the engines fill by adding a node (:data:`~flowbuilder.capabilities.SINGULAR`) has one type."""
        for capability in cls.capabilities & (SINGULAR | ONE_PER_KIND):
            for other in self.with_capability(capability):
                shared = _kinds(cls) & _kinds(other) if capability in ONE_PER_KIND else {None}
                if shared:
                    raise RegistryError(
                        f"Cannot register node class: {cls.type_name} claims the role '{capability}', which "
                        f"{other.type_name} already fills; a pack's node may not replace a built-in role."
                    )

    def with_capability(self, capability: Capability) -> list[NodeClass]:
        """The registered types that declare ``capability``, in palette order."""
        return [cls for cls in self if capability in cls.capabilities]

    def has(self, type_name: str, capability: Capability) -> bool:
        """Whether ``type_name`` is registered and declares ``capability`` (False for an unknown type)."""
        cls = self._types.get(type_name)
        return cls is not None and capability in cls.capabilities

    def the(self, capability: Capability, kind: PortType | None = None) -> NodeClass:
        """The type that fills a role (one giving an output of ``kind``, for a role held once per kind); for a
        capability several types have, the first registered (the built-ins register before node packs)."""
        found = [
            cls
            for cls in self._types.values()
            if capability in cls.capabilities and (kind is None or kind in _kinds(cls))
        ]
        if not found:
            of = f" giving {kind.value}" if kind is not None else ""
            raise RegistryError(f"No registered node type has the capability '{capability}'{of}.")
        return found[0]

    def get(self, type_name: str) -> NodeClass:
        try:
            return self._types[type_name]
        except KeyError:
            raise UnknownNodeTypeError(type_name, self.close_matches(type_name)) from None

    def __contains__(self, type_name: object) -> bool:
        return type_name in self._types

    def __iter__(self) -> Iterator[NodeClass]:
        return iter(sorted(self._types.values(), key=lambda c: (c.category, c.type_name)))

    def __len__(self) -> int:
        return len(self._types)

    def names(self) -> list[str]:
        return sorted(self._types)

    def close_matches(self, type_name: str) -> list[str]:
        return difflib.get_close_matches(type_name, self.names(), n=3, cutoff=0.5)

    def describe(self) -> list[dict[str, Any]]:
        """Every node type with its ports, credential slots and Config JSON schema."""
        return [describe_node(cls) for cls in self]


def _kinds(cls: NodeClass) -> set[PortType | None]:
    return {port.type for port in cls.output_ports(None)}


def describe_node(cls: NodeClass) -> dict[str, Any]:
    """One node type as data: ports, credential slots, Config JSON schema, run input and capabilities."""
    return {
        "type": cls.type_name,
        "category": cls.category,
        "description": cls.description(),
        "inputs": [p.to_dict() for p in cls.input_ports(None)],
        "outputs": [p.to_dict() for p in cls.output_ports(None)],
        "credentials": [s.to_dict() for s in cls.credential_slots],
        "config_schema": cls.Config.model_json_schema(),
        "run_input": cls.run_input,
        "capabilities": sorted(cls.capabilities),
    }


_default: NodeRegistry | None = None
_pending: list[NodeClass] = []


def register_node(cls: NodeClass) -> NodeClass:
    """Class decorator: add a node class to the default registry."""
    if _default is None:
        _pending.append(cls)
    else:
        _default.register(cls)
    return cls


def default_registry() -> NodeRegistry:
    """The registry with the built-in nodes and every installed node pack (loaded once)."""
    global _default
    if _default is None:
        registry = NodeRegistry()
        _default = registry
        from flowbuilder.placeholder import PlaceholderNode  # the importers' stand-in is part of the core

        registry.register(PlaceholderNode)
        _load_entry_points(registry)
        if not any(cls.__module__.startswith(BUILTIN_PACKAGE + ".") for cls in registry):
            log.warning(
                "Flowbuilder's built-in nodes are not registered: install the package (pip install -e .) so "
                "its '%s' entry points exist.",
                ENTRY_POINT_GROUP,
            )
    return _default


def _load_entry_points(registry: NodeRegistry) -> None:
    # the built-in nodes first: a role several types may fill goes to the built-in one (NodeRegistry.the)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.value != BUILTIN_PACKAGE):
        try:
            target = ep.load()
        except Exception as exc:  # a broken third-party pack must not take the app down
            log.warning("Node pack '%s' could not be loaded: %s", ep.name, exc)
            continue
        if callable(target) and not isinstance(target, type):
            target(registry)
        for cls in _pending:
            registry.register(cls)
        _pending.clear()
