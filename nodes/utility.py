"""Small structural nodes."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from flowbuilder.node import EmptyConfig, Node, RunContext
from flowbuilder.ports import Port, PortType
from flowbuilder.registry import register_node


class PassthroughIn(TypedDict):
    value: NotRequired[Any]


class PassthroughOut(TypedDict):
    value: Any


@register_node
class Passthrough(Node[EmptyConfig, PassthroughIn, PassthroughOut]):
    """Forward a value unchanged; a reroute point that tidies long connections."""

    type_name = "util.passthrough"
    display_name = "Pass Through"
    aliases = ("No Operation", "noop", "passthrough")
    category = "Utility"
    inputs = (Port("value", PortType.ANY, required=False),)
    outputs = (Port("value", PortType.ANY),)

    def run(self, inputs: PassthroughIn, ctx: RunContext) -> PassthroughOut:
        return {"value": inputs.get("value")}
