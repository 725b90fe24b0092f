"""``prompt.template``: a text with ``{variables}`` that become input ports.

Values render by what they are: retrieved hits become numbered passages with their source and
score, documents become numbered texts, text stays as is. ``{{`` and ``}}`` are literal braces.
Substitution is a single regex pass, never ``str.format``, so braces inside the values are safe.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.context import cut_context, render_hits
from flowbuilder.data import ChatMessage, Document, Hit
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param
from flowbuilder.formats.n8n_table import LC, QA_SYSTEM_PROMPT, system_then_question, with_question
from flowbuilder.node import Node, RunContext
from flowbuilder.ports import Port, PortType
from flowbuilder.portvalues import Prompt
from flowbuilder.registry import register_node

DEFAULT_TEMPLATE = (
    "Answer the question using only the context below. "
    "If the context does not contain the answer, say that you don't know.\n\n"
    "Context:\n{context}\n\n"
    "Question: {question}\n"
)

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
EMPTY_LIST = "(no results)"


class PromptTemplateConfig(BaseModel):
    """Settings of ``prompt.template``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(
        DEFAULT_TEMPLATE,
        description="The prompt; each {name} becomes an input port. Write {{ and }} for literal braces.",
        json_schema_extra={"multiline": True},
    )
    context_chars: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="Context budget: retrieved hits are cut after this many characters (0: no cut). "
        "compare and eval measure hit@chars at this budget.",
    )


def template_variables(template: str) -> list[str]:
    """Variable names in order of first appearance, without duplicates."""
    names: list[str] = []
    for match in _TOKEN.finditer(template):
        name = match.group(1)
        if name and name not in names:
            names.append(name)
    return names


def render_template(template: str, values: dict[str, Any]) -> str:
    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        return render_value(values.get(match.group(1)))

    return _TOKEN.sub(substitute, template)


def render_value(value: Any) -> str:
    """How a value reads inside a prompt."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Hit):
        return render_hits([value])
    if isinstance(value, Document):
        return value.text
    if isinstance(value, ChatMessage):
        return value.content
    if isinstance(value, list | tuple):
        items = list(value)
        if not items:
            return EMPTY_LIST
        if all(isinstance(item, Hit) for item in items):
            return render_hits(items)
        if all(isinstance(item, Document) for item in items):
            return "\n\n".join(f"[{i}] {doc.text}" for i, doc in enumerate(items, start=1))
        if all(isinstance(item, str) for item in items):
            return "\n".join(items)
        return "\n".join(render_value(item) for item in items)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _is_hits(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, Hit) for item in value)


class PromptOut(TypedDict):
    """The output ports of ``prompt.template``."""

    prompt: Annotated[Prompt, "The filled-in prompt."]


@register_node  # its inputs are the template's variables, any value each: a plain dict, not a TypedDict
class PromptTemplate(Node[PromptTemplateConfig, dict[str, Any], PromptOut]):
    """Fill a prompt template; each {variable} is an input (retrieved hits render as numbered sources)."""

    type_name = "prompt.template"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            # n8n's Q&A chain: its system prompt becomes our prompt template; the "chain" hook wires the
            # retriever's hits and the question into it and the model after it.
            Adapter(
                "prompt.template",
                LC + "chainRetrievalQa",
                (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7),
                inputs={"question": "main"},
                outputs={"prompt": "main"},
                export=False,
                hook="chain",
                params=(Param("template", "options.systemPromptTemplate", QA_SYSTEM_PROMPT, to_ours=with_question),),
                ignore=("promptType", "text", "query", "options"),
                replace="retriever.vector -> prompt.template -> an llm node",
            ),
            # n8n's Basic LLM Chain: its system messages and the incoming message are our prompt; the "chain"
            # hook wires the model after it and the model's answer where the chain's went.
            Adapter(
                "prompt.template",
                LC + "chainLlm",
                (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7),
                inputs={"question": "main"},
                outputs={"prompt": "main"},
                export=False,
                hook="chain",
                params=(Param("template", "messages", {}, to_ours=system_then_question),),
                ignore=("promptType", "text", "prompt", "hasOutputParser", "batching", "needsFallback"),
                note="a Basic LLM Chain: asked with the incoming message (its prompt expression is not evaluated)",
            ),
        ),
        "langflow": (
            Adapter(
                "prompt.template",
                "Prompt Template",
                also=("Prompt",),
                hook="prompt",
                display="Prompt Template",
                outputs={"prompt": "prompt"},
                params=(Param("template", "template", widget="PromptInput", kind="prompt"),),
                extra={"outputs": (LF.out("prompt", "Prompt", LF.MESSAGE, "build_prompt"),)},
            ),
        ),
        "flowise": (
            Adapter(
                "prompt.template",
                "promptTemplate",
                also=("chatPromptTemplate", "fewShotPromptTemplate"),
                hook="prompt",
                outputs={"prompt": "promptTemplate"},
                out_aliases={"chatPromptTemplate": "prompt", "fewShotPromptTemplate": "prompt"},
                params=(Param("template", "template", to_ours=FW.template),),
                ignore=(
                    "promptValues",
                    "systemMessagePrompt",
                    "humanMessagePrompt",
                    "messageHistory",
                    "messageHistoryCode",
                    "examples",
                    "examplePrompt",
                    "prefix",
                    "suffix",
                    "exampleSeparator",
                    "templateFormat",
                ),
            ),
            Adapter(
                "prompt.template",
                "conversationalRetrievalQAChain",
                also=("retrievalQAChain", "vectorDBQAChain", "contextChatEngine"),
                hook="qa",
                inputs={"context": "vectorStoreRetriever"},
                in_aliases={"vectorStore": "context"},
                extra={"parts": ("model", "memory")},
                params=(Param("template", "responsePrompt", to_ours=FW.template),),
                ignore=(
                    *FW.SILENT,
                    "model",
                    "memory",
                    "rephrasePrompt",
                    "returnSourceDocuments",
                    "systemMessagePrompt",
                    "chainOption",
                ),
            ),
        ),
        "dify": (
            Adapter(
                "prompt.template",
                "llm",
                hook="llm",
                export=False,
                outputs={"prompt": "text"},
                ignore=(
                    "model",
                    "prompt_template",
                    "context",
                    "memory",
                    "vision",
                    "variables",
                    "structured_output",
                    "structured_output_enabled",
                    "reasoning_format",
                ),
            ),
            Adapter(
                "prompt.template", "template-transform", hook="template", export=False, outputs={"prompt": "output"}
            ),
        ),
    }

    capabilities = frozenset({Capability.RENDERS_PROMPT})
    display_name = "Prompt Template"
    aliases = ("Prompt", "template")
    category = "Prompts"
    Config = PromptTemplateConfig

    @classmethod
    def input_ports(cls, config: PromptTemplateConfig | None = None) -> tuple[Port, ...]:
        template = config.template if config is not None else DEFAULT_TEMPLATE
        return tuple(
            Port(name, PortType.ANY, description=f"Value for {{{name}}} in the template.")
            for name in template_variables(template)
        )

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> PromptOut:
        config = self.config
        values = inputs
        if config.context_chars:
            values = {
                name: cut_context(render_hits(value), config.context_chars) if _is_hits(value) else value
                for name, value in inputs.items()
            }
        prompt = render_template(config.template, values)
        ctx.details["prompt"] = prompt
        ctx.details["variables"] = template_variables(config.template)
        return {"prompt": prompt}

    def summarize(self, outputs: PromptOut) -> str:
        return f"{len(str(outputs.get('prompt', '')))} chars"
