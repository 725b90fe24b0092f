"""Turn a node Config's JSON schema into form field descriptions (plain Python, no NiceGUI).

The inspector draws one widget per :class:`FormField`: bounded numbers become number inputs with
min/max, enums and Literals selects, booleans switches, ``{"multiline": True}`` strings textareas,
and lists/dicts a JSON text field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FormField:
    """One field of the inspector's form, from the Config's JSON schema."""

    name: str
    kind: str
    """``number``, ``integer``, ``select``, ``switch``, ``textarea``, ``text`` or ``json``."""
    label: str
    description: str = ""
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    options: list[Any] = field(default_factory=list)
    nullable: bool = False
    advanced: bool = False


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = root.get("$defs", {}).get(ref.split("/")[-1], {})
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    fields: list[FormField] = []
    for name, raw in (schema.get("properties") or {}).items():
        prop = _resolve(raw, schema)
        nullable = False
        variants = prop.get("anyOf") or prop.get("oneOf")
        if variants:
            non_null = [_resolve(v, schema) for v in variants if v.get("type") != "null"]
            nullable = len(non_null) < len(variants)
            consts = [v["const"] for v in non_null if "const" in v]
            if consts and len(consts) == len(non_null):
                base: dict[str, Any] = {"enum": consts}
            else:
                base = non_null[0] if len(non_null) == 1 else {"type": "json"}
            prop = {**base, **{k: v for k, v in prop.items() if k not in ("anyOf", "oneOf")}}
        kind = _kind(prop)
        options = list(prop.get("enum") or ([prop["const"]] if "const" in prop else []))
        minimum = prop.get("minimum", prop.get("exclusiveMinimum"))
        maximum = prop.get("maximum", prop.get("exclusiveMaximum"))
        fields.append(
            FormField(
                name=name,
                kind=kind,
                label=prop.get("title") or name.replace("_", " ").capitalize(),
                description=prop.get("description", ""),
                default=prop.get("default"),
                minimum=minimum,
                maximum=maximum,
                options=options,
                nullable=nullable,
                advanced=bool(prop.get("advanced")),
            )
        )
    return fields


def _kind(prop: dict[str, Any]) -> str:
    if "enum" in prop or "const" in prop:
        return "select"
    type_ = prop.get("type")
    if type_ == "boolean":
        return "switch"
    if type_ == "integer":
        return "integer"
    if type_ == "number":
        return "number"
    if type_ == "string":
        return "textarea" if prop.get("multiline") else "text"
    return "json"


def parse_json_field(text: str) -> Any:
    """The value of a JSON text field; raises ValueError with a short reason."""
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
