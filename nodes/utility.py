"""Small structural nodes."""

from __future__ import annotations

from typing import Any

from flowbuilder.node import Node, RunContext
from flowbuilder.ports import Port, PortType
from flowbuilder.registry import register_node


@register_node
class Passthrough(Node[Any]):
    """Forward a value unchanged; a reroute point that tidies long connections."""

    type_name = "util.passthrough"
    display_name = "Pass Through"
    aliases = ("No Operation", "noop", "passthrough")
    category = "Utility"
    inputs = (Port("value", PortType.ANY, required=False),)
    outputs = (Port("value", PortType.ANY),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"value": inputs.get("value")}
