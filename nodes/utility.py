"""Small structural nodes."""

from __future__ import annotations

from typing import ClassVar, NotRequired, TypedDict

from flowbuilder.formats import dify_table as DF
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.formats.n8n_table import BASE, ROUTES
from flowbuilder.node import EmptyConfig, Node, RunContext
from flowbuilder.portvalues import AnyValue
from flowbuilder.registry import register_node


class PassthroughIn(TypedDict):
    """The input ports of ``util.passthrough``."""

    value: NotRequired[AnyValue]


class PassthroughOut(TypedDict):
    """The output ports of ``util.passthrough``."""

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
        "langflow": (
            Adapter(
                "util.passthrough",
                "TypeConverterComponent",
                display="Type Convert",
                inputs={"value": "input_data"},
                outputs={"value": "message_output"},
                out_aliases={"data_output": "value", "dataframe_output": "value"},
                ignore=("output_type", "auto_parse"),
                extra={
                    "outputs": (LF.out("message_output", "Message Output", LF.MESSAGE, "convert_to_message"),),
                    "handles": {"input_data": ("Message", "Data", "DataFrame", "JSON", "Table")},
                },
            ),
            Adapter(
                "util.passthrough",
                "HtmlLinkExtractor",
                display="HTML Link Extractor",
                export=False,
                inputs={"value": "data_input"},
                outputs={"value": "data"},
                ignore=("kind", "drop_fragments"),
                note="HTML Link Extractor: links between pages are not followed; the documents go on unchanged",
            ),
        ),
        "flowise": (
            Adapter(
                "util.passthrough",
                "llmChain",
                also=("conversationChain", "simpleChatEngine"),
                hook="chain",
                ignore=(
                    *FW.SILENT,
                    "model",
                    "prompt",
                    "memory",
                    "outputParser",
                    "chainName",
                    "outputPrediction",
                    "systemMessagePrompt",
                    "chatPromptTemplate",
                ),
            ),
            # Agentflow v1: a worker is folded; its tools go to the agent its "supervisor" input names.
            Adapter(
                "util.passthrough",
                "worker",
                hook="chain",
                extra={"forward": ("supervisor", {"tools": "tools"})},
                ignore=("workerName", "workerPrompt", "tools", "supervisor", "model", "maxIterations"),
                note="a worker of a multi-agent flow: its tools are given to the supervisor agent (its prompt "
                "is not carried)",
            ),
        ),
        "dify": (
            Adapter(
                "util.passthrough",
                "variable-aggregator",
                also=("variable-assigner",),
                hook="aggregate",
                export=False,
                note="absorbed: whichever of its variables a run provides goes on (alternatives)",
            ),
            Adapter(
                "util.passthrough",
                "if-else",
                also=("question-classifier",),
                hook="route",
                export=False,
                note="absorbed: " + DF.ROUTE,
            ),
            Adapter(
                "util.passthrough",
                "iteration",
                also=("loop",),
                hook="loop",
                export=False,
                note="folded into one pass over all items (our nodes take whole lists)",
            ),
            Adapter(
                "util.passthrough",
                "iteration-start",
                also=("loop-start", "loop-end", "assigner", "list-operator"),
                hook="route",
                export=False,
                note="absorbed: it only steers the run",
            ),
            Adapter(
                "util.passthrough",
                "tool:dify_extractor",
                also=("tool:general_extractor", "tool:unstructured", "tool:mineru", "tool:jina_reader"),
                hook="extractor_tool",
                export=False,
                note="absorbed: the loader reads the file's text itself",
            ),
        ),
    }
    display_name = "Pass Through"
    aliases = ("No Operation", "noop", "passthrough")
    category = "Utility"

    def run(self, inputs: PassthroughIn, ctx: RunContext) -> PassthroughOut:
        return {"value": inputs.get("value")}
