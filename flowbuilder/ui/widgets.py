"""Small building blocks shared by the output inspector and the chat panel: clamped text that expands on
click, one card per retrieved hit, and readable warning/error boxes. Their CSS is :data:`WIDGET_CSS`
(added once per page by the builder)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nicegui import events, ui

from flowbuilder.data import Hit

# Enough for any chunk a user wants to read in full; longer texts are cut so a table of 200 rows stays small.
FULL_TEXT_CHARS = 4000

# Toggled in the browser: expanding a text costs no round trip and survives nothing but a re-render.
TOGGLE_JS = "(e) => e.currentTarget.classList.toggle('fb-open')"

WIDGET_CSS = """
.q-notifications__list--top { top: 48px; }
.fb-upload-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; opacity: 0;
  pointer-events: none; }
.fb-clamp { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: var(--fb-lines, 3);
  overflow: hidden; white-space: pre-wrap; overflow-wrap: anywhere; cursor: pointer; }
.fb-clamp.fb-open { display: block; -webkit-line-clamp: unset; }
.fb-clamp:not(.fb-open):hover { background: #f1f5f9; }
.fb-hit { border: 1px solid #e2e8f0; border-radius: 6px; background: #fff; padding: 4px 8px 6px; }
.fb-hit-head { display: flex; align-items: center; gap: 6px; font-size: 12px; line-height: 18px; min-width: 0; }
.fb-hit-rank { flex: none; font-weight: 700; color: #334155; }
.fb-hit-score { flex: none; font-size: 11px; font-weight: 600; padding: 0 6px; border-radius: 9px;
  background: #fef3c7; color: #92400e; font-variant-numeric: tabular-nums; }
.fb-hit-id { font-weight: 600; color: #0f172a; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.fb-hit-where { color: #64748b; font-size: 11px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
  min-width: 0; flex: 1; text-align: right; }
.fb-hit-text { font-size: 12px; line-height: 1.35; color: #1e293b; margin-top: 2px; }
.fb-box { display: flex; gap: 8px; align-items: flex-start; border-radius: 6px; padding: 6px 10px; font-size: 12.5px;
  line-height: 1.4; border: 1px solid; overflow-wrap: anywhere; }
.fb-box .q-icon { flex: none; margin-top: 1px; }
.fb-box-title { font-weight: 600; }
.fb-box-text { white-space: pre-wrap; }
.fb-box-warning { background: #fffbeb; border-color: #fcd34d; color: #78350f; }
.fb-box-error { background: #fef2f2; border-color: #fca5a5; color: #7f1d1d; }
.fb-box-info { background: #eff6ff; border-color: #93c5fd; color: #1e3a8a; }
.fb-out-heading { font-weight: 600; font-size: 13px; color: #0f172a; margin-top: 4px; }
.fb-out-inline { font-size: 12.5px; line-height: 1.35; min-width: 0; }
.fb-out-key { flex: none; font-weight: 600; color: #0f172a; }
.fb-out-val { color: #334155; overflow-wrap: anywhere; min-width: 0; font-family: ui-monospace, monospace;
  font-size: 12px; }
.fb-pre, .fb-prose { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 320px; overflow-y: auto;
  background: #f8fafc; border: 1px solid #e2e8f0; border-radius: 6px; padding: 6px 8px; color: #1e293b; }
.fb-pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11.5px; line-height: 1.4; }
.fb-prose { font-size: 13px; line-height: 1.45; }
.fb-out-table { max-height: 480px; }
.fb-out-table thead tr th { position: sticky; top: 0; z-index: 1; background: #f8fafc; font-weight: 600; }
.fb-out-table .q-table th, .fb-out-table .q-table td { padding: 3px 6px; height: auto; font-size: 11.5px;
  vertical-align: top; line-height: 1.35; }
.fb-out-table .q-table td.fb-cell-text { min-width: 220px; max-width: 260px; width: 260px; white-space: normal; }
.fb-out-table .q-table td.fb-cell-meta { max-width: 150px; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; font-variant-numeric: tabular-nums; }
.fb-msg { border: 1px solid #e2e8f0; border-radius: 6px; padding: 4px 8px 6px; background: #fff; }
.fb-msg-role { font-size: 11px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; color: #475569; }
.fb-role-assistant { color: #15803d; } .fb-role-tool { color: #b45309; } .fb-role-system { color: #7c3aed; }
.fb-msg-text { font-size: 12.5px; line-height: 1.4; }
"""


NOTIFY_POSITION = "top-right"
"""Where toasts go: under the header at the right, never over a dialog's buttons (dialogs are centred with their
buttons at the bottom) nor over the activity bar (bottom centre)."""


def notify(message: object, **options: object) -> None:
    """``ui.notify`` at :data:`NOTIFY_POSITION` unless told otherwise."""
    options.setdefault("position", NOTIFY_POSITION)
    ui.notify(message, **options)  # type: ignore[arg-type]


def upload_button(
    label: str, on_upload: Callable[[events.UploadEventArguments], Any], accept: str, classes: str, max_bytes: int
) -> ui.button:
    """A button that opens the file dialog (Quasar's upload box, with its "0.0B / 0.00%" header, stays out of
    sight; it takes the file and calls ``on_upload``). ``classes`` go on the box (tests find its file input)."""
    box = ui.upload(on_upload=on_upload, auto_upload=True, max_file_size=max_bytes).props(f'accept="{accept}"')
    box.classes(f"fb-upload-hidden {classes}")
    button = ui.button(label, icon="upload_file").props("outline no-caps")
    button.on("click", js_handler=f"() => getElement({box.id}).$refs.qRef.pickFiles()")  # in the click: no blocker
    return button


def clamped_text(text: str, lines: int = 3, classes: str = "") -> ui.label:
    """``text`` shown on at most ``lines`` lines (ellipsis); a click shows all of it, another folds it."""
    shown = text if len(text) <= FULL_TEXT_CHARS else text[:FULL_TEXT_CHARS] + " …"
    label = ui.label(shown).classes(f"fb-clamp {classes}".strip()).style(f"--fb-lines: {lines}")
    label.props["title"] = "Click to show all / fold"
    label.on("click", js_handler=TOGGLE_JS)
    return label


def hit_where(hit: Hit) -> tuple[str, str]:
    """(record id, "source · chunk N") of a hit, for its card head."""
    meta = hit.document.metadata
    record = meta.get("record_id") or ", ".join(map(str, meta.get("record_ids") or [])) or "?"
    where = [str(hit.document.source or meta.get("source") or "")]
    if meta.get("chunk_index") is not None:
        where.append(f"chunk {meta['chunk_index']}")
    return str(record), " · ".join(w for w in where if w)


def hit_card(hit: Hit, lines: int = 3) -> ui.element:
    """One retrieved chunk: rank, score badge, record id, source and chunk index, then the clamped text."""
    record, where = hit_where(hit)
    with ui.element("div").classes("fb-hit w-full") as card:
        with ui.element("div").classes("fb-hit-head"):
            ui.label(f"#{hit.rank}").classes("fb-hit-rank")
            _titled(ui.label(f"{hit.score:.3f}").classes("fb-hit-score"), "similarity score")
            _titled(ui.label(record).classes("fb-hit-id"), record)
            _titled(ui.label(where).classes("fb-hit-where"), where)
        clamped_text(hit.document.text, lines, "fb-hit-text")
    return card


def hit_cards(hits: list[Hit], lines: int = 3) -> None:
    with ui.column().classes("w-full gap-1 fb-hits"):
        for hit in hits:
            hit_card(hit, lines)


def message_box(kind: str, title: str, text: str = "", classes: str = "") -> ui.element:
    """A readable notice: ``kind`` is "warning" or "error"; ``text`` keeps its line breaks."""
    icon = {"warning": "warning_amber", "error": "error_outline"}.get(kind, "info")
    with ui.element("div").classes(f"fb-box fb-box-{kind} w-full {classes}".strip()) as box:
        ui.icon(icon, size="18px")
        with ui.column().classes("gap-0 min-w-0"):
            ui.label(title).classes("fb-box-title")
            if text:
                ui.label(text).classes("fb-box-text")
    return box


def _titled(element: ui.element, title: str) -> ui.element:
    """A native tooltip (the ``title`` attribute): cheap for many small elements."""
    element.props["title"] = title
    return element


def failure_text(node_id: str, error: str) -> str:
    """The error without its "Node 'x' (type) failed:" lead, which the warning's title already says."""
    lead = f"Node '{node_id}'"
    if error.startswith(lead) and "failed:" in error:
        return ui_words(error.split("failed:", 1)[1].strip())
    return ui_words(error)


# Messages from the core and the nodes are written for the command line; the page names its own controls.
_UI_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"bind a key with --cred \S+=\.\.\.(?: \(or set [A-Z0-9_ /]+\))?", re.I), "bind a key (Bind a key)"),
    (re.compile(r"with --cred \S+=\.\.\. or set ([A-Z0-9_]+)"), r"with the Bind a key button (or set \1)"),
    (re.compile(r"pass --cred \S+=VALUE \(or =env:VAR\), "), "use the Bind a key button, "),
    (re.compile(r"run (?:the flow )?with --input (?:\S+=PATH|\"[^\"]*\")"), "type it into the Run input box"),
    (re.compile(r"\(--input [^)]*\)"), "(the Run input box)"),
    (re.compile(r"\(--local\)"), "(Run offline)"),
)


def ui_words(text: str) -> str:
    """``text`` with command-line advice ("--cred api_key=...", "--input NODE=PATH") put in UI terms."""
    for pattern, replacement in _UI_WORDS:
        text = pattern.sub(replacement, text)
    return text
