"""The Flowbuilder page: palette | canvas | inspector, with run, chat and file actions.

``register_pages()`` defines the pages (call it once, before ``ui.run``); ``flowbuilder ui`` and the
tests both use it. Every browser tab gets its own :class:`EditorSession` (state, executor, bindings).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nicegui import background_tasks, ui

from flowbuilder.background import BackgroundIngest
from flowbuilder.errors import FlowbuilderError, InvalidConnectionError, ValidationIssue
from flowbuilder.examples import example_flow
from flowbuilder.executor import RunEvent
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import analyze, changed_since
from flowbuilder.registry import NodeRegistry
from flowbuilder.trust.secrets import redact
from flowbuilder.ui import compare_page, eval_page
from flowbuilder.ui.accounts import (
    account_for_issue,
    apply_account_keys,
    approve_button,
    bind_button,
    issue_text,
)
from flowbuilder.ui.canvas import FlowCanvas
from flowbuilder.ui.chat_panel import CHAT_CSS, CHAT_FOLLOW_JS, ChatPanel
from flowbuilder.ui.files import FileActions, restore_autosave
from flowbuilder.ui.fix_button import fix_button
from flowbuilder.ui.gallery import GALLERY_CSS
from flowbuilder.ui.inspector import Inspector
from flowbuilder.ui.jobs import ACTIVITY_CSS, ActivityBar, Job, drop_job, start_job
from flowbuilder.ui.outputs import render_result
from flowbuilder.ui.palette import Palette
from flowbuilder.ui.run_panel import RunController
from flowbuilder.ui.serve_panel import ServePanel
from flowbuilder.ui.session import PAGES, AppConfig, EditorSession
from flowbuilder.ui.state import by_node
from flowbuilder.ui.widgets import WIDGET_CSS, notify

log = logging.getLogger(__name__)

_config = AppConfig()
HEADER_PX = 52
ZOOM_HINT = (
    "Zoom in to see ports: that drag moved the card. Scroll up over the canvas (or press +), then drag from a "
    "port's dot to connect."
)

_PAGE_CSS = """
.fb-palette-item { border: 1px solid #e2e8f0; background: #fff; line-height: 1.25; overflow: hidden; min-width: 0; }
.fb-palette .q-scrollarea__content { width: 100%; padding: 0 8px 0 0; }
.fb-palette .q-expansion-item__container > .q-item { min-height: 30px; padding: 2px 4px; }
.fb-palette .q-expansion-item__content { padding: 0 0 6px 0; }
.fb-palette .nicegui-expansion-content { padding: 0; gap: 3px; }
.fb-palette-item:hover { border-color: #2563eb; background: #eff6ff; }
.fb-palette-head { gap: 4px; width: 100%; }
.fb-palette-desc { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: 11px; }
.fb-palette-name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; flex: 0 1 auto;
  font-size: 13px; }
.fb-palette-type { font-family: ui-monospace, monospace; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  min-width: 0; flex: 1 1 0; font-size: 10px; }
.fb-palette-tip { max-width: 280px; font-size: 12px; line-height: 1.35; }
.fb-side .q-tab-panel { padding: 8px; }
.fb-chat-reply .q-message-text { min-width: 0; }
.fb-chat-hits { border: 1px solid #e2e8f0; border-radius: 6px; background: #fff; margin-top: 6px; }
.fb-chat-hits .q-expansion-item__content { padding: 4px; }
.fb-run-log .q-scrollarea__content { white-space: pre-wrap; overflow-wrap: anywhere; width: 100%; }
.fb-overview-issue { border: 1px solid #fecaca; border-left: 3px solid #ef4444; border-radius: 4px; background: #fff;
  padding: 3px 8px; font-size: 12px; line-height: 1.35; }
.fb-overview-issue.cursor-pointer:hover { background: #fef2f2; }
.fb-overview-issue-where { font-weight: 600; color: #7f1d1d; }
.fb-overview-issue-text { color: #334155; overflow-wrap: anywhere; }
.body--dark .fb-palette-item, .body--dark .fb-overview-issue { background: #1e293b; border-color: #334155; }
.body--dark .fb-palette-item:hover { background: #1e3a8a; border-color: #60a5fa; }
.body--dark .fb-side { border-left-color: #334155 !important; }
.body--dark .fb-chat-hits, .body--dark .fb-hit, .body--dark .fb-msg { background: #1e293b; border-color: #334155; }
.body--dark .fb-overview-issue-text { color: #cbd5e1; } .body--dark .fb-overview-issue-where { color: #fca5a5; }
.fb-palette-col { background: #f8fafc; }
.body--dark .fb-palette-col { background: #0b1220; }
.body--dark .fb-box-info { background: #172554; color: #dbeafe; }
.body--dark .fb-box-warning { background: #451a03; color: #fde68a; }
"""


_SIDE_TABS = (
    ("tune", "Node", "Node details"),
    ("output", "Output", "What the selected node produced"),
    ("list_alt", "Run log", "Run log and validation issues"),
    ("chat", "Chat", "Chat with the flow"),
    ("cast", "Serve", "Serve the flow (MCP, HTTP)"),
)
# The palette and the side panel collapse to rails; the choice is kept per browser (localStorage), read in
# <head> so the page is drawn the right way at once. Unset, the side panel starts closed on narrow windows.
_PANEL_CSS = """
:root { --fb-side-w: clamp(340px, 30vw, 420px); }
.fb-side { width: var(--fb-side-w); min-width: var(--fb-side-w); }
.fb-side .q-tabs { min-width: 0; } .fb-side .q-tab { padding: 0 8px; min-width: 0; }
/* a narrow window keeps the header's links in view: "Run to selected" shows its icon (and its tooltip) only */
@media (max-width: 1400px) { .fb-run-to .q-btn__content > span { font-size: 0; }
  .fb-run-to .q-icon.on-left { margin-right: 0; } }
.fb-rail { display: none; width: 40px; min-width: 40px; background: #f8fafc; }
.fb-side-rail { border-left: 1px solid #e2e8f0; }
.fb-palette-rail { border-right: 1px solid #e2e8f0; }
html.fb-palette-closed .fb-palette-col, html.fb-side-closed .fb-side { display: none !important; }
html.fb-palette-closed .fb-palette-rail, html.fb-side-closed .fb-side-rail { display: flex; }
.body--dark .fb-rail { background: #0b1220; border-color: #334155; }
.fb-chat-reply, .fb-chat-reply .q-message-container, .fb-chat-reply .q-message-container > div,
.fb-chat-reply .q-message-text, .fb-chat-reply .q-message-text-content { min-width: 0; max-width: 100%; }
.fb-chat-reply .q-message-text-content { overflow-wrap: anywhere; }
.fb-chat-reply pre, .fb-chat-reply code { white-space: pre-wrap; overflow-wrap: anywhere; }
"""
PANELS_SCRIPT = """<script>
(function () {
  const key = (name) => "fb-panel-" + name;
  const read = (name, fallback) => {
    try { return localStorage.getItem(key(name)) || fallback; } catch (e) { return fallback; }
  };
  const cls = document.documentElement.classList;
  if (read("palette", "open") === "closed") cls.add("fb-palette-closed");
  if (read("side", window.innerWidth >= 1500 ? "open" : "closed") === "closed") cls.add("fb-side-closed");
  let auto = false;  // the side panel was opened by a selection (a drawer), not by the user
  window.fbPanel = function (name, action) {
    const closed = cls.contains("fb-" + name + "-closed");
    if (action === "auto-open") { if (closed) { auto = true; cls.remove("fb-" + name + "-closed"); } return; }
    if (action === "auto-close") { if (auto) { auto = false; cls.add("fb-" + name + "-closed"); } return; }
    const close = action === "toggle" ? !closed : action === "close";
    cls.toggle("fb-" + name + "-closed", close);
    auto = false;
    try { localStorage.setItem(key(name), close ? "closed" : "open"); } catch (e) { /* private mode */ }
  };
})();
</script>"""
# Imported notes are markdown from strangers: the page loads no image, media or frame from elsewhere
# (note images are shown as links, canvas.note_html).
NOTE_CSP = (
    '<meta http-equiv="Content-Security-Policy" '
    "content=\"img-src 'self' data: blob:; media-src 'self'; frame-src 'none'; object-src 'none'\">"
)


def initial_flow(config: AppConfig) -> tuple[Flow, Path | None]:
    """The flow a new tab opens: the one given on the command line, else the demo flow, else empty."""
    candidates = [config.initial_flow] if config.initial_flow else [example_flow()]
    for path in candidates:
        if path is not None and path.is_file():
            try:
                return load_flow(path), path
            except FlowbuilderError as exc:
                log.warning("%s", redact(str(exc)))
                if config.initial_flow:
                    raise
    return Flow(), None


def register_pages(
    workspace: Path | str | None = None,
    flow_path: Path | str | None = None,
    registry: NodeRegistry | None = None,
    allowed_paths: Sequence[str] = (),
    cluster: Any = None,
) -> None:
    """Define ``/`` (the builder), ``/compare`` and ``/eval``; ``allowed_paths``: ``--allow-path`` folders;
    ``cluster``: the Ray cluster of ``--ray`` (the builder's runs ingest on it)."""
    global _config
    _config = AppConfig(
        workspace=Path(workspace) if workspace else Path("flowbuilder-workspace"),
        initial_flow=Path(flow_path) if flow_path else None,
        registry=registry,
        allowed_paths=tuple(allowed_paths),
        cluster=cluster,
    )
    ui.page("/", title="Flowbuilder")(builder_page)
    compare_page.register(_config)
    eval_page.register(_config)


class BuilderPage:
    """Wires one tab's session to its widgets."""

    def __init__(self, session: EditorSession) -> None:
        self.session = session
        self.state = session.state
        self.selected: str | None = None
        self.client = ui.context.client  # for scripts sent from handlers whose element may be gone by then
        self.ran: dict[str, str] = {}  # node id -> its config key when it last ran (RunResult.config_keys)
        self.background_job: Job | None = None  # the background ingest's line in the activity bar
        self._connected = False  # the page's own connection has opened (see _start_background_once)
        self.laying_out = False
        self.layouts = 0  # layouts applied on this page (the canvas says which: data-layout="elk-2")
        ui.add_css(_PAGE_CSS + _PANEL_CSS + ACTIVITY_CSS + WIDGET_CSS + GALLERY_CSS + CHAT_CSS)
        ui.add_head_html(PANELS_SCRIPT + NOTE_CSP + CHAT_FOLLOW_JS)
        ui.dark_mode(None)  # None = follow the system setting (Quasar's "auto")
        ui.query(".nicegui-content").classes("p-0 gap-0")
        self._header()
        self.activity = ActivityBar(page="builder")  # every job of this builder (run, ingest, compare, eval, serve)
        with ui.row().classes("w-full no-wrap gap-0").style(f"height: calc(100vh - {HEADER_PX}px)"):
            self._palette_column()
            with ui.element("div").classes("h-full grow relative").style("min-width: 0"):
                self.canvas = FlowCanvas(self.state).classes("w-full h-full")
                self.canvas.describe = lambda issue: issue_text(self.session, issue)
                self.canvas_message = ui.label("").classes("fb-canvas-message").mark("canvas-message")
                self.canvas_message.set_visibility(False)
                self._message_timer: Any = None
            with ui.column().classes("h-full q-pa-xs gap-1 items-center fb-side-rail fb-rail"):
                for icon, tab_name, tip in _SIDE_TABS:
                    ui.button(icon=icon, on_click=lambda _, t=tab_name: self.open_side(t)).props(
                        "flat dense round"
                    ).classes(f"fb-side-open-{tab_name.split()[0].lower()}").tooltip(tip)
            with ui.column().classes("h-full gap-0 fb-side").style("border-left: 1px solid #e2e8f0"):
                panels = self._side_panel()
        self.tabs_by_name = {
            "Node": self.tab_node,
            "Output": self.tab_output,
            "Run log": self.tab_run,
            "Chat": self.tab_chat,
            "Serve": self.tab_serve,
        }
        # a tab shown by the page (issues after a run, a node's output) opens the panel if it was closed
        panels.on_value_change(lambda _: self.open_side(None, remember=False))
        panels.on_value_change(lambda e: self.serve.show() if e.value == "Serve" else None)
        self.runner.finished_listeners.append(self.after_run)
        self.chat.bound_listeners.append(self.refresh)
        self._events()
        self.refresh(fit=False)
        # after the first drawing, which then writes no autosave: the flow was just read from one (or from its
        # file), and serializing a big flow again costs as much as drawing it
        self.files = FileActions(session, self.after_load, self.update_title)
        self.show_output(None)
        ui.timer(0.5, self._background_status)
        # A GET of the page starts no work (issue 30: a link or an <img> on another site can send one): the
        # background ingest starts when the page's own connection opens, which needs the client id that only
        # this page holds, over a websocket whose Origin the HTTP guard checks.
        self.client.on_connect(self._start_background_once)

    def _start_background_once(self) -> None:
        if not self._connected:  # a reconnect (a dropped network) does not start it again
            self._connected = True
            self.start_background()

    # ---------------------------------------------------------------- layout
    def _palette_column(self) -> None:
        with ui.column().classes("h-full q-pa-xs gap-1 items-center fb-palette-rail fb-rail"):
            ui.button(icon="add_box", on_click=lambda: self.toggle_panel("palette")).props("flat dense round").classes(
                "fb-palette-open"
            ).tooltip("Show the nodes")
        with ui.column().classes("h-full q-pa-sm gap-1 fb-palette-col").style("width: 250px; min-width: 250px"):
            with ui.row().classes("w-full items-center no-wrap"):
                ui.label("Nodes").classes("text-subtitle2")
                ui.space()
                ui.button(icon="chevron_left", on_click=lambda: self.toggle_panel("palette")).props(
                    "flat dense round size=sm"
                ).classes("fb-palette-close").tooltip("Hide the nodes (more room for the canvas)")
            self.palette = Palette(self.state.registry, self.add_at_center)

    def _side_panel(self) -> ui.tab_panels:
        """Node, Output, Run log, Chat and Serve tabs: what the selected card is and did, and the flow's run."""
        with ui.row().classes("w-full items-center no-wrap gap-0"):
            with ui.tabs().classes("grow").props("dense") as tabs:
                self.tab_node = ui.tab("Node")
                self.tab_output = ui.tab("Output")
                self.tab_run = ui.tab("Run log")
                self.tab_chat = ui.tab("Chat")
                self.tab_serve = ui.tab("Serve")
            ui.button(icon="chevron_right", on_click=lambda: self.toggle_panel("side")).props(
                "flat dense round size=sm"
            ).classes("fb-side-close").tooltip("Hide this panel (the canvas takes the window)")
        with (
            # No slide animation: during it both panels are laid out side by side and the old one
            # shows at the left edge of this narrow column. No keep-alive either: a kept panel is
            # detached from the document while hidden, so a tooltip added to it then (the inspector
            # is redrawn on a click that also switches tabs) cannot find its target.
            ui.tab_panels(tabs, value=self.tab_node, animated=False, keep_alive=False)
            .classes("w-full grow")
            .style("overflow-y: auto") as panels
        ):
            self.panels = panels
            with ui.tab_panel(self.tab_node):
                self.inspector = Inspector(
                    self.session, self.after_inspector_edit, on_select=lambda n: self.select(n, "fbnode")
                )
            with ui.tab_panel(self.tab_output):
                self.output_box = ui.column().classes("w-full gap-2 fb-output")
            with ui.tab_panel(self.tab_run):
                self.issue_box = ui.column().classes("w-full gap-1 fb-issue-list")
                self.runner = RunController(self.session, self.canvas, self.show_issues)
            with ui.tab_panel(self.tab_chat).classes("fb-chat-tab"):
                self.chat = ChatPanel(self.session, self.runner)
            with ui.tab_panel(self.tab_serve):
                self.serve = ServePanel(self.session, is_shown=lambda: shown_tab(panels) == "Serve")
        return panels

    def _header(self) -> None:
        with (
            ui.header()
            .classes("items-center no-wrap gap-1 q-py-none q-px-sm")
            .style(f"background:#1e293b; height:{HEADER_PX}px")
        ):
            ui.label("Flowbuilder").classes("text-subtitle1 text-weight-bold q-mr-sm")
            self.name_input: ui.input = (
                ui.input(value=self.state.flow.name)
                .props("dense dark borderless input-class=text-white")
                .classes("fb-flow-name")
                .style("flex: 0 1 12rem; min-width: 6rem")
            )
            self.name_input.on("blur", lambda: self.rename_flow(str(self.name_input.value or "")))
            self.dirty_mark = ui.label("").classes("text-amber-4")
            self._file_buttons()
            self._edit_buttons()
            self._run_controls()
            ui.link("Compare chunking", "/compare").classes("text-white q-ml-sm whitespace-nowrap")
            ui.link("Evaluate", "/eval").classes("text-white q-ml-sm whitespace-nowrap").tooltip(
                "Evaluate a flow's answers on a question set"
            )

    def _file_buttons(self) -> None:
        with ui.button_group().props("flat"):
            ui.button(icon="note_add", on_click=lambda: self.files.new()).props("flat dense color=white").tooltip(
                "New flow (blank or from a template)"
            ).mark("new")
            ui.button(icon="folder_open", on_click=lambda: self.files.open_dialog()).props(
                "flat dense color=white"
            ).tooltip("Open")
            ui.button(icon="save", on_click=lambda: self.files.save()).props("flat dense color=white").tooltip(
                "Save (Ctrl+S)"
            )
            ui.button("Import", icon="upload_file", on_click=lambda: self.files.import_dialog()).props(
                "flat dense no-caps no-wrap color=white"
            ).mark("import")
            ui.button("Export", icon="download", on_click=lambda: self.files.export_dialog()).props(
                "flat dense no-caps no-wrap color=white"
            ).mark("export")

    def _edit_buttons(self) -> None:
        ui.separator().props("vertical dark")
        ui.button(icon="undo", on_click=lambda: self.shortcut("undo")).props("flat dense color=white").tooltip(
            "Undo (Ctrl+Z)"
        )
        ui.button(icon="redo", on_click=lambda: self.shortcut("redo")).props("flat dense color=white").tooltip(
            "Redo (Ctrl+Shift+Z)"
        )
        ui.button(icon="account_tree", on_click=self.auto_layout).props("flat dense color=white").mark(
            "layout"
        ).tooltip("Auto-layout")
        ui.button(icon="fit_screen", on_click=lambda: self.canvas.fit_view()).props("flat dense color=white").tooltip(
            "Fit view"
        )
        ui.button(icon="sticky_note_2", on_click=self.add_note).props("flat dense color=white").tooltip("Add a note")

    def _run_controls(self) -> None:
        """The run input, Run / Run to selected / Cancel, and the background ingest's count."""
        ui.space()
        self.run_input = (
            ui.input(placeholder="Run input (question or file path)")
            .props("dense dark outlined clearable")
            .classes("fb-run-input")
            .style("flex: 0 1 16rem; min-width: 9rem")
        )
        ui.button("Run", icon="play_arrow", on_click=lambda: self.run(None)).props(
            "unelevated dense no-caps no-wrap color=positive"
        ).classes("fb-run").mark("run")
        self.run_to_button = (
            ui.button("Run to selected", icon="skip_next", on_click=self.run_to_selected)
            .props("unelevated dense no-caps no-wrap color=primary")
            .classes("fb-run-to")
            .mark("run-to")
            .tooltip("Run the flow up to the selected node")
        )
        self.run_to_button.set_visibility(False)
        ui.button(icon="stop", on_click=lambda: self.runner.cancel()).props("unelevated dense color=negative").tooltip(
            "Cancel the run"
        ).classes("fb-cancel")
        with ui.row().classes("items-center no-wrap gap-0 fb-background") as self.background_box:
            self.background_label = (
                ui.label("")
                .classes("text-caption text-white q-ml-sm ellipsis")
                .style("max-width: 9rem")
                .mark("background-status")
                .tooltip("Embedding the flow's documents in the background, so the first question need not wait")
            )
            ui.button(icon="close", on_click=self.cancel_background).props(
                "flat dense round size=sm color=white"
            ).tooltip("Stop embedding in the background (what is done stays in the embedding cache)").mark(
                "background-cancel"
            )
        self.background_box.set_visibility(False)

    def toggle_panel(self, name: str) -> None:
        """Show or hide the palette or the side panel; the browser remembers the choice."""
        self.client.run_javascript(f"fbPanel('{name}', 'toggle')")

    def open_side(self, tab: str | None, remember: bool = True) -> None:
        """Open the side panel (on ``tab``). Opened by the page (``remember=False``, e.g. on selecting a
        node), it is a drawer: a click on the empty canvas closes it again."""
        if tab is not None:
            self.panels.set_value(self.tabs_by_name[tab])
        self.client.run_javascript(f"fbPanel('side', '{'open' if remember else 'auto-open'}')")

    def _events(self) -> None:
        c = self.canvas
        c.on("connect", lambda e: self.connect(e.args))
        c.on("nodes_moved", lambda e: self.moved(e.args))
        c.on("node_click", lambda e: self.select(e.args.get("id"), e.args.get("kind")))
        c.on("pane_click", lambda _: self.pane_clicked())
        c.on("shortcut", lambda e: self.shortcut(e.args.get("name", ""), e.args))
        c.on("drop_node", lambda e: self.add_node(e.args["type"], e.args["x"], e.args["y"]))
        c.on("note_changed", lambda e: self.note_changed(e.args))
        c.on("note_resized", lambda e: self.note_resized(e.args))
        c.on("ready", self.refine_layout)  # a flow laid out before the page was there (first paint)
        c.on("hint", lambda e: self.hint(str(e.args.get("kind", ""))))

    # ---------------------------------------------------------------- drawing
    def issues(self) -> list[ValidationIssue]:
        apply_account_keys(self.session)
        return self.state.issues(self.session.resolver, self.session.base_dir)

    def mark_changed(self) -> None:
        """Nodes edited since the last run, and everything downstream of them, lose their run badge
        ("✓ 1000 chunks" would be a claim about a flow that no longer exists) for "changed since last run"."""
        if not self.ran:
            return
        flow = self.state.flow
        # a node's config key covers everything upstream of it, so its dependants are included
        graph = analyze(flow, self.state.registry, base_dir=self.session.base_dir, flow_file=self.session.path)
        changed = changed_since(graph, self.ran) | {n for n in self.ran if flow.find_node(n) is None}
        for node_id in changed:
            badge = self.canvas.status.get(node_id)
            if badge and badge.get("status") not in (None, "idle", "changed"):
                badge.update(status="changed", summary="changed since last run", error=None, duration=None)
                badge.update(progress=None)
            self.ran.pop(node_id, None)

    def refresh(self, fit: bool = False) -> None:
        """Redraw the canvas from the state (after a structural edit)."""
        self.mark_changed()
        found = self.issues()  # one check of the flow serves the cards, the run log and the overview
        issues = by_node(found)
        self.canvas.base_dir = self.session.base_dir
        self.canvas.render(issues)
        self._issue_list(issues)
        self.update_title()
        if self.inspector.node_id is None:
            self.inspector.show(None, found)  # the flow overview lists the current issues
        if fit:
            self.canvas.fit_view()

    def _issue_list(self, issues: dict[str, list[ValidationIssue]]) -> None:
        self.issue_box.clear()
        with self.issue_box:
            count = sum(len(v) for v in issues.values())
            if not count:
                ui.label("No validation issues.").classes("text-positive text-sm fb-issue-count")
                return
            ui.label(f"{count} validation issue(s)").classes("text-negative text-sm fb-issue-count")
            for node_id, items in issues.items():
                for issue in items:
                    with ui.row().classes("w-full no-wrap items-center gap-1"):
                        spec = self.state.flow.find_node(node_id)
                        where = (spec.label if spec else node_id) + (f" · {issue.port}" if issue.port else "")
                        ui.label(f"{where}: {issue_text(self.session, issue)}").classes("text-xs").on(
                            "click", lambda _, n=node_id: self.select(n, "fbnode")
                        )
                        account = account_for_issue(self.session, issue)
                        if account is not None:
                            bind_button(self.session, account, self.refresh)
                        approve_button(self.session, issue, self.refresh, "log")
                        fix_button(self.session, issue, self.refresh, "log")

    def update_title(self) -> None:
        self.dirty_mark.set_text("●" if self.state.dirty else "")
        if self.name_input.value != self.state.flow.name:
            self.name_input.value = self.state.flow.name
        if hasattr(self, "files") and not self.client.is_deleted:  # a closed tab's late work is not an edit
            self.files.autosave()

    def show_issues(self, issues: list[ValidationIssue]) -> None:
        grouped: dict[str, list[ValidationIssue]] = {}
        for issue in issues:
            if issue.node_id:
                grouped.setdefault(issue.node_id, []).append(issue)
        self.canvas.render(grouped)
        self._issue_list(grouped)
        self.panels.set_value(self.tab_run)

    # ---------------------------------------------------------------- edits
    def add_node(self, type_name: str, x: float, y: float) -> str | None:
        try:
            node_id = self.state.add_node(type_name, x, y)
        except FlowbuilderError as exc:
            notify(str(exc), type="negative")
            return None
        self.refresh()
        self.select(node_id, "fbnode")
        return node_id

    async def add_at_center(self, type_name: str) -> None:
        x, y = 0.0, 0.0
        try:
            centre = await self.canvas.run_method("centerPosition", timeout=1)
            x, y = float(centre["x"]) - 115, float(centre["y"]) - 40
        except Exception:  # no browser (tests) or a slow socket: place it right of the others
            positions = [self.state.flow.position(n.id) for n in self.state.flow.nodes]
            if positions:
                x = max(p.x for p in positions) + 280
                y = min(p.y for p in positions)
        self.add_node(type_name, x, y)

    def connect(self, args: dict[str, Any]) -> None:
        try:
            self.state.connect(args["source"], args["sourceHandle"], args["target"], args["targetHandle"])
        except InvalidConnectionError as exc:
            self.canvas_says(str(exc))
            return
        self.refresh()

    def canvas_says(self, text: str, seconds: float = 6.0, kind: str = "refusal") -> None:
        """One message line over the canvas; the next one replaces it (no toasts piling up). ``kind``: a
        ``refusal`` (red) or a ``hint`` (blue)."""
        self.canvas_message.classes(replace=f"fb-canvas-message fb-canvas-{kind}")
        self.canvas_message.set_text(text)
        self.canvas_message.set_visibility(True)
        if self._message_timer is not None:
            self._message_timer.cancel()
        self._message_timer = ui.timer(seconds, lambda: self.canvas_message.set_visibility(False), once=True)

    def hint(self, kind: str) -> None:
        """A tip for what the user just tried (the canvas says when): a card dragged from its edge at chip zoom."""
        if kind == "ports":
            self.canvas_says(ZOOM_HINT, kind="hint")

    def moved(self, items: list[dict[str, Any]]) -> None:
        self.state.move({i["id"]: (float(i["x"]), float(i["y"])) for i in items})
        # Positions are already drawn by the browser; keep the props in step silently.
        for node in self.canvas.props["nodes"]:
            for item in items:
                if node["id"] == item["id"]:
                    node["position"] = {"x": item["x"], "y": item["y"]}
        self.update_title()

    def note_changed(self, args: dict[str, Any]) -> None:
        self.state.set_note_text(str(args.get("id")), str(args.get("text", "")))
        self.canvas.patch_note(str(args.get("id")), str(args.get("text", "")))
        self.update_title()

    def note_resized(self, args: dict[str, Any]) -> None:
        note_id = str(args.get("id"))
        self.state.resize_note(note_id, float(args.get("width", 220)), float(args.get("height", 120)))
        for node in self.canvas.props["nodes"]:
            if node["id"] == note_id:
                note = next((n for n in self.state.flow.notes if n.id == note_id), None)
                if note is not None:
                    node["style"] = {"width": f"{note.width}px", "height": f"{note.height}px"}
        self.update_title()

    async def add_note(self) -> None:
        try:
            centre = await self.canvas.run_method("centerPosition", timeout=1)
            x, y = float(centre["x"]), float(centre["y"])
        except Exception:
            x, y = 0.0, -200.0
        self.state.add_note("", *self.state.free_spot(x, y, 220, 120))
        self.refresh()

    async def auto_layout(self) -> bool:
        """Lay the flow out with ELK in the browser (cards measured there); the Python layout without one.
        False when nothing was laid out (the tab closed, or the user edited meanwhile)."""
        before = self.state.flow.model_dump_json()
        result = await self.canvas.layered_layout(self.state.layout_request())
        if self.client.is_deleted:
            return False  # the tab was closed meanwhile: nothing to draw; its autosave must not overwrite a newer tab's
        if self.state.flow.model_dump_json() != before:
            return False  # the user edited meanwhile: their edit wins
        how = "elk" if result is not None and self.state.apply_layout(result) else "python"
        if how == "python":
            self.state.auto_layout()
            self.state.refine_layout = False
        self.layouts += 1
        self.canvas.props["data-layout"] = f"{how}-{self.layouts}"  # on the canvas element: tests wait for it
        self.refresh(fit=True)
        return True

    async def refine_layout(self) -> None:
        """After the Python layout of an import or an opened flow, the browser's layered layout."""
        if not self.state.refine_layout or self.laying_out:
            return
        self.laying_out = True  # (the flag stays up until a layout is applied: the request reads it)
        dirty = self.state.dirty  # the layout of an opened flow is no edit of the user's: nothing to ask about
        try:
            with self.client:
                if await self.auto_layout():
                    self.state.dirty = dirty
                    self.update_title()
        finally:
            self.laying_out = False
            self.state.refine_layout = False

    def rename_flow(self, name: str) -> None:
        if name and name != self.state.flow.name:
            self.state._snapshot(("flow-name",))
            self.state.flow.name = name
            self.update_title()
            if self.inspector.node_id is None:
                self.inspector.show(None)

    def shortcut(self, name: str, args: dict[str, Any] | None = None) -> None:
        args = args or {}
        if name == "undo":
            if self.state.undo():
                self.refresh()
                self.inspector.show(self.selected if self.selected in self.state.flow.node_ids() else None)
        elif name == "redo":
            if self.state.redo():
                self.refresh()
                self.inspector.show(self.selected if self.selected in self.state.flow.node_ids() else None)
        elif name == "copy":
            count = self.state.copy(args.get("nodes", []))
            if count:
                notify(f"Copied {count} item(s)")
        elif name == "paste":
            new_ids = self.state.paste()
            if new_ids:
                self.refresh()
                self.canvas.run_method("selectNodes", new_ids)
        elif name == "save":
            self.files.save()
        elif name == "run":
            ui.timer(0, lambda: self.run(None), once=True)
        elif name == "help":
            shortcuts_dialog()
        elif name == "delete":
            changed = False
            if args.get("edges"):
                changed |= bool(self.state.disconnect(args["edges"]))
            if args.get("nodes"):
                changed |= bool(self.state.remove(args["nodes"]))
            if changed:
                if self.selected not in self.state.flow.node_ids():
                    self.select(None, None)
                self.refresh()

    def after_inspector_edit(self, structural: bool) -> None:
        self.refresh()

    # ---------------------------------------------------------------- selection / output
    def pane_clicked(self) -> None:
        self.select(None, None)
        self.client.run_javascript("fbPanel('side', 'auto-close')")  # a drawer opened by a selection closes again
        self.canvas.restore_view()  # and the canvas goes back to where it was before the drawer moved it

    def select(self, node_id: str | None, kind: str | None) -> None:
        if kind == "fbnote":
            return
        self.selected = node_id if node_id in self.state.flow.node_ids() else None
        self.session.selected = self.selected
        self.run_to_button.set_visibility(self.selected is not None)  # it needs a selection; room for the rest
        self.inspector.show(self.selected)
        self.show_output(self.selected)
        if self.selected and self.selected in self.session.results:
            self.panels.set_value(self.tab_output)
        elif self.selected:
            self.panels.set_value(self.tab_node)
        if self.selected:
            self.open_side(None, remember=False)
            self.canvas.keep_in_view(self.selected)  # the drawer covers no part of the card it is about

    def show_output(self, node_id: str | None) -> None:
        self.output_box.clear()
        with self.output_box:
            if node_id is None:
                ui.label("Click a node after a run to see what it produced.").classes("text-grey-7 text-sm")
                return
            spec = self.state.flow.find_node(node_id)
            render_result(self.session.results.get(node_id), spec.label if spec else node_id)

    # ---------------------------------------------------------------- runs
    async def run(self, to: str | None) -> None:
        self.refresh()
        await self.runner.start(to=to, text=str(self.run_input.value or "") or None, file_input=True)

    async def run_to_selected(self) -> None:
        if not self.selected:
            notify("Select a node first (click it).", type="warning")
            return
        await self.run(self.selected)

    def after_run(self, result: Any) -> None:
        if result is not None and not self.runner.stood_in:  # a keyword stand-in's keys are not the flow's own
            self.ran.update(result.config_keys)
        if self.selected:
            self.show_output(self.selected)

    # ---------------------------------------------------------------- background ingest
    def start_background(self) -> None:
        """Embed a local flow's documents now, so the first question does not wait for the ingest."""
        previous = self.session.background
        if previous is not None:
            previous.cancel()
        if self.background_job is not None and self.background_job.running:
            self.background_job.finish("stopped: another flow was opened")
        apply_account_keys(self.session)
        # the activity bar lists it like any job: stage, time left, Cancel (which goes when it ends)
        activity = start_job("ingest", f"Background ingest · {self.state.flow.name or 'flow'}")

        def on_event(event: RunEvent) -> None:
            self.runner._events.append(event)
            activity.event(event, self.runner.name)

        job = BackgroundIngest(
            self.session.executor,
            self.state.flow,
            base_dir=self.session.base_dir,
            on_event=on_event,
            session_id=self.session.session_id,
            flow_file=self.session.path,
        )
        started = job.start()
        self.session.background = job if started else None
        if started:
            activity.cancel = job.cancel
            self.background_job = activity
            # the bar is shared by every page: the line ends with the ingest, even when this page is gone
            threading.Thread(target=_end_with, args=(job, activity), name="background-activity", daemon=True).start()
        else:
            drop_job(activity)  # nothing to embed: never shown
            self.background_job = None

    def cancel_background(self) -> None:
        if self.session.background is not None:
            self.session.background.cancel()
            notify("Background embedding stopped; a run continues from the embedding cache.")

    def _background_status(self) -> None:
        job = self.session.background
        if job is None:
            return
        if job.running:
            self.background_label.text = f"Embedding {job.done}/{job.total}" if job.total else "Embedding…"
            self.background_box.set_visibility(True)
            return
        self.background_box.set_visibility(False)
        self.session.background = None
        self.runner.drain()  # its last events first: the badges are final when the log says it ended
        cancelled = job.cancel_event.is_set() or any(r.cancelled for r in job.results)
        if job.error:
            self.runner.log.push(redact(f"Background ingest stopped: {job.error}"))
        elif job.results and not cancelled:
            self.runner.log.push(f"Background ingest done in {job.seconds:.1f} s: ask away.")
        if self.background_job is not None and self.background_job.running:
            self.background_job.finish(_outcome(job))

    def after_load(self) -> None:
        self.start_background()
        self.selected = None
        self.run_to_button.set_visibility(False)
        self.ran = {}
        self.canvas.status = {}
        self.inspector.show(None)
        self.show_output(None)
        self.chat.refresh_hint()
        self.serve.refresh()  # the Serve tab describes the flow that is open now
        self.refresh(fit=True)
        if self.state.refine_layout:
            background_tasks.create(self.refine_layout(), name="layout")


def shown_tab(panels: ui.tab_panels) -> object:
    """The name of the tab on screen (the panels' value is a ``ui.tab`` once set from Python, else its name)."""
    value = panels.value
    return value.props["name"] if isinstance(value, (ui.tab, ui.tab_panel)) else value


def _outcome(job: BackgroundIngest) -> str:
    cancelled = job.cancel_event.is_set() or any(r.cancelled for r in job.results)
    return "cancelled" if cancelled else "failed" if job.error else f"done in {job.seconds:.1f} s"


def _end_with(job: BackgroundIngest, activity: Job) -> None:
    job.wait()
    if activity.running:
        activity.finish(_outcome(job))


SHORTCUTS = (
    ("Ctrl+S", "Save the flow"),
    ("Ctrl+Enter", "Run the flow"),
    ("Ctrl+Z / Ctrl+Shift+Z", "Undo / redo"),
    ("Ctrl+C / Ctrl+V", "Copy / paste the selected nodes"),
    ("Ctrl+A", "Select everything"),
    ("Delete / Backspace", "Delete the selection"),
    ("Shift+drag", "Select with a rectangle"),
    ("Double-click a note", "Edit it (markdown)"),
    ("?", "This list"),
)


def shortcuts_dialog() -> None:
    with ui.dialog() as dialog, ui.card().classes("w-96 fb-shortcuts"):
        ui.label("Keyboard shortcuts").classes("text-h6")
        with ui.grid(columns=2).classes("gap-x-4 gap-y-1"):
            for keys, what in SHORTCUTS:
                ui.label(keys).classes("text-weight-medium text-sm")
                ui.label(what).classes("text-sm")
        ui.button("Close", on_click=dialog.close).props("flat")
    dialog.open()


def builder_page() -> None:
    restored = restore_autosave(_config.workspace, _config.initial_flow)
    flow, path = (restored[0], restored[1]) if restored else initial_flow(_config)
    session = EditorSession.create(flow, _config, path)
    session.state.dirty = bool(restored and restored[2])
    if session.state.needs_layout():  # cards would overlap (an imported n8n flow): lay it out, readable
        session.state.auto_layout()
    page = BuilderPage(session)
    client = ui.context.client
    PAGES[client.id] = page

    def closed() -> None:
        page.runner.cancel()  # a closed tab stops its run instead of burning CPU
        if page.session.background is not None:  # and its background ingest, which holds the store for others
            page.session.background.cancel()  # (what it embedded stays in the cache: the next open resumes)
        PAGES.pop(client.id, None)

    client.on_delete(closed)
