"""``llm.openai``: OpenAI chat models (or any OpenAI-compatible server through ``base_url``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from flowbuilder.credentials import CredentialSlot
from flowbuilder.formats.adapters import OFFLINE_CHAT, Adapter, Mappings, Param, nonempty_str
from flowbuilder.formats.n8n_table import CHAT_OUT, LC, chat_params
from flowbuilder.nodes.llms.base import LLMConfig
from flowbuilder.nodes.llms.openai_compatible import OpenAICompatibleChatNode
from flowbuilder.registry import register_node


class OpenAIChatConfig(LLMConfig):
    model: str = Field("gpt-4o-mini", description="OpenAI model name, e.g. gpt-4o-mini or gpt-4o.")


@register_node
class OpenAIChat(OpenAICompatibleChatNode):
    """Answer a prompt with an OpenAI chat model, or provide the model to an agent."""

    type_name = "llm.openai"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "llm.openai",
                LC + "lmChatOpenAi",
                (1, 1.1, 1.2, 1.3),
                outputs=CHAT_OUT,
                params=(
                    *chat_params("gpt-4o-mini", locator=True),
                    Param("base_url", "options.baseURL", "", to_ours=nonempty_str),
                ),
                fixed={"options": {}},
                ignore=("builtInTools",),
                export_version=1.2,
                local=OFFLINE_CHAT,
            ),
        ),
    }
    display_name = "OpenAI Chat Model"
    aliases = ("LLM", "OpenAI", "chat model", "GPT", "model", "chat")
    Config = OpenAIChatConfig
    credential_slots = (CredentialSlot("api_key", "openai", description="OpenAI API key (OPENAI_API_KEY)."),)
    provider = "OpenAI"
    sdk = "openai"
    client_class = "OpenAI"
    env_var = "OPENAI_API_KEY"
