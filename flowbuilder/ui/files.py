"""New / open / save in the workspace folder, import by upload (n8n, LangFlow, native) with the
import report and a credentials dialog for unbound slots, and export by download."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nicegui import events, run, ui

from flowbuilder.errors import FlowbuilderError
from flowbuilder.examples import flows_dir
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow, save_flow
from flowbuilder.trust.scopes import ID_KEY, new_flow_id
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.accounts import Account, account_bound, bind_button, missing_accounts
from flowbuilder.ui.formats_bridge import (
    EXPORT_FORMATS,
    UPLOAD_SUFFIXES,
    export_text,
    import_data,
    parse_upload,
    ui_report_text,
)
from flowbuilder.ui.gallery import template_gallery
from flowbuilder.ui.session import EditorSession
from flowbuilder.ui.widgets import notify

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
AUTOSAVE_NAME = ".autosave.flow.json"
WORK_TIMEOUT_S = 60.0
"""How long an import or export may take before the page gives up on it (it runs in a worker thread)."""
log = logging.getLogger(__name__)


def restore_autosave(workspace: Path, wanted: Path | None) -> tuple[Flow, Path | None, bool] | None:
    """The autosaved flow, its file and dirty flag, when it belongs to what this tab would open: any
    flow when none was named on the command line, else the same file."""
    try:
        data = json.loads((workspace / AUTOSAVE_NAME).read_text(encoding="utf-8"))
        flow = Flow.model_validate(data["flow"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = Path(data["path"]) if data.get("path") else None
    if wanted is not None and (path is None or path.resolve() != wanted.resolve()):
        return None
    return flow, path, bool(data.get("dirty"))


def safe_file_name(name: str, suffix: str = ".json") -> str:
    stem = _SAFE_NAME.sub("_", name).strip(" ._") or "flow"
    return stem if stem.endswith(suffix) else stem + suffix


class FileActions:
    """Header buttons' handlers. ``on_loaded`` redraws everything after the flow was replaced."""

    def __init__(self, session: EditorSession, on_loaded: Callable[[], None], on_saved: Callable[[], None]) -> None:
        self.session = session
        self.on_loaded = on_loaded
        self.on_saved = on_saved

    # ---------------------------------------------------------------- native files
    def new(self) -> None:
        """The template gallery: a blank flow or an example (asking first if edits would be lost)."""
        template_gallery(
            lambda: self.confirm_discard(self.blank), lambda path: self.confirm_discard(lambda: self.open_path(path))
        )

    def blank(self) -> None:
        self.session.state.load(Flow(meta={ID_KEY: new_flow_id()}))
        self.session.path = None
        self.session.results = {}
        self.on_loaded()

    def confirm_discard(self, action: Callable[[], object]) -> None:
        """Run ``action`` (which replaces the flow) now, or after the user agreed to lose unsaved edits."""
        if not self.session.state.dirty:
            action()
            return
        with ui.dialog() as dialog, ui.card().classes("w-[26rem] fb-confirm-discard"):
            ui.label("Discard unsaved changes?").classes("text-h6")
            ui.label(
                f"“{self.session.state.flow.name}” has edits that are not saved; what comes next replaces it."
            ).classes("text-sm")
            with ui.row():
                if self._workspace_target() is not None:  # saved in place: one click keeps the edits

                    def save_then() -> None:
                        dialog.close()
                        self.save()
                        if not self.session.state.dirty:
                            action()

                    ui.button("Save, then go on", on_click=save_then).props("unelevated no-caps").mark("save-first")
                ui.button("Discard changes", on_click=lambda: (dialog.close(), action())).props(
                    "unelevated color=negative no-caps"
                ).mark("discard")
                ui.button("Keep editing", on_click=dialog.close).props("flat no-caps").mark("keep-editing")
        dialog.open()

    # ---------------------------------------------------------------- autosave
    @property
    def autosave_path(self) -> Path:
        return self.session.workspace / AUTOSAVE_NAME

    def autosave(self) -> None:
        """Keep the open flow (and which file it is) in the workspace, so a reload gets it back."""
        data = {
            "path": str(self.session.path) if self.session.path else None,
            "dirty": self.session.state.dirty,
            "flow": self.session.state.flow.model_dump(mode="json"),
        }
        try:
            self.session.workspace.mkdir(parents=True, exist_ok=True)
            tmp = self.autosave_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            tmp.replace(self.autosave_path)
        except OSError as exc:  # a read-only workspace must not break editing
            log.warning("Autosave to %s failed: %s", self.autosave_path, exc)

    def open_path(self, path: Path) -> bool:
        try:
            flow = load_flow(path)
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="negative", multi_line=True)
            return False
        self.session.state.load(flow)
        self.session.path = path
        self.session.results = {}
        if self.session.state.needs_layout():
            self.session.state.auto_layout()
            self.session.state.dirty = False  # our layout, not the user's edit (undo keeps the file's)
        self.on_loaded()
        notify(f"Opened {path.name}")
        return True

    def open_dialog(self) -> None:
        self.confirm_discard(self._open_dialog)

    def _open_dialog(self) -> None:
        workspace = self.session.workspace
        files = sorted(p for p in workspace.glob("*.json") if p.name != AUTOSAVE_NAME) if workspace.is_dir() else []
        examples = sorted(flows_dir().glob("*.json")) if flows_dir().is_dir() else []
        with ui.dialog() as dialog, ui.card().classes("w-[28rem]"):
            ui.label("Open a flow").classes("text-h6")
            ui.label(f"Workspace: {workspace.resolve()}").classes("text-xs text-grey-7")
            if not files:
                ui.label("No flows saved in the workspace yet.").classes("text-sm")
            for path in files:
                ui.button(path.name, on_click=lambda p=path: dialog.close() if self.open_path(p) else None).props(
                    "flat no-caps align=left"
                ).classes("w-full fb-open-item")
            if examples:
                ui.label("Examples").classes("text-subtitle2")
                for path in examples:
                    ui.button(path.name, on_click=lambda p=path: dialog.close() if self.open_path(p) else None).props(
                        "flat no-caps align=left"
                    ).classes("w-full fb-open-item")
            ui.button("Cancel", on_click=dialog.close).props("flat")
        dialog.open()

    def _workspace_target(self) -> Path | None:
        """The current file if it is inside the workspace; example flows are never overwritten."""
        path = self.session.path
        if path is not None and path.resolve().parent == self.session.workspace.resolve():
            return path
        return None

    def save(self) -> None:
        target = self._workspace_target()
        if target is None:
            self.save_as_dialog()
            return
        self._write(target)

    def _write(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            save_flow(self.session.state.flow, path)
        except (OSError, FlowbuilderError) as exc:
            notify(f"Could not save {path}: {redact(str(exc))}", type="negative")
            return
        self.session.path = path
        self.session.state.dirty = False
        self.on_saved()
        notify(f"Saved {path.name} in {path.parent}", type="positive")

    def save_as_dialog(self) -> None:
        with ui.dialog() as dialog, ui.card().classes("w-96"):
            ui.label("Save flow as").classes("text-h6")
            name = ui.input("File name", value=safe_file_name(self.session.state.flow.name)).classes("w-full")
            name.mark("save-name")

            def do_save() -> None:
                self._write(self.session.workspace / safe_file_name(str(name.value or "flow")))
                dialog.close()

            name.on("keydown.enter", do_save)
            with ui.row():
                ui.button("Save", on_click=do_save).mark("save-confirm")
                ui.button("Cancel", on_click=dialog.close).props("flat")
        dialog.open()

    # ---------------------------------------------------------------- import / export
    def import_dialog(self) -> None:
        """The upload dialog, after the user agreed to lose unsaved edits (an import replaces the flow)."""
        self.confirm_discard(self._import_dialog)

    def _import_dialog(self) -> None:
        with ui.dialog() as dialog, ui.card().classes("w-[32rem] fb-import-dialog"):
            ui.label("Import a flow").classes("text-h6")
            ui.label(
                "A Flowbuilder, n8n, LangFlow or Flowise JSON file, or a Dify DSL (.yml). Code in it is never run."
            ).classes("text-sm")
            offline = ui.checkbox("Run offline (swap cloud providers for local ones)", value=False).mark(
                "import-offline"
            )
            ui.label(
                "OpenAI/Ollama embeddings become the built-in local embedder, OpenAI/Groq chat models a local "
                "Ollama model, Pinecone and Dify/Flowise knowledge bases an embedded Chroma store: no keys needed."
            ).classes("text-xs text-grey-7")

            async def on_upload(e: events.UploadEventArguments) -> None:
                content = await e.file.read()
                dialog.close()
                await self.import_bytes_async(content, e.file.name, local=bool(offline.value))

            ui.upload(
                label="Drop an exported flow (.json, .yml) here, or click +",
                on_upload=on_upload,
                auto_upload=True,
                max_file_size=20_000_000,
            ).props(f'accept="{UPLOAD_SUFFIXES}"').classes("w-full fb-import-upload")
            ui.button("Cancel", on_click=dialog.close).props("flat")
        dialog.open()

    def import_bytes(self, content: bytes, filename: str, local: bool = False) -> bool:
        """Import in the calling thread (tests, scripts); the page uses :meth:`import_bytes_async`."""
        try:
            flow, report = self._convert(content, filename, local)
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="negative", multi_line=True)
            return False
        return self._loaded(flow, report, content, filename, local)

    async def import_bytes_async(self, content: bytes, filename: str, local: bool = False) -> bool:
        """Convert off the event loop with a time limit, so a hostile file cannot freeze the server."""
        try:
            converted = await asyncio.wait_for(
                run.io_bound(self._convert, content, filename, local), timeout=WORK_TIMEOUT_S
            )
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="negative", multi_line=True)
            return False
        except TimeoutError:
            notify(f"{filename}: import took longer than {WORK_TIMEOUT_S:g} s and was abandoned.", type="negative")
            return False
        if converted is None:  # the server is shutting down
            return False
        return self._loaded(*converted, content, filename, local)

    def _convert(self, content: bytes, filename: str, local: bool) -> tuple[Flow, Any]:
        data = parse_upload(content, filename)
        return import_data(data, filename, self.session.resolver, local=local)

    def _loaded(self, flow: Flow, report: Any, content: bytes, filename: str, local: bool) -> bool:
        self.session.state.load(flow)
        self.session.path = None
        self.session.results = {}
        if self.session.state.needs_layout():
            self.session.state.auto_layout()  # an undo step: the user can get the source layout back
            self.session.state.dirty = False  # but no edit of the user's: the next import or open need not ask
        self.on_loaded()
        notify(f"Imported {filename}: {len(flow.nodes)} nodes", type="positive")
        offline_again = None if local else (lambda: self.import_bytes_async(content, filename, local=True))
        self.show_report(filename, report, offline_again)
        return True

    def show_report(self, filename: str, report: Any, reimport_offline: Callable[[], object] | None = None) -> None:
        """What an import did, in a dialog: the node counts, what ``--local`` swapped, the keys still to bind
        (with a way to import again offline instead), and the full report text. Nothing to say: no dialog."""
        text = ui_report_text(report)
        missing = missing_accounts(self.session)
        if not text and not missing:
            return
        with ui.dialog() as dialog, ui.card().classes("w-[46rem] max-w-full fb-import-report-dialog"):
            ui.label(f"Import report: {filename}").classes("text-h6")
            self._report_summary(report)
            if missing:
                self._report_accounts(missing, dialog, reimport_offline)
            if text:
                with ui.expansion("Full report", icon="description").classes("w-full").props("dense"):
                    ui.code(text, language="text").classes("w-full text-xs fb-import-report").style(
                        "max-height: 45vh; overflow: auto"
                    )
            ui.button("Close", on_click=dialog.close)
        dialog.open()

    def _report_summary(self, report: Any) -> None:
        """How many nodes the canvas got from how many source nodes, and each offline swap ``--local`` made."""
        nodes = getattr(report, "nodes", None)
        if nodes is not None:
            unsupported = getattr(report, "unsupported_count", 0)
            ui.label(
                f"{len(self.session.state.flow.nodes)} nodes on the canvas from {len(nodes)} source nodes"
                + (f"; {unsupported} unsupported (marked on the canvas)" if unsupported else "")
                + "."
            ).classes("text-sm fb-import-summary")
        swaps = list(getattr(report, "local_swaps", []) or [])
        if not swaps:
            return
        # a swap of a component has no parameter; other lines are settings --local changed or added
        swapped = sum(1 for swap in swaps if not swap.parameter)
        others = len(swaps) - swapped
        ui.label(
            f"Running offline: {swapped} cloud component(s) swapped for local ones"
            + (f", {others} setting(s) changed or added" if others else "")
        ).classes("text-subtitle2 text-positive fb-import-swaps")
        for swap in swaps:
            ui.label(f"{swap.node}: {swap.detail}").classes("text-xs")

    def _report_accounts(
        self, missing: list[Account], dialog: Any, reimport_offline: Callable[[], object] | None
    ) -> None:
        """The accounts the flow needs a key for, each redrawn once bound, and "Import again, running offline"
        for a user who has no keys."""
        ui.label("Keys to bind (one per account; kept for this session only)").classes("text-subtitle2")
        box = ui.column().classes("w-full gap-1")

        def draw_accounts() -> None:
            box.clear()
            with box:
                for account in missing:
                    self._account_row(account, after_bind)

        def after_bind() -> None:
            self.on_loaded()
            draw_accounts()

        draw_accounts()
        if reimport_offline is None:
            return

        async def again() -> None:
            dialog.close()
            outcome = reimport_offline()
            if inspect.isawaitable(outcome):
                await outcome

        with ui.row().classes("items-center"):
            ui.label("No keys?").classes("text-sm")
            ui.button("Import again, running offline", icon="cloud_off", on_click=again).props(
                "flat dense no-caps"
            ).mark("reimport-offline")

    def _account_row(self, account: Account, on_bound: Callable[[], None]) -> None:
        """One account in the import report: who uses it, and a "Bind a key" button until it is bound."""
        bound = account_bound(self.session, account)
        with ui.row().classes("items-center w-full no-wrap fb-import-account"):
            with ui.column().classes("gap-0 grow"):
                ui.label(account.title).classes("text-weight-medium")
                labels = dict.fromkeys(self.session.state.flow.node(n).label for n, _ in account.users)
                ui.label("used by " + ", ".join(labels)).classes("text-xs text-grey-7")
            if bound:
                ui.label("✓ bound").classes("text-positive text-weight-medium fb-account-bound")
            else:
                bind_button(self.session, account, on_bound)

    def export_dialog(self) -> None:
        with ui.dialog() as dialog, ui.card().classes("w-96"):
            ui.label("Export / download").classes("text-h6")
            for fmt in EXPORT_FORMATS:
                ui.button(
                    {
                        "flowbuilder": "Flowbuilder (native JSON)",
                        "n8n": "n8n workflow JSON",
                        "langflow": "LangFlow JSON",
                        "flowise": "Flowise chatflow JSON",
                    }[fmt],
                    on_click=lambda f=fmt: self.export_async(f, dialog),
                ).props(f'flat no-caps align=left data-format="{fmt}"').classes("w-full")
            ui.button("Cancel", on_click=dialog.close).props("flat")
        dialog.open()

    def export(self, fmt: str) -> str | None:
        """Export in the calling thread (tests, scripts); the page uses :meth:`export_async`."""
        try:
            text, warnings = export_text(self.session.state.flow, fmt)
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="negative")
            return None
        return self._download(text, warnings, fmt)

    async def export_async(self, fmt: str, dialog: ui.dialog | None = None) -> str | None:
        """Export off the event loop with a time limit (one request must never freeze the server)."""
        if dialog is not None:
            dialog.close()
        flow = self.session.state.flow.model_copy(deep=True)
        try:
            result = await asyncio.wait_for(run.io_bound(export_text, flow, fmt), timeout=WORK_TIMEOUT_S)
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="negative")
            return None
        except TimeoutError:
            notify(f"Export took longer than {WORK_TIMEOUT_S:g} s and was abandoned.", type="negative")
            return None
        if result is None:  # the server is shutting down
            return None
        text, warnings = result
        return self._download(text, warnings, fmt)

    def _download(self, text: str, warnings: list[str], fmt: str) -> str:
        stem = safe_file_name(self.session.state.flow.name, "")
        suffix = {"flowbuilder": ".flow.json", "n8n": ".n8n.json", "langflow": ".langflow.json"}[fmt]
        filename = f"{stem}{suffix}"
        ui.download.content(text.encode("utf-8"), filename, "application/json")
        if warnings:
            notify(
                f"Exported {filename}; {len(warnings)} note(s): " + "; ".join(warnings[:5]),
                type="warning",
                multi_line=True,
                timeout=10000,
            )
        return filename
