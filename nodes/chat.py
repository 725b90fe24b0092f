"""``chat.input`` and ``chat.output``: where a conversation enters and leaves a flow."""

from __future__ import annotations

from typing import Annotated, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.errors import NodeError
from flowbuilder.node import EmptyConfig, Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Answer, Message
from flowbuilder.registry import register_node

PREVIEW_CHARS = 60


class ChatInputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        "",
        description="The message used when the run gives none (--input TEXT).",
        json_schema_extra={"multiline": True},
    )


class MessageOut(TypedDict):
    message: Annotated[Message, "The user's message."]


class ShownOut(TypedDict):
    message: Annotated[Message, "The answer, as shown."]


class AnswerIn(TypedDict):
    message: Annotated[Answer, "The answer to show."]


@register_node
class ChatInput(Node[ChatInputConfig, NoInputs, MessageOut]):
    """The user's message: the run's input text, or the configured text."""

    type_name = "chat.input"

    capabilities = frozenset({Capability.DEFAULT_SOURCE})
    display_name = "Chat Input"
    aliases = ("When chat message received", "Chat Trigger", "chat", "message", "user input")
    category = "Chat"
    Config = ChatInputConfig
    run_input = "text"

    def run(self, inputs: NoInputs, ctx: RunContext) -> MessageOut:
        config = self.config
        message = ctx.run_input if ctx.run_input else config.text
        if not message:
            raise NodeError(
                f"no message to send: run the flow with --input \"your question\" or set the text of '{ctx.node_id}'."
            )
        ctx.details["source"] = "run input" if ctx.run_input else "config"
        return {"message": message}

    def summarize(self, outputs: MessageOut) -> str:
        return preview(outputs["message"])


@register_node
class ChatOutput(Node[EmptyConfig, AnswerIn, ShownOut]):
    """The answer shown to the user at the end of a chat flow."""

    type_name = "chat.output"

    capabilities = frozenset({Capability.ANSWERS})
    display_name = "Chat Output"
    aliases = ("chat", "Respond to Chat", "answer", "output")
    category = "Chat"

    def run(self, inputs: AnswerIn, ctx: RunContext) -> ShownOut:
        return {"message": inputs["message"]}

    def summarize(self, outputs: ShownOut) -> str:
        return preview(outputs["message"])


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The first ``limit`` characters on one line (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
