"""The output inspector: what a node produced in the last run, shown so each seam can be checked.

Records and chunks as a table (text length, start/end boundaries, record ids, metadata columns),
hits with score and source, text outputs verbatim, and the node's ``details`` (the exact prompt, a
sample vector, an agent's messages and tool calls), plus the error of a failed node.
"""

from __future__ import annotations

import json
from typing import Any

from nicegui import ui

from flowbuilder.data import ChatMessage, Document, Hit
from flowbuilder.executor import NodeResult

MAX_ROWS = 200
PREVIEW_CHARS = 160
_FIRST_COLUMNS = ("record_id", "source", "row", "page", "chunk_index", "start", "end", "record_ids")


def _cell(value: Any) -> Any:
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def documents_table(docs: list[Document]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Columns and rows for a list of documents: fixed trace columns first, then other metadata keys."""
    keys: list[str] = []
    for doc in docs[:MAX_ROWS]:
        for key in doc.metadata:
            if key not in keys and key != "record_spans":
                keys.append(key)
    ordered = [k for k in _FIRST_COLUMNS if k in keys] + [k for k in keys if k not in _FIRST_COLUMNS]
    columns = [
        {"name": "i", "label": "#", "field": "i", "align": "right"},
        {"name": "text", "label": "text", "field": "text", "align": "left", "classes": "fb-cell-text"},
        {"name": "length", "label": "chars", "field": "length", "align": "right"},
    ]
    columns += [{"name": k, "label": k, "field": k, "align": "left"} for k in ordered]
    rows = []
    for i, doc in enumerate(docs[:MAX_ROWS]):
        row: dict[str, Any] = {"i": i, "length": len(doc.text), "text": doc.text[:PREVIEW_CHARS]}
        row.update({k: _cell(doc.metadata.get(k)) for k in ordered})
        rows.append(row)
    return columns, rows


def hits_table(hits: list[Hit]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    columns = [
        {"name": k, "label": k, "field": k, "align": "left" if k in ("source", "record_id", "text") else "right"}
        | ({"classes": "fb-cell-text"} if k == "text" else {})
        for k in ("rank", "score", "text", "source", "record_id", "chunk_index")
    ]
    rows = [
        {
            "rank": h.rank,
            "score": round(h.score, 4),
            "source": h.document.source,
            "record_id": _cell(h.document.metadata.get("record_id") or h.document.metadata.get("record_ids")),
            "chunk_index": h.document.metadata.get("chunk_index"),
            "text": h.document.text[:PREVIEW_CHARS],
        }
        for h in hits[:MAX_ROWS]
    ]
    return columns, rows


def _pre(text: str) -> None:
    ui.code(text, language="text").classes("w-full fb-pre text-xs").style("max-height: 320px; overflow: auto")


def render_value(name: str, value: Any) -> None:
    """One output port's value."""
    if isinstance(value, list) and value and all(isinstance(v, Hit) for v in value):
        columns, rows = hits_table(value)
        ui.label(f"{name}: {len(value)} hits").classes("text-weight-medium")
        ui.table(columns=columns, rows=rows, row_key="rank").classes("w-full fb-out-table").props(
            "dense flat wrap-cells"
        )
    elif isinstance(value, list) and value and all(isinstance(v, Document) for v in value):
        columns, rows = documents_table(value)
        lengths = [len(d.text) for d in value]
        stats = f"chars min {min(lengths)} / avg {sum(lengths) // len(lengths)} / max {max(lengths)}"
        ui.label(
            f"{name}: {len(value)} documents · {stats}"
            + (f" (first {MAX_ROWS} shown)" if len(value) > MAX_ROWS else "")
        ).classes("text-weight-medium")
        ui.table(columns=columns, rows=rows, row_key="i").classes("w-full fb-out-table").props(
            "dense flat wrap-cells"
        ).style("max-height: 480px")
    elif isinstance(value, str):
        ui.label(f"{name}: {len(value)} chars").classes("text-weight-medium")
        _pre(value)
    elif isinstance(value, list) and not value:
        ui.label(f"{name}: empty list").classes("text-weight-medium")
    elif isinstance(value, (dict, list, int, float, bool)):
        ui.label(name).classes("text-weight-medium")
        _pre(json.dumps(value, indent=2, ensure_ascii=False, default=str)[:20000])
    else:
        ui.label(f"{name}: {type(value).__name__} (a service for the node that uses it)").classes("text-weight-medium")


def render_details(details: dict[str, Any]) -> None:
    """The node's inspect-only data."""
    for key, value in details.items():
        if key == "sample_vector" and isinstance(value, list):
            head = ", ".join(f"{float(v):.4f}" for v in value[:8])
            ui.label(f"sample vector ({len(value)} dimensions)").classes("text-weight-medium")
            _pre(f"[{head}{', …' if len(value) > 8 else ''}]")
        elif key == "prompt" and isinstance(value, str):
            ui.label("exact prompt").classes("text-weight-medium")
            _pre(value)
        elif key == "messages" and isinstance(value, list):
            ui.label(f"messages sent ({len(value)})").classes("text-weight-medium")
            for message in value:
                msg = message if isinstance(message, ChatMessage) else _as_message(message)
                with ui.card().classes("w-full q-pa-xs").props("flat bordered"):
                    ui.label(msg.role).classes("text-caption text-weight-bold")
                    if msg.content:
                        ui.label(msg.content).classes("text-xs").style("white-space: pre-wrap")
                    if msg.tool_calls:
                        _pre(json.dumps(msg.tool_calls, indent=2, ensure_ascii=False, default=str))
        elif key == "tool_calls" and isinstance(value, list):
            ui.label(f"tool calls ({len(value)})").classes("text-weight-medium")
            _pre(json.dumps(value, indent=2, ensure_ascii=False, default=str))
        else:
            ui.label(key).classes("text-weight-medium")
            if isinstance(value, str):
                _pre(value)
            else:
                _pre(json.dumps(value, indent=2, ensure_ascii=False, default=_jsonable)[:20000])


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return str(value)


def _as_message(value: Any) -> ChatMessage:
    if isinstance(value, dict):
        try:
            return ChatMessage.model_validate(value)
        except Exception:
            pass
    return ChatMessage(role="?", content=str(value))


def render_result(result: NodeResult | None, node_label: str) -> None:
    if result is None:
        ui.label(f"'{node_label}' has no output yet: run the flow (or run up to this node).").classes(
            "text-grey-7 text-sm"
        )
        return
    colour = {"ok": "positive", "cached": "info", "failed": "negative"}.get(result.status, "grey")
    with ui.row().classes("items-center gap-2"):
        ui.badge(result.status, color=colour).classes("fb-out-status")
        if result.summary:
            ui.label(result.summary).classes("text-sm")
        ui.label(f"{result.duration * 1000:.0f} ms").classes("text-xs text-grey-7")
    if result.error:
        ui.label(result.error).classes("text-negative text-sm fb-out-error").style("white-space: pre-wrap")
    for name, value in result.outputs.items():
        render_value(name, value)
    if result.details:
        ui.separator()
        render_details(result.details)
