"""``llm.groq``: Groq-hosted open models through the groq SDK."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from flowbuilder.formats import dify_table as DF
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import OFFLINE_CHAT, Adapter, Mappings, Param
from flowbuilder.formats.n8n_table import CHAT_OUT, LC, chat_params
from flowbuilder.nodes.llms.base import LLMConfig
from flowbuilder.nodes.llms.openai_compatible import OpenAICompatibleChatNode
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot

_SDK_SUFFIX = "/openai/v1"


class GroqChatConfig(LLMConfig):
    """Settings of ``llm.groq``: the saved config, and the inspector's form."""

    model: str = Field("llama-3.1-8b-instant", description="Groq model name, e.g. llama-3.1-8b-instant.")


def groq_base_url(base_url: str) -> str | None:
    """The server root: the groq SDK appends ``/openai/v1`` itself, so a URL copied with it is trimmed."""
    url = base_url.strip().rstrip("/")
    if url.endswith(_SDK_SUFFIX):
        url = url[: -len(_SDK_SUFFIX)]
    return url or None


@register_node
class GroqChat(OpenAICompatibleChatNode):
    """Answer a prompt with a Groq chat model, or provide the model to an agent."""

    type_name = "llm.groq"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "llm.groq",
                LC + "lmChatGroq",
                (1,),
                outputs=CHAT_OUT,
                params=chat_params("llama3-8b-8192"),
                fixed={"options": {}},
                local=OFFLINE_CHAT,
            ),
        ),
        "langflow": (
            Adapter(
                "llm.groq",
                "GroqModel",
                display="Groq",
                **LF.LLM_PORTS,
                params=(*LF.LLM_PARAMS, Param("base_url", "base_url", to_ours=LF.api_base, widget="MessageTextInput")),
                local=OFFLINE_CHAT,
                providers=("groq",),
            ),
        ),
        "flowise": (FW.chat("llm.groq", "groqChat", local=OFFLINE_CHAT, ignore=FW.SILENT),),
        "dify": (
            Adapter(
                "llm.groq", "model:groq", params=DF.MODEL_PARAMS, export=False, local=OFFLINE_CHAT, providers=("groq",)
            ),
        ),
    }
    display_name = "Groq Chat Model"
    aliases = ("LLM", "Groq", "chat model", "model", "chat")
    Config = GroqChatConfig
    credential_slots = (CredentialSlot("api_key", "groq", description="Groq API key (GROQ_API_KEY)."),)
    provider = "Groq"
    sdk = "groq"
    client_class = "Groq"
    env_var = "GROQ_API_KEY"
    usage_in_stream = False

    @classmethod
    def sdk_base_url(cls, base_url: str) -> str | None:
        return groq_base_url(base_url)
