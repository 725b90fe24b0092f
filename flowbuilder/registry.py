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

from flowbuilder.errors import DuplicateNodeTypeError, RegistryError, UnknownNodeTypeError
from flowbuilder.node import Node, node_class_problem

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "flowbuilder.nodes"
BUILTIN_PROBE = "chat.input"  # a built-in type: its absence means the entry points are missing

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
        self._types[cls.type_name] = cls
        return cls

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


def describe_node(cls: NodeClass) -> dict[str, Any]:
    return {
        "type": cls.type_name,
        "category": cls.category,
        "description": cls.description(),
        "inputs": [p.to_dict() for p in cls.input_ports(None)],
        "outputs": [p.to_dict() for p in cls.output_ports(None)],
        "credentials": [s.to_dict() for s in cls.credential_slots],
        "config_schema": cls.Config.model_json_schema(),
        "run_input": cls.run_input,
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
        if BUILTIN_PROBE not in registry:
            log.warning(
                "Flowbuilder's built-in nodes are not registered: install the package (pip install -e .) so "
                "its '%s' entry points exist.",
                ENTRY_POINT_GROUP,
            )
    return _default


def _load_entry_points(registry: NodeRegistry) -> None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
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
