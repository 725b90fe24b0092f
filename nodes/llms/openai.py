"""``llm.openai``: OpenAI chat models (or any OpenAI-compatible server through ``base_url``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from flowbuilder.formats import dify_table as DF
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import OFFLINE_CHAT, Adapter, Mappings, Param, nonempty_str, positive_int, to_float
from flowbuilder.formats.n8n_table import CHAT_OUT, LC, chat_params
from flowbuilder.nodes.llms.base import LLMConfig
from flowbuilder.nodes.llms.openai_compatible import OpenAICompatibleChatNode
from flowbuilder.registry import register_node
from flowbuilder.trust.providers import CredentialSlot


class OpenAIChatConfig(LLMConfig):
    """Settings of ``llm.openai``: the saved config, and the inspector's form."""

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
        "langflow": (
            Adapter(
                "llm.openai",
                "OpenAIModel",
                also=("OpenAIModelComponent",),
                display="OpenAI",
                **LF.LLM_PORTS,
                params=(
                    *LF.LLM_PARAMS,
                    Param("base_url", "openai_api_base", to_ours=LF.api_base, widget="MessageTextInput"),
                ),
                local=OFFLINE_CHAT,
                providers=("openai",),
            ),
            # The legacy (pre-1.0) chat model: its one output is the model an agent or chain takes.
            Adapter(
                "llm.openai",
                "ChatOpenAI",
                display="ChatOpenAI",
                export=False,
                params=(
                    Param("model", "model_name", to_ours=nonempty_str),
                    Param("temperature", "temperature", to_ours=to_float),
                    Param("max_tokens", "max_tokens", to_ours=positive_int),
                    Param("base_url", "openai_api_base", to_ours=LF.api_base),
                ),
                outputs={"model": "model_output"},
                out_aliases={"ChatOpenAI": "model", "BaseChatModel": "model", "BaseLanguageModel": "model"},
                ignore=("model_kwargs", "n", "streaming", "verbose", "cache", "callbacks", "tags", "metadata"),
                extra={"secret": "openai_api_key"},
            ),
            # LangFlow 1.5+'s provider-neutral model components: the "provider" hook picks our node by the
            # provider of the chosen model.
            Adapter(
                "llm.openai",
                "LanguageModelComponent",
                display="Language Model",
                hook="provider",
                export=False,
                inputs={"prompt": "input_value", "system": "system_message"},
                outputs={"answer": "text_output", "model": "model_output"},
                params=(
                    Param("temperature", "temperature", to_ours=to_float),
                    Param("system_message", "system_message", to_ours=nonempty_str),
                ),
                ignore=(
                    "model",
                    "stream",
                    "base_url_ibm_watsonx",
                    "project_id",
                    "api_key",
                    "provider",
                    "model_name",
                    "ollama_base_url",
                ),
            ),
        ),
        "flowise": (
            FW.chat(
                "llm.openai",
                "chatOpenAI",
                Param("base_url", "basepath", to_ours=nonempty_str),
                local=OFFLINE_CHAT,
                ignore=(
                    *FW.SILENT,
                    "topP",
                    "frequencyPenalty",
                    "presencePenalty",
                    "timeout",
                    "strictToolCalling",
                    "stopSequence",
                    "reasoning",
                    "reasoningEffort",
                    "reasoningSummary",
                    "proxyUrl",
                ),
            ),
            FW.chat(
                "llm.openai",
                "chatOpenAICustom",
                Param("base_url", "basepath", to_ours=nonempty_str),
                local=OFFLINE_CHAT,
                ignore=(*FW.SILENT, "topP", "frequencyPenalty", "presencePenalty", "timeout"),
            ),
        ),
        "dify": (
            Adapter(
                "llm.openai",
                "model:openai",
                params=DF.MODEL_PARAMS,
                export=False,
                local=OFFLINE_CHAT,
                providers=("openai",),
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
