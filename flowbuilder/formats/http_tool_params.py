"""n8n's HTTP Request tools <-> ``tool.http``'s config: key/value lists, placeholders and ``$fromAI``.

n8n has two: the LangChain ``toolHttpRequest`` (``{placeholder}`` in the URL and values, key/value
lists whose values the model may provide) and the core HTTP Request used as a tool (``httpRequestTool``,
whose values are ``{{ $fromAI('name', 'description') }}`` expressions). Both become ``{name}`` templates
that the model fills. A ``$fromAI`` call is recognised by its text, never evaluated; any other
expression in a value also becomes a parameter the model fills, named after the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

FROM_AI = re.compile(
    r"""\{\{\s*\$fromAI\(\s*(['"`])([A-Za-z_][A-Za-z0-9_]{0,63})\1(?:\s*,\s*(['"`])(.*?)\3)?[^}]*\}\}"""
)
_EXPRESSION = re.compile(r"\{\{.*?\}\}")
_NAME = re.compile(r"[^A-Za-z0-9_]")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,63})\}")  # as tool.http reads them


def from_ai_templates(value: Any, descriptions: dict[str, str], field: str = "value") -> Any:
    """``value`` with every ``$fromAI('x', 'desc')`` as ``{x}`` (descriptions collected); other
    expressions in a value become ``{field}``. Containers are walked; non-strings are kept."""
    if isinstance(value, dict):
        found = value.get("name")
        name = found if isinstance(found, str) else field
        return {k: from_ai_templates(v, descriptions, name if k == "value" else k) for k, v in value.items()}
    if isinstance(value, list):
        return [from_ai_templates(v, descriptions, field) for v in value]
    if not (isinstance(value, str) and value.startswith("=") and "{{" in value):
        return value

    def named(match: re.Match[str]) -> str:
        name = match.group(2)
        if match.group(4):
            descriptions.setdefault(name, match.group(4))
        return "{" + name + "}"

    text = FROM_AI.sub(named, value[1:])
    fallback = _NAME.sub("_", field).strip("_") or "value"
    return _EXPRESSION.sub("{" + fallback + "}", text)


def _rows(value: Any, key: str) -> list[dict[str, Any]]:
    rows = value.get(key) if isinstance(value, dict) else None
    return [r for r in rows or [] if isinstance(r, dict) and isinstance(r.get("name"), str) and r["name"].strip()]


def tool_pairs(value: Any) -> dict[str, str] | None:
    """toolHttpRequest's ``{"values": [{name, valueProvider, value}]}``: model-provided values are ``{name}``."""
    pairs = {
        r["name"]: (
            "{" + r["name"] + "}"
            if r.get("valueProvider", "modelRequired") != "fieldValue"
            else str(r.get("value", ""))
        )
        for r in _rows(value, "values")
    }
    return pairs or None


def tool_pairs_back(pairs: Any) -> dict[str, Any] | None:
    if not pairs:
        return None
    rows = []
    for name, value in dict(pairs).items():
        if value == "{" + name + "}":
            rows.append({"name": name, "valueProvider": "modelRequired"})
        else:
            rows.append({"name": name, "valueProvider": "fieldValue", "value": value})
    return {"values": rows}


def tool_body(value: Any) -> str | None:
    """A key/value body as the JSON object text ``tool.http`` sends."""
    pairs = tool_pairs(value)
    return json.dumps(pairs) if pairs else None


def core_pairs(value: Any) -> dict[str, str] | None:
    """The core HTTP Request's ``{"parameters": [{name, value}]}`` (``$fromAI`` already rewritten)."""
    pairs = {r["name"]: str(r.get("value", "")) for r in _rows(value, "parameters")}
    return pairs or None


def core_body(value: Any) -> str | None:
    pairs = core_pairs(value)
    return json.dumps(pairs) if pairs else None


def placeholders(value: Any) -> dict[str, str] | None:
    found = {r["name"]: str(r.get("description") or "") for r in _rows(value, "values")}
    return {k: v for k, v in found.items() if v} or None


def placeholders_back(value: Any) -> dict[str, Any] | None:
    if not value:
        return None
    return {"values": [{"name": k, "description": v} for k, v in dict(value).items()]}


def parameter_names_of(config: dict[str, Any]) -> list[str]:
    """The ``{name}`` parameters of an imported ``tool.http`` config (as the node finds them)."""
    texts = [
        config.get("url", ""),
        *dict(config.get("query") or {}).values(),
        *dict(config.get("headers") or {}).values(),
        config.get("body", ""),
    ]
    names: list[str] = []
    for text in texts:
        for name in _PLACEHOLDER.findall(str(text)):
            if name not in names:
                names.append(name)
    return names


def json_if_any(body: Any) -> str | None:
    """Export: a body is written as JSON text (``specifyBody: json``)."""
    return "json" if body else None


def never(_: Any) -> None:
    """Import: a flag another parameter already answers (``sendQuery`` beside ``parametersQuery``)."""
    return None


__all__ = [
    "core_body",
    "core_pairs",
    "from_ai_templates",
    "json_if_any",
    "never",
    "parameter_names_of",
    "placeholders",
    "placeholders_back",
    "tool_body",
    "tool_pairs",
    "tool_pairs_back",
]
