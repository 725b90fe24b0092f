"""Constrained replies for the nodes that parse what a model writes (``query.rewrite``, ``reranker.llm``).

A model that can constrain its output (``llm.local``: a JSON schema compiled to a llama.cpp grammar)
is asked for JSON that cannot be malformed; the wanted field is turned back into the plain text the
node already parses ("7", one rewording per line). Any other model gets the plain prompt as before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from flowbuilder.data import ChatMessage
from flowbuilder.services import ChatModel


@runtime_checkable
class JsonChatModel(Protocol):
    """A chat model that can be held to a JSON schema (grammar-constrained decoding)."""

    def chat_json(self, messages: Sequence[ChatMessage], schema: dict[str, Any]) -> ChatMessage: ...


@dataclass(frozen=True)
class Reply:
    """A structured reply: the parsed text, what the model wrote and how it was asked."""

    text: str
    """What the node parses: the field's value as plain text (or the raw reply)."""
    raw: str
    """Exactly what the model wrote."""
    mode: str
    """"text", "json" or "json (unparsed)" (a constrained reply that still did not parse: shown, never hidden)."""


def ask(model: ChatModel, prompt: str, schema: dict[str, Any], field: str) -> Reply:
    """The model's reply to ``prompt``; in JSON mode when the model supports it, ``field`` as text."""
    messages = [ChatMessage(role="user", content=prompt)]
    if not isinstance(model, JsonChatModel):
        raw = model.chat(messages).content or ""
        return Reply(raw, raw, "text")
    raw = model.chat_json(messages, schema).content or ""
    try:
        value = json.loads(raw)[field]
    except (ValueError, TypeError, KeyError):
        return Reply(raw, raw, "json (unparsed)")
    if isinstance(value, list):
        return Reply("\n".join(str(item) for item in value), raw, "json")
    return Reply(str(value), raw, "json")


def list_schema(field: str, n: int) -> dict[str, Any]:
    """``{field: [n non-empty strings]}``."""
    items = {"type": "string", "minLength": 1}
    array = {"type": "array", "items": items, "minItems": n, "maxItems": n}
    return {"type": "object", "properties": {field: array}, "required": [field]}


def score_schema(field: str, high: int = 10) -> dict[str, Any]:
    """``{field: one of 0..high}`` (an enum: every grammar converter supports it)."""
    return {"type": "object", "properties": {field: {"enum": list(range(high + 1))}}, "required": [field]}
