"""The flow document: nodes, edges, notes, and a layout kept apart from the logic.

Native JSON (``"format": "flowbuilder", "version": 1``)::

    {
      "format": "flowbuilder", "version": 1, "name": "...", "description": "...",
      "nodes": [{"id", "type", "name", "config", "credentials": {slot: {provider, name}}, "disabled"}],
      "edges": [{"source", "source_port", "target", "target_port"}],
      "notes": [{"id", "text", "width", "height"}],
      "layout": {"positions": {id: {"x", "y"}}, "viewport": {"x", "y", "zoom"}},
      "meta": {...}
    }
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.trust.providers import CredentialRef

FORMAT_NAME: Final = "flowbuilder"
FORMAT_VERSION: Final = 1


class _Model(BaseModel):
    # No NaN or infinity anywhere in a flow: strict JSON parsers reject them and layout math breaks on them.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NodeSpec(_Model):
    """One node of a flow as saved: its type and config, no runtime state."""

    id: str
    type: str
    name: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    credentials: dict[str, CredentialRef] = Field(default_factory=dict)
    disabled: bool = False

    @property
    def label(self) -> str:
        return self.name or self.id


class Edge(_Model):
    """A connection from an output port of one node to an input port of another."""

    source: str
    source_port: str
    target: str
    target_port: str

    @property
    def key(self) -> str:
        return f"{self.source}.{self.source_port}->{self.target}.{self.target_port}"


class Note(_Model):
    """A sticky note on the canvas (markdown); it takes no part in a run."""

    id: str
    text: str = ""
    width: float | None = None
    height: float | None = None
    color: str | None = None


class Position(_Model):
    """Where a node sits on the canvas."""

    x: float = 0.0
    y: float = 0.0


class Viewport(_Model):
    """The canvas's pan and zoom when the flow was saved."""

    x: float = 0.0
    y: float = 0.0
    zoom: float = 1.0


class Layout(_Model):
    """Where things are drawn; never read by validation or the executor."""

    positions: dict[str, Position] = Field(default_factory=dict)
    viewport: Viewport = Field(default_factory=Viewport)


class Flow(_Model):
    """A whole flow document."""

    format: Literal["flowbuilder"] = FORMAT_NAME
    version: Literal[1] = FORMAT_VERSION
    name: str = "Untitled flow"
    description: str = ""
    nodes: list[NodeSpec] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)
    layout: Layout = Field(default_factory=Layout)
    meta: dict[str, Any] = Field(default_factory=dict)

    def node(self, node_id: str) -> NodeSpec:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def find_node(self, node_id: str) -> NodeSpec | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def node_ids(self) -> list[str]:
        return [n.id for n in self.nodes]

    def new_id(self, stem: str) -> str:
        """A node or note id not yet used in this flow, built from ``stem`` (``splitter`` -> ``splitter-2``)."""
        stem = stem.replace(".", "-")
        taken = set(self.node_ids()) | {n.id for n in self.notes}
        if stem not in taken:
            return stem
        index = 2
        while f"{stem}-{index}" in taken:
            index += 1
        return f"{stem}-{index}"

    def position(self, item_id: str) -> Position:
        return self.layout.positions.get(item_id, Position())
