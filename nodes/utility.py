"""Small structural nodes."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from flowbuilder.node import EmptyConfig, Node, RunContext
from flowbuilder.portvalues import AnyValue
from flowbuilder.registry import register_node


class PassthroughIn(TypedDict):
    value: NotRequired[AnyValue]


class PassthroughOut(TypedDict):
    value: AnyValue


@register_node
class Passthrough(Node[EmptyConfig, PassthroughIn, PassthroughOut]):
    """Forward a value unchanged; a reroute point that tidies long connections."""

    type_name = "util.passthrough"
    display_name = "Pass Through"
    aliases = ("No Operation", "noop", "passthrough")
    category = "Utility"

    def run(self, inputs: PassthroughIn, ctx: RunContext) -> PassthroughOut:
        return {"value": inputs.get("value")}
