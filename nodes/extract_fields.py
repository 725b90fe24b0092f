"""``extract.fields``: named fields pulled out of a text (LangFlow's Structured Output).

With a chat model the fields are asked for as one JSON object (held to a JSON schema where the model
supports it). Without one, or when the model cannot be reached, each field is looked up by its name in
the text: "net income of $500 million" gives ``NET_INCOME = $500 million``. That fallback reads only
amounts, numbers and dates that follow the field's name; a field it cannot find stays empty, and the
node's warning says how many were found and that no model read the text.

The output is one record whose columns are the fields, ready for ``labeller.row`` templates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import ChatMessage, Document
from flowbuilder.errors import FlowbuilderError, NodeError
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings, Param, nonempty_str
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.llms.structured import JsonChatModel
from flowbuilder.portvalues import Records, Text
from flowbuilder.registry import register_node
from flowbuilder.services import ChatModel
from flowbuilder.trust.terminal import excerpt

_VALUE = re.compile(
    r"(?:[$€£¥]\s?)?-?\d[\d,]*(?:\.\d+)?\s?(?:%|percent|(?:thousand|million|billion|trillion|[kKmMbB])\b)?"
    r"|\b\d{4}-\d{2}-\d{2}\b"
)
_WINDOW = 120
"""How far after a field's name its value may start (characters)."""


class ExtractFieldsConfig(BaseModel):
    """Settings of ``extract.fields``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    fields: dict[str, str] = Field(
        default_factory=dict, description="Field name -> what it means (the model reads this), e.g. NET_INCOME."
    )
    instructions: str = Field(
        "Extract the fields from the text. Reply with one JSON object with exactly these keys; use an empty "
        "string for a field the text does not give.",
        description="What the model is told before the text.",
    )


def find_by_name(text: str, name: str) -> str:
    """The first amount, number or date after ``name`` (``NET_INCOME`` -> "net income") in ``text``."""
    words = [w for w in re.split(r"[_\s\-]+", name.strip()) if w]
    if not words:
        return ""
    phrase = r"[\s_\-]+".join(re.escape(w) for w in words)
    for match in re.finditer(rf"\b{phrase}\b", text, flags=re.IGNORECASE):
        window = text[match.end() : match.end() + _WINDOW]
        stop = re.search(r"[.;](\s|$)", window)
        value = _VALUE.search(window[: stop.start()] if stop else window)
        if value:
            return value.group().strip().rstrip(",")
    return ""


def _json_object(reply: str) -> dict[str, Any] | None:
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(reply[start : end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class ExtractIn(TypedDict):
    """The input ports of ``extract.fields``."""

    text: Annotated[Text, "The text to read."]
    model: NotRequired[Annotated[ChatModel, "A chat model; without one, fields are looked up by name."]]


class FieldsOut(TypedDict):
    """The output ports of ``extract.fields``."""

    records: Annotated[Records, "One record whose columns are the fields."]


@register_node
class ExtractFields(Node[ExtractFieldsConfig, ExtractIn, FieldsOut]):
    """Pull named fields out of a text into one record (with a chat model, or by name without one)."""

    type_name = "extract.fields"
    mappings: ClassVar[Mappings] = {
        "langflow": (
            # Structured Output: its schema's fields become extract.fields' fields; its model is wired in.
            Adapter(
                "extract.fields",
                "StructuredOutput",
                display="Structured Output",
                export=False,
                inputs={"text": "input_value", "model": "llm"},
                outputs={"records": "structured_output"},
                out_aliases={"structured_output_dataframe": "records", "dataframe_output": "records"},
                params=(
                    Param("fields", "output_schema", to_ours=LF.schema_fields),
                    Param("instructions", "system_prompt", to_ours=nonempty_str),
                ),
                ignore=("multiple", "schema_name"),
                note="Structured Output: its fields are asked of the model; with no model reachable they "
                "are looked up by name in the text (the node's warning says how many were found)",
            ),
        ),
    }
    display_name = "Extract Fields"
    aliases = ("Structured Output", "StructuredOutput", "extract", "fields")
    category = "Transform"
    Config = ExtractFieldsConfig

    @classmethod
    def config_problems(cls, config: ExtractFieldsConfig) -> list[tuple[str | None, str]]:
        if not config.fields:
            return [(None, '\'fields\' is empty: name the fields to extract, e.g. {"NET_INCOME": "net income"}')]
        return []

    def run(self, inputs: ExtractIn, ctx: RunContext) -> FieldsOut:
        c = self.config
        if not c.fields:
            raise NodeError("'fields' is empty: name the fields to extract")
        text = str(inputs.get("text") or "")
        model = inputs.get("model")
        values: dict[str, str] | None = None
        why = "no chat model is connected"
        if model is not None:
            try:
                values = self._ask(model, text)
                ctx.details["path"] = "model"
            except FlowbuilderError as exc:
                why = f"the model failed ({excerpt(str(exc), 160)})"
            if values is None and why == "no chat model is connected":
                why = "the model's reply held no JSON object"
        if values is None:
            values = {name: find_by_name(text, name) for name in c.fields}
            found = sum(1 for v in values.values() if v)
            ctx.details["path"] = "by name"
            ctx.warn(
                f"{why}: fields looked up by their names in the text ({found} of {len(values)} found); "
                "connect a reachable chat model to extract them by meaning"
            )
        ctx.details["fields"] = values
        record = Document(
            text=json.dumps(values, ensure_ascii=False),
            metadata={"columns": values, "source": "extract.fields", "record_id": "1"},
        )
        return {"records": [record]}

    def _ask(self, model: ChatModel, text: str) -> dict[str, str] | None:
        c = self.config
        described = "\n".join(f"- {name}: {meaning or name}" for name, meaning in c.fields.items())
        messages = [
            ChatMessage(role="system", content=f"{c.instructions}\nFields:\n{described}"),
            ChatMessage(role="user", content=text),
        ]
        if isinstance(model, JsonChatModel):
            schema = {
                "type": "object",
                "properties": {name: {"type": "string"} for name in c.fields},
                "required": list(c.fields),
            }
            reply = model.chat_json(messages, schema).content or ""
        else:
            reply = model.chat(messages).content or ""
        found = _json_object(reply)
        if found is None:
            return None
        return {name: "" if found.get(name) is None else str(found.get(name)) for name in c.fields}

    def summarize(self, outputs: Mapping[str, Any]) -> str:
        records = outputs.get("records") or []
        columns = records[0].metadata.get("columns", {}) if records else {}
        return ", ".join(f"{k}={v or '?'}" for k, v in columns.items())[:200]
