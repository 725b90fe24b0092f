"""New / open / save in the workspace folder, import by upload (n8n, LangFlow, native) with the
import report and a credentials dialog for unbound slots, and export by download."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nicegui import events, ui

from flowbuilder.errors import FlowbuilderError
from flowbuilder.examples import flows_dir
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow, save_flow
from flowbuilder.secrets import redact
from flowbuilder.ui.formats_bridge import EXPORT_FORMATS, export_text, import_data, parse_upload, report_text
from flowbuilder.ui.inspector import bind_credential
from flowbuilder.ui.session import EditorSession, binding_source

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str, suffix: str = ".json") -> str:
    stem = _SAFE_NAME.sub("_", name).strip(" ._") or "flow"
    return stem if stem.endswith(suffix) else stem + suffix


def unbound_slots(session: EditorSession) -> list[tuple[str, Any]]:
    """(node id, slot) for every required credential slot nothing binds yet."""
    missing = []
    for spec in session.state.flow.nodes:
        cls = session.state.node_class(spec.id)
        if cls is None:
            continue
        for slot in cls.credential_slots:
            if (
                slot.required
                and binding_source(session.resolver, spec.id, slot, spec.credentials.get(slot.name)) is None
            ):
                missing.append((spec.id, slot))
    return missing


class FileActions:
    """Header buttons' handlers. ``on_loaded`` redraws everything after the flow was replaced."""

    def __init__(self, session: EditorSession, on_loaded: Callable[[], None], on_saved: Callable[[], None]) -> None:
        self.session = session
        self.on_loaded = on_loaded
        self.on_saved = on_saved

    # ---------------------------------------------------------------- native files
    def new(self) -> None:
        self.session.state.load(Flow())
        self.session.path = None
        self.session.results = {}
        self.on_loaded()

    def open_path(self, path: Path) -> bool:
        try:
            flow = load_flow(path)
        except FlowbuilderError as exc:
            ui.notify(redact(str(exc)), type="negative", multi_line=True)
            return False
        self.session.state.load(flow)
        self.session.path = path
        self.session.results = {}
        self.on_loaded()
        ui.notify(f"Opened {path.name}")
        return True

    def open_dialog(self) -> None:
        workspace = self.session.workspace
        files = sorted(workspace.glob("*.json")) if workspace.is_dir() else []
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
            ui.notify(f"Could not save {path}: {redact(str(exc))}", type="negative")
            return
        self.session.path = path
        self.session.state.dirty = False
        self.on_saved()
        ui.notify(f"Saved {path.name} in {path.parent}", type="positive")

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
        with ui.dialog() as dialog, ui.card().classes("w-[30rem]"):
            ui.label("Import a flow").classes("text-h6")
            ui.label("A Flowbuilder, n8n or LangFlow JSON file. Code in it is never run.").classes("text-sm")

            async def on_upload(e: events.UploadEventArguments) -> None:
                content = await e.file.read()
                dialog.close()
                self.import_bytes(content, e.file.name)

            ui.upload(on_upload=on_upload, auto_upload=True, max_file_size=20_000_000).props(
                'accept=".json,application/json"'
            ).classes("w-full fb-import-upload")
            ui.button("Cancel", on_click=dialog.close).props("flat")
        dialog.open()

    def import_bytes(self, content: bytes, filename: str) -> bool:
        try:
            data = parse_upload(content, filename)
            flow, report = import_data(data, filename, self.session.resolver)
        except FlowbuilderError as exc:
            ui.notify(redact(str(exc)), type="negative", multi_line=True)
            return False
        self.session.state.load(flow)
        self.session.path = None
        self.session.results = {}
        if not any(self.session.state.flow.layout.positions.get(n.id) for n in flow.nodes):
            self.session.state.auto_layout()
        self.on_loaded()
        ui.notify(f"Imported {filename}: {len(flow.nodes)} nodes", type="positive")
        self.show_report(filename, report)
        return True

    def show_report(self, filename: str, report: Any) -> None:
        text = report_text(report)
        missing = unbound_slots(self.session)
        if not text and not missing:
            return
        with ui.dialog() as dialog, ui.card().classes("w-[44rem] max-w-full"):
            ui.label(f"Import report: {filename}").classes("text-h6")
            if text:
                ui.code(text, language="text").classes("w-full text-xs fb-import-report").style(
                    "max-height: 50vh; overflow: auto"
                )
            if missing:
                ui.label("Credentials to bind (kept for this session only; the flow stores references)").classes(
                    "text-subtitle2"
                )
                for node_id, slot in missing:
                    with ui.row().classes("items-center w-full no-wrap"):
                        ui.label(f"{node_id}.{slot.name} ({slot.provider})").classes("w-48")
                        field = (
                            ui.input("Secret", password=True).props("dense outlined autocomplete=off").classes("grow")
                        )

                        def bind(f: Any = field, n: str = node_id, s: Any = slot) -> None:
                            value = str(f.value or "")
                            f.value = ""
                            if value:
                                bind_credential(self.session, n, s, value)
                                ui.notify(f"{n}.{s.name} bound", type="positive")
                                self.on_loaded()

                        ui.button("Bind", on_click=bind).props("dense")
            ui.button("Close", on_click=dialog.close)
        dialog.open()

    def export_dialog(self) -> None:
        with ui.dialog() as dialog, ui.card().classes("w-96"):
            ui.label("Export / download").classes("text-h6")
            for fmt in EXPORT_FORMATS:
                ui.button(
                    {
                        "flowbuilder": "Flowbuilder (native JSON)",
                        "n8n": "n8n workflow JSON",
                        "langflow": "LangFlow JSON",
                    }[fmt],
                    on_click=lambda f=fmt: (self.export(f), dialog.close()),
                ).props(f'flat no-caps align=left data-format="{fmt}"').classes("w-full")
            ui.button("Cancel", on_click=dialog.close).props("flat")
        dialog.open()

    def export(self, fmt: str) -> str | None:
        try:
            text, warnings = export_text(self.session.state.flow, fmt)
        except FlowbuilderError as exc:
            ui.notify(redact(str(exc)), type="negative")
            return None
        stem = safe_file_name(self.session.state.flow.name, "")
        suffix = {"flowbuilder": ".flow.json", "n8n": ".n8n.json", "langflow": ".langflow.json"}[fmt]
        filename = f"{stem}{suffix}"
        ui.download.content(text.encode("utf-8"), filename, "application/json")
        if warnings:
            ui.notify(
                f"Exported {filename}; {len(warnings)} note(s): " + "; ".join(warnings[:5]),
                type="warning",
                multi_line=True,
                timeout=10000,
            )
        return filename
