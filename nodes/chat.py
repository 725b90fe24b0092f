"""``chat.input`` and ``chat.output``: where a conversation enters and leaves a flow."""

from __future__ import annotations

from typing import Annotated, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.errors import NodeError
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str
from flowbuilder.formats.n8n_table import BASE, LC
from flowbuilder.node import EmptyConfig, Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Answer, Message
from flowbuilder.registry import register_node

PREVIEW_CHARS = 60


class ChatInputConfig(BaseModel):
    """Settings of ``chat.input``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        "",
        description="The message used when the run gives none (--input TEXT).",
        json_schema_extra={"multiline": True},
    )


class MessageOut(TypedDict):
    """The output ports of ``chat.input``."""

    message: Annotated[Message, "The user's message."]


class ShownOut(TypedDict):
    """The output ports of ``chat.output``."""

    message: Annotated[Message, "The answer, as shown."]


class AnswerIn(TypedDict):
    """The input ports of ``chat.output``."""

    message: Annotated[Answer, "The answer to show."]


@register_node
class ChatInput(Node[ChatInputConfig, NoInputs, MessageOut]):
    """The user's message: the run's input text, or the configured text."""

    type_name = "chat.input"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "chat.input",
                LC + "chatTrigger",
                (1, 1.1, 1.3, 1.4),
                outputs={"message": "main"},
                also=(LC + "manualChatTrigger",),
                ignore=("options", "public", "mode", "initialMessages"),
                export_version=1.1,
            ),
            # A message from a chat app (Telegram, Slack, WhatsApp, an email, a calling workflow) starts the flow:
            # here the question comes from the chat input (`run --input TEXT`).
            Adapter(
                "chat.input",
                BASE + "telegramTrigger",
                (1, 1.1, 1.2),
                also=tuple(
                    BASE + t
                    for t in (
                        "slackTrigger",
                        "whatsAppTrigger",
                        "gmailTrigger",
                        "microsoftOutlookTrigger",
                        "twilioTrigger",
                        "executeWorkflowTrigger",
                        "discordTrigger",
                        "microsoftTeamsTrigger",
                    )
                ),
                outputs={"message": "main"},
                export=False,
                note="a message from another app started the flow: here it is the chat input's text "
                "(`run --input TEXT`; nothing is received from the app)",
            ),
            # An HTTP call as the entry of a served flow: the webhook is `flowbuilder serve`'s /ask, its
            # answer is Respond to Webhook's (the "webhook" hook names the path in the report).
            Adapter(
                "chat.input",
                BASE + "webhook",
                (1, 1.1, 2, 2.1),
                outputs={"message": "main"},
                export=False,
                export_version=2,
                hook="webhook",
                note="a webhook: `flowbuilder serve` takes the message at /ask (it was POST "
                "/{what}); `run --input TEXT` gives it here",
            ),
        ),
        "langflow": (
            Adapter(
                "chat.input",
                "TextInput",
                display="Text Input",
                outputs={"message": "text"},
                export=False,
                params=(Param("text", "input_value", to_ours=nonempty_str),),
            ),
            Adapter(
                "chat.input",
                "ChatInput",
                display="Chat Input",
                outputs={"message": "message"},
                params=(Param("text", "input_value", to_ours=nonempty_str, widget="MultilineInput"),),
                extra={"outputs": (LF.out("message", "Chat Message", LF.MESSAGE, "message_response"),)},
            ),
        ),
        "dify": (
            Adapter(
                "chat.input",
                "start",
                hook="start",
                outputs={"message": "sys.query"},
                export=False,
                ignore=("variables",),
            ),
        ),
    }

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
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "chat.output",
                BASE + "respondToWebhook",
                (1, 1.1, 1.2, 1.3, 1.4, 1.5),
                inputs={"message": "main"},
                outputs={"message": "main"},
                export=False,
                hook="respond",
                export_version=1.1,
                extra={"unexported": "chat output: n8n answers in the chat trigger"},
                ignore=("respondWith", "responseBody", "options", "enableResponseOutput", "responseCode"),
                note="Respond to Webhook: the answer `flowbuilder serve` returns at /ask",
            ),
        ),
        "langflow": (
            Adapter(
                "chat.output",
                "ChatOutput",
                display="Chat Output",
                inputs={"message": "input_value"},
                outputs={"message": "message"},
                extra={
                    "outputs": (LF.out("message", "Output Message", LF.MESSAGE, "message_response"),),
                    "handles": {"input_value": LF.DATA_IN},
                },
            ),
        ),
        "dify": (
            Adapter("chat.output", "answer", hook="answer", export=False, inputs={"message": "answer"}),
            Adapter("chat.output", "end", hook="end", export=False, inputs={"message": "outputs"}),
        ),
    }

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
