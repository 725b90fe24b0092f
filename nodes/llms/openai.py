"""``llm.openai``: OpenAI chat models (or any OpenAI-compatible server through ``base_url``)."""

from __future__ import annotations

from pydantic import Field

from flowbuilder.credentials import CredentialSlot
from flowbuilder.nodes.llms.base import LLMConfig
from flowbuilder.nodes.llms.openai_compatible import OpenAICompatibleChatNode
from flowbuilder.registry import register_node


class OpenAIChatConfig(LLMConfig):
    model: str = Field("gpt-4o-mini", description="OpenAI model name, e.g. gpt-4o-mini or gpt-4o.")


@register_node
class OpenAIChat(OpenAICompatibleChatNode):
    """Answer a prompt with an OpenAI chat model, or provide the model to an agent."""

    type_name = "llm.openai"
    display_name = "OpenAI Chat Model"
    aliases = ("LLM", "OpenAI", "chat model", "GPT", "model", "chat")
    Config = OpenAIChatConfig
    credential_slots = (CredentialSlot("api_key", "openai", description="OpenAI API key (OPENAI_API_KEY)."),)
    provider = "OpenAI"
    sdk = "openai"
    client_class = "OpenAI"
    env_var = "OPENAI_API_KEY"
