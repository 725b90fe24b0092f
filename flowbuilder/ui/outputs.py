"""The output inspector: what a node produced in the last run, shown so each seam can be checked.

Records and chunks as a table (text length, start/end boundaries, record ids, metadata columns),
hits with score and source (or, after fusion or reranking, a stage table with each leg's rank and score
and the arithmetic of the fused score), text outputs verbatim, and the node's ``details`` (the exact prompt, a
sample vector, an agent's messages and tool calls), plus the error of a failed node.
"""

from __future__ import annotations

import json
from typing import Any

from nicegui import ui

from flowbuilder.data import ChatMessage, Document, Hit
from flowbuilder.executor import NodeResult
from flowbuilder.ui.widgets import FULL_TEXT_CHARS, clamped_text, failure_text, hit_cards, message_box

MAX_ROWS = 200
_FIRST_COLUMNS = ("start", "end", "chunk_index", "record_ids", "source", "row", "page")
PROSE_PORTS = ("answer", "message")  # read as prose; other text (prompts, contexts) in monospace
INLINE_MAX = 90  # a short one-line value is shown as "name: value", not in a block
# One template for every cell: the text column clamps to 3 lines and expands on click (in the browser);
# the other columns stay on one line with the full value in a tooltip.
CELL_SLOT = r"""
<q-td :props="props" :class="props.col.name === 'text' ? 'fb-cell-text' : 'fb-cell-meta'"
      :title="props.col.name === 'text' ? undefined : String(props.value ?? '')">
  <div v-if="props.col.name === 'text'" class="fb-clamp" style="--fb-lines: 3" title="Click to show all / fold"
       @click="$event.currentTarget.classList.toggle('fb-open')">{{ props.value }}</div>
  <template v-else>{{ props.value ?? '' }}</template>
</q-td>
"""


def _full(text: str) -> str:
    return text if len(text) <= FULL_TEXT_CHARS else text[:FULL_TEXT_CHARS] + " …"


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
    has_id = "record_id" in keys
    ordered = [k for k in _FIRST_COLUMNS if k in keys] + [
        k for k in keys if k not in _FIRST_COLUMNS and k != "record_id"
    ]
    columns = [{"name": "i", "label": "#", "field": "i", "align": "right"}]
    if has_id:
        columns.append({"name": "record_id", "label": "record_id", "field": "record_id", "align": "left"})
    columns += [
        {"name": "text", "label": "text", "field": "text", "align": "left"},
        {"name": "length", "label": "chars", "field": "length", "align": "right"},
    ]
    columns += [
        {"name": k, "label": k, "field": k, "align": "right" if k in ("start", "end", "chunk_index") else "left"}
        for k in ordered
    ]
    if has_id:
        ordered.insert(0, "record_id")
    rows = []
    for i, doc in enumerate(docs[:MAX_ROWS]):
        row: dict[str, Any] = {"i": i, "length": len(doc.text), "text": _full(doc.text)}
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
            "text": _full(h.document.text),
        }
        for h in hits[:MAX_ROWS]
    ]
    return columns, rows


def leg_names(rows: list[dict[str, Any]]) -> list[str]:
    """Every leg named by the rows, in first-seen order (dense before keyword before rerank...)."""
    names: list[str] = []
    for row in rows:
        for name in row.get("legs") or {}:
            if name not in names:
                names.append(name)
    return names


def hit_rows(hits: list[Hit]) -> list[dict[str, Any]]:
    """Hits as stage rows: the same shape retrieval nodes put in their details."""
    return [
        {
            "rank": h.rank,
            "record": str(
                h.document.metadata.get("parent_id")
                or h.document.metadata.get("record_id")
                or h.document.source
                or h.id
            ),
            "score": round(float(h.score), 4),
            "legs": h.legs,
            "explain": h.explain,
            "text": h.document.text,
        }
        for h in hits[:MAX_ROWS]
    ]


def stage_table(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Columns and rows of one retrieval stage: rank, record, score, then each leg's rank and score
    (blank where that leg did not find the hit), the arithmetic of the score, and the text."""
    # a leg that only repeats the row's own rank and score (a keyword retriever tagging its hits) adds nothing
    legs = [leg for leg in leg_names(rows) if not all(_same_as_row(row, leg) for row in rows)]
    columns = [
        {"name": "rank", "label": "#", "field": "rank", "align": "right"},
        {"name": "record", "label": "record", "field": "record", "align": "left"},
        {"name": "score", "label": "score", "field": "score", "align": "right"},
    ]
    for leg in legs:
        columns.append({"name": f"{leg} #", "label": f"{leg} #", "field": f"{leg} #", "align": "right"})
        columns.append({"name": f"{leg} score", "label": f"{leg} score", "field": f"{leg} score", "align": "right"})
    if any(row.get("explain") for row in rows):
        columns.append({"name": "explain", "label": "score =", "field": "explain", "align": "left"})
    columns.append({"name": "text", "label": "text", "field": "text", "align": "left"})
    table_rows = []
    for row in rows[:MAX_ROWS]:
        out: dict[str, Any] = {
            "i": row.get("rank"),
            "rank": row.get("rank"),
            "record": row.get("record"),
            "score": row.get("score"),
            "explain": row.get("explain", ""),
            "text": _full(str(row.get("text", ""))),
        }
        for leg in legs:
            found = (row.get("legs") or {}).get(leg)
            out[f"{leg} #"] = int(found["rank"]) if found else None
            out[f"{leg} score"] = round(float(found["score"]), 4) if found else None
        table_rows.append(out)
    return columns, table_rows


def _same_as_row(row: dict[str, Any], leg: str) -> bool:
    found = (row.get("legs") or {}).get(leg)
    if not found:
        return False
    return int(found["rank"]) == row.get("rank") and round(float(found["score"]), 4) == row.get("score")


def _is_stage_rows(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) and {"rank", "record", "score"} <= v.keys() for v in value)
    )


def stage_view(title: str, rows: list[dict[str, Any]]) -> None:
    _heading(title)
    documents_view(*stage_table(rows))


def hits_view(hits: list[Hit]) -> None:
    """Hits that went through fusion or reranking as a stage table (every leg's rank and score);
    plain retrieval hits as cards."""
    if any(h.legs for h in hits):
        documents_view(*stage_table(hit_rows(hits)))
    else:
        hit_cards(hits)


def _pre(text: str, prose: bool = False) -> None:
    """A block of text with its line breaks, wrapped to the panel (monospace unless ``prose``)."""
    ui.label(text).classes("w-full " + ("fb-prose" if prose else "fb-pre"))


def _heading(text: str) -> None:
    ui.label(text).classes("fb-out-heading")


def _short(value: Any) -> str | None:
    """``value`` as one short line, or None when it needs a block."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        return f"{value:.4g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return value if len(value) <= INLINE_MAX and "\n" not in value else None
    if isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        line = "[" + ", ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in value) + "]"
        return line if len(line) <= INLINE_MAX * 2 else None
    return None


def _inline(name: str, line: str) -> None:
    with ui.row().classes("w-full no-wrap gap-2 items-baseline fb-out-inline"):
        ui.label(name).classes("fb-out-key")
        ui.label(line).classes("fb-out-val")


def documents_view(columns: list[dict[str, Any]], rows: list[dict[str, Any]]) -> ui.table:
    table = ui.table(columns=columns, rows=rows, row_key="i").classes("w-full fb-out-table")
    table.props("dense flat bordered")
    table.add_slot("body-cell", CELL_SLOT)
    return table


def documents_heading(name: str, value: list[Document]) -> str:
    """``chunks: 481 documents · chars min ...``; a streamed output (flowbuilder.streaming) says it keeps a sample."""
    lengths = [len(d.text) for d in value]
    stats = f"chars min {min(lengths)} / avg {sum(lengths) // len(lengths)} / max {max(lengths)}"
    total = getattr(value, "total", None)
    if isinstance(total, int):
        return f"{name}: {total} documents, streamed: the first {len(value)} are kept · {stats} of those"
    more = f" (first {MAX_ROWS} shown)" if len(value) > MAX_ROWS else ""
    return f"{name}: {len(value)} documents · {stats}{more}"


def render_value(name: str, value: Any) -> None:
    """One output port's value."""
    if isinstance(value, list) and value and all(isinstance(v, Hit) for v in value):
        _heading(f"{name}: {len(value)} hits")
        hits_view(value)
    elif isinstance(value, list) and value and all(isinstance(v, Document) for v in value):
        columns, rows = documents_table(value)
        _heading(documents_heading(name, value))
        documents_view(columns, rows)
    elif isinstance(value, str):
        _heading(f"{name}: {len(value)} chars")
        _pre(value, prose=name in PROSE_PORTS)
    elif isinstance(value, list) and not value:
        _heading(f"{name}: empty list")
    elif isinstance(value, (dict, list, int, float, bool)):
        line = _short(value)
        if line is not None:
            _inline(name, line)
        else:
            _heading(name)
            _pre(json.dumps(value, indent=2, ensure_ascii=False, default=str)[:20000])
    else:
        _inline(name, f"{type(value).__name__} (a service for the node that uses it)")


def render_details(details: dict[str, Any], outputs: dict[str, Any] | None = None) -> None:
    """The node's inspect-only data (a text already shown as an output is not repeated)."""
    shown = [v for v in (outputs or {}).values() if isinstance(v, str)]
    for key, value in details.items():
        if isinstance(value, str) and len(value) > INLINE_MAX and value in shown:
            _inline(key, "the same text as the output above")
            continue
        if key == "sample_vector" and isinstance(value, list):
            head = ", ".join(f"{float(v):.4f}" for v in value[:8])
            _inline(f"sample vector ({len(value)} dims)", f"[{head}{', …' if len(value) > 8 else ''}]")
        elif key == "prompt" and isinstance(value, str):
            _heading(f"exact prompt ({len(value)} chars)")
            _pre(value)
        elif key == "messages" and isinstance(value, list):
            _heading(f"messages sent ({len(value)})")
            for message in value:
                msg = message if isinstance(message, ChatMessage) else _as_message(message)
                with ui.element("div").classes("w-full fb-msg"):
                    ui.label(msg.role).classes(f"fb-msg-role fb-role-{msg.role}")
                    if msg.content:
                        clamped_text(msg.content, 4, "fb-msg-text")
                    if msg.tool_calls:
                        _pre(json.dumps(msg.tool_calls, indent=2, ensure_ascii=False, default=str))
        elif key == "stages" and isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
            for leg, rows in value.items():
                if rows and _is_stage_rows(rows):
                    stage_view(f"{leg} hits ({len(rows)})", rows)
                else:
                    _inline(f"{leg} hits", "none")
        elif _is_stage_rows(value):
            stage_view(f"{key} ({len(value)})", value)
        elif key == "file_records" and isinstance(value, dict):
            files_view(value)
        elif key == "skipped" and isinstance(value, list):
            skipped_view(value)
        elif key == "tool_calls" and isinstance(value, list):
            _heading(f"tool calls ({len(value)})")
            _pre(json.dumps(value, indent=2, ensure_ascii=False, default=str))
        elif (line := _short(value)) is not None:
            _inline(key, line)
        else:
            _heading(key)
            if isinstance(value, str):
                _pre(value)
            else:
                _pre(json.dumps(value, indent=2, ensure_ascii=False, default=_jsonable)[:20000])


def files_view(counts: dict[str, Any]) -> None:
    """A folder load's files, each with how many records it gave."""
    _heading(f"files read ({len(counts)})")
    rows = [{"i": i, "file": name, "records": count} for i, (name, count) in enumerate(counts.items())]
    columns = [
        {"name": "file", "label": "file", "field": "file", "align": "left"},
        {"name": "records", "label": "records", "field": "records", "align": "right"},
    ]
    ui.table(columns=columns, rows=rows, row_key="i").props("dense flat bordered").classes("w-full fb-out-files")


def skipped_view(skipped: list[Any]) -> None:
    """The files a folder load could not read, each with why (nothing, when every file was read)."""
    if not skipped:
        _inline("skipped", "none: every file was read")
        return
    reasons = "\n".join(str(item.get("reason", item)) if isinstance(item, dict) else str(item) for item in skipped)
    message_box("warning", f"{len(skipped)} file(s) skipped", reasons, "fb-out-skipped")


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
        message_box("error", "This node failed", failure_text(result.node_id, result.error), "fb-out-error")
    for name, value in result.outputs.items():
        render_value(name, value)
    if result.details:
        ui.separator().classes("q-my-xs")
        render_details(result.details, result.outputs)
