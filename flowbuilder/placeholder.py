"""Placeholder nodes: what an importer makes of a node type Flowbuilder does not support.

A placeholder keeps the original node's JSON (to export it back unchanged) and the names of the
ports it was wired through, so no connection is lost. It always fails validation with a message
that names the original type; it never runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import NodeError
from flowbuilder.node import Node, RunContext
from flowbuilder.ports import Port, PortType

PLACEHOLDER_TYPE = "placeholder.unsupported"


class PlaceholderConfig(BaseModel):
    """What an import keeps of a node it could not map, so export can write it back unchanged and the builder
    can say what it was and how it was wired."""

    model_config = ConfigDict(extra="forbid")

    source_format: str = Field("", description="The format the node came from (n8n or langflow).")
    original_type: str = Field("", description="The node type in the source format.")
    original: dict[str, Any] = Field(default_factory=dict, description="The original node JSON, kept for export.")
    input_names: list[str] = Field(default_factory=list, description="Ports it was wired into.")
    output_names: list[str] = Field(default_factory=list, description="Ports it was wired from.")
    replace: str = Field("", description="What replaces it, from the format's entry for its type (said by validate).")


class PlaceholderNode(Node[PlaceholderConfig, dict[str, Any], dict[str, Any]]):
    """Stands in for an imported node type that Flowbuilder does not support."""

    type_name = PLACEHOLDER_TYPE
    display_name = "Unsupported (imported)"
    aliases = ("placeholder", "imported")
    category = "Imported"
    Config = PlaceholderConfig

    @classmethod
    def input_ports(cls, config: PlaceholderConfig | None = None) -> tuple[Port, ...]:
        names = config.input_names if config is not None else []
        return tuple(Port(n, PortType.ANY, required=False, multiple=True) for n in names)

    @classmethod
    def output_ports(cls, config: PlaceholderConfig | None = None) -> tuple[Port, ...]:
        names = config.output_names if config is not None else []
        return tuple(Port(n, PortType.ANY) for n in names)

    @classmethod
    def config_problems(cls, config: PlaceholderConfig) -> list[tuple[str | None, str]]:
        what = f"unsupported {config.source_format or 'imported'} node type '{config.original_type}'"
        if config.replace:
            return [(None, f"{what}: replace it with {config.replace}, or disable it to run the rest of the flow")]
        return [(None, f"{what}: replace it with a Flowbuilder node or disable it to run the rest of the flow")]

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        raise NodeError(f"'{self.config.original_type}' is not supported and cannot run.")
