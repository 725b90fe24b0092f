"""Small structural nodes."""

from __future__ import annotations

from typing import ClassVar, NotRequired, TypedDict

from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.formats.n8n_table import BASE, ROUTES
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
    mappings: ClassVar[Mappings] = {
        "n8n": (
            # n8n's routing nodes become reroute points whose logic is never evaluated; the "route" hook
            # reports what each one decided in n8n and that every item goes on.
            *[
                Adapter(
                    "util.passthrough",
                    BASE + kind,
                    versions,
                    inputs={"value": "main"},
                    outputs={"value": "main"},
                    export=False,
                    hook="route",
                    note=what,
                    extra={"loop": kind == "splitInBatches", "sets_fields": kind == "set"},
                )
                for kind, versions, what in ROUTES
            ],
        ),
    }
    display_name = "Pass Through"
    aliases = ("No Operation", "noop", "passthrough")
    category = "Utility"

    def run(self, inputs: PassthroughIn, ctx: RunContext) -> PassthroughOut:
        return {"value": inputs.get("value")}
