"""The node inspector: name, disabled toggle, a form generated from the Config JSON schema, and the
credential slots with their binding state.

Secrets typed here are bound for this browser session only (``CredentialResolver.bind``); the field is
cleared at once so the value is never sent back to the page, and the flow keeps only a CredentialRef.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nicegui import ui

from flowbuilder.errors import ValidationIssue
from flowbuilder.registry import describe_node
from flowbuilder.trust.providers import CredentialSlot
from flowbuilder.ui.accounts import (
    Account,
    account_for_issue,
    account_key,
    approve_button,
    bind_account,
    bind_button,
    issue_text,
    provider_name,
)
from flowbuilder.ui.file_picker import is_file_field, pick_file, suffixes_for
from flowbuilder.ui.fix_button import fix_button
from flowbuilder.ui.forms import FormField, form_fields, parse_json_field
from flowbuilder.ui.runtime_install import runtime_panel
from flowbuilder.ui.session import EditorSession, binding_source
from flowbuilder.ui.widgets import notify, ui_words

SOURCE_LABELS = {
    "session": "bound for this session",
    "store": "bound from the credentials file",
    "env": "bound from the environment",
    None: "unbound",
}


class Inspector:
    """Draws the selected node's settings into ``container``; ``on_change(structural)`` is called after
    each accepted edit (structural: the node's ports or label may have changed)."""

    def __init__(
        self,
        session: EditorSession,
        on_change: Callable[[bool], None],
        on_select: Callable[[str], None] | None = None,
    ) -> None:
        self.session = session
        self.on_change = on_change
        self.on_select = on_select
        self.container = ui.column().classes("w-full gap-2")
        self.node_id: str | None = None  # the page's first refresh draws the overview (one flow check, not two)

    def show(self, node_id: str | None, issues: list[ValidationIssue] | None = None) -> None:
        """``node_id``'s form, or the flow overview for None (``issues``: the flow's, when the caller has them)."""
        self.node_id = node_id
        self.container.clear()
        with self.container:
            spec = self.session.state.flow.find_node(node_id) if node_id else None
            if spec is None:
                self._overview(issues)
                return
            cls = self.session.state.node_class(spec.id)
            if cls is None:
                ui.label(f"Unknown node type '{spec.type}'.").classes("text-negative")
                return
            info = describe_node(cls)
            ui.label(spec.type).classes("text-xs text-grey-7 fb-inspector-type")
            ui.label(info["description"]).classes("text-sm")
            ui.input("Name", value=spec.name, placeholder=spec.id).classes("w-full").props(
                "dense outlined"
            ).on_value_change(lambda e: self._rename(str(e.value or "")))
            ui.switch("Disabled (skipped in runs)", value=spec.disabled).on_value_change(
                lambda e: self._set_disabled(bool(e.value))
            )
            fields = form_fields(info["config_schema"])
            if fields:
                ui.label("Settings").classes("text-subtitle2 q-mt-sm")
            basic = [f for f in fields if not f.advanced]
            advanced = [f for f in fields if f.advanced]
            for form_field in basic:
                self._field(form_field, spec.config)
            if advanced:
                with ui.expansion("Advanced").classes("w-full"):
                    for form_field in advanced:
                        self._field(form_field, spec.config)
            if cls.runtime is not None:
                runtime_panel(cls.runtime)
            if cls.credential_slots:
                ui.label("Credentials").classes("text-subtitle2 q-mt-sm")
                for slot in cls.credential_slots:
                    self._credential(slot)

    def _overview(self, issues: list[ValidationIssue] | None = None) -> None:
        """No node selected: what this flow is, how big, and what stops it from running."""
        flow = self.session.state.flow
        with ui.column().classes("w-full gap-1 fb-flow-overview"):
            ui.label(flow.name or "Untitled flow").classes("text-subtitle1 text-weight-medium fb-overview-name")
            if flow.description:
                ui.label(flow.description).classes("text-sm text-grey-8 fb-overview-description")
            nodes, edges = len(flow.nodes), len(flow.edges)
            counts = f"{nodes} node{'s' if nodes != 1 else ''} · {edges} connection{'s' if edges != 1 else ''}"
            if flow.notes:
                counts += f" · {len(flow.notes)} note{'s' if len(flow.notes) != 1 else ''}"
            ui.label(counts).classes("text-xs text-grey-7 fb-overview-counts")
            if issues is None:
                issues = self.session.state.issues(self.session.resolver, self.session.base_dir)
            if not flow.nodes:
                ui.label("Drag a node from the palette to start.").classes("text-sm q-mt-sm fb-overview-hint")
                return
            if issues:
                ui.label(f"{len(issues)} issue{'s' if len(issues) != 1 else ''} to fix before a run").classes(
                    "text-weight-medium text-negative q-mt-sm fb-overview-issue-count"
                )
                with ui.column().classes("w-full gap-1"):
                    for issue in issues:
                        self._issue_row(issue)
            else:
                with ui.row().classes("items-center gap-1 q-mt-sm text-positive fb-overview-issue-count"):
                    ui.icon("check_circle", size="18px")
                    ui.label("Ready to run: no validation issues.").classes("text-sm")
            ui.label("Click a node to edit its settings; after a run, click it to see what it produced.").classes(
                "text-xs text-grey-7 q-mt-md fb-overview-hint"
            )

    def _issue_row(self, issue: ValidationIssue) -> None:
        spec = self.session.state.flow.find_node(issue.node_id) if issue.node_id else None
        where = (spec.label if spec else issue.node_id or "flow") + (f" · {issue.port}" if issue.port else "")
        row = ui.element("div").classes("w-full fb-overview-issue")
        with row:
            ui.label(where).classes("fb-overview-issue-where")
            ui.label(issue_text(self.session, issue)).classes("fb-overview-issue-text")
            account = account_for_issue(self.session, issue)
            if account is not None:
                bind_button(self.session, account, lambda: self.on_change(False)).on("click.stop", lambda: None)
            approve = approve_button(self.session, issue, lambda: self.on_change(False), "overview")
            if approve is not None:
                approve.on("click.stop", lambda: None)
            fix = fix_button(self.session, issue, lambda: self.on_change(True), "overview")
            if fix is not None:
                fix.on("click.stop", lambda: None)
        select = self.on_select
        if spec is not None and select is not None:
            row.classes("cursor-pointer").mark(f"issue-{spec.id}").on("click", lambda _, n=spec.id: select(n))
            row.props["title"] = "Click to select this node"

    # ---------------------------------------------------------------- edits
    def _rename(self, name: str) -> None:
        if self.node_id:
            self.session.state.rename(self.node_id, name)
            self.on_change(True)

    def _set_disabled(self, disabled: bool) -> None:
        if self.node_id:
            self.session.state.set_disabled(self.node_id, disabled)
            self.on_change(True)

    def _apply(self, element: Any, name: str, value: Any) -> None:
        if self.node_id is None:
            return
        errors = self.session.state.set_config_value(self.node_id, name, value)
        if errors:
            element.error = errors.get(name) or "; ".join(f"{k}: {v}" for k, v in errors.items())
            return
        element.error = None
        self.on_change(True)

    def _field(self, f: FormField, config: dict[str, Any]) -> None:
        """One config field as the form element its kind asks for; every edit goes through :meth:`_apply`, which
        checks it against the node's Config and shows pydantic's message on the element."""
        value = config.get(f.name, f.default)
        element: Any
        if f.kind in ("integer", "number"):
            element = self._number_field(f, value)
        elif f.kind == "select":
            element = ui.select(
                f.options + ([None] if f.nullable and None not in f.options else []), label=f.label, value=value
            ).props("dense outlined")
            element.on_value_change(lambda e, field=f: self._apply(e.sender, field.name, e.value))
        elif f.kind == "switch":
            element = ui.switch(f.label, value=bool(value))
            element.on_value_change(lambda e, field=f: self._apply(e.sender, field.name, bool(e.value)))
        elif f.kind == "textarea":
            element = ui.textarea(f.label, value=value or "").props("dense outlined autogrow")
            element.on_value_change(lambda e, field=f: self._apply(e.sender, field.name, e.value))
        elif f.kind == "text":
            element = self._text_field(f, value)
        else:
            element = self._json_field(f, value)
        element.classes("w-full").props(f'data-field="{f.name}"').mark(f"field-{f.name}")
        if hasattr(element, "without_auto_validation"):
            element.without_auto_validation()  # our pydantic message must not be cleared right after it is set
        tooltip = ui_words(f.description)
        if tooltip:
            element.tooltip(tooltip)

    def _number_field(self, f: FormField, value: Any) -> Any:
        """An integer or float field; cleared means None (when the field allows it), and a whole float typed into
        an integer field is saved as an int."""
        element = ui.number(
            f.label,
            value=value,
            min=f.minimum,
            max=f.maximum,
            step=1 if f.kind == "integer" else 0.05,
            precision=0 if f.kind == "integer" else None,
        ).props("dense outlined clearable" if f.nullable else "dense outlined")

        def number_changed(e: Any, field: FormField = f) -> None:
            raw = e.value
            if raw is None or raw == "":
                value = None
            else:
                value = int(raw) if field.kind == "integer" and float(raw).is_integer() else raw
            self._apply(e.sender, field.name, value)

        element.on_value_change(number_changed)
        return element

    def _text_field(self, f: FormField, value: Any) -> Any:
        """A one-line text field (empty means None when the field allows it); a file field gets a button that
        uploads or picks a file (the node's bundled files among the choices)."""
        element = ui.input(f.label, value="" if value is None else str(value)).props("dense outlined")
        element.on_value_change(
            lambda e, field=f: self._apply(e.sender, field.name, None if field.nullable and not e.value else e.value)
        )
        if not is_file_field(f.name):
            return element
        suffixes = suffixes_for(f.name)
        node_class = self.session.state.node_class(self.node_id) if self.node_id else None
        runtime = node_class.runtime if node_class is not None else None
        bundled = runtime.bundled_files() if runtime is not None else []

        def picked(path: str, target: Any = element) -> None:
            target.value = path  # fires on_value_change -> the checked config edit

        with element.add_slot("append"):
            ui.button(
                icon="folder_open",
                on_click=lambda: pick_file(self.session.workspace, self.session.base_dir, picked, suffixes, bundled),
            ).props("flat dense round size=sm").tooltip("Upload or choose a file").mark(f"pick-{f.name}")
        return element

    def _json_field(self, f: FormField, value: Any) -> Any:
        """Any other value (lists, objects) as JSON text; text that does not parse is shown as the field's error
        and never saved."""
        text = "" if value is None else json.dumps(value, ensure_ascii=False)
        element = ui.textarea(f"{f.label} (JSON)", value=text).props("dense outlined autogrow")

        def json_changed(e: Any, field: FormField = f) -> None:
            try:
                parsed = parse_json_field(str(e.value or ""))
            except ValueError as exc:
                e.sender.error = str(exc)
                return
            self._apply(e.sender, field.name, parsed)

        element.on_value_change(json_changed)
        return element

    def _credential(self, slot: CredentialSlot) -> None:
        node_id = self.node_id
        assert node_id is not None
        spec = self.session.state.flow.node(node_id)
        ref = spec.credentials.get(slot.name)
        source = binding_source(self.session.resolver, node_id, slot, ref)
        with ui.card().classes("w-full q-pa-sm gap-1").props("flat bordered"):
            with ui.row().classes("items-center w-full no-wrap"):
                provider, account = account_key(self.session, node_id, slot)
                ui.label(f"{slot.name} · {provider_name(provider)} account “{account}”").classes("text-weight-medium")
                ui.space()
                ui.badge(
                    SOURCE_LABELS[source] if slot.required or source else "optional, unbound",
                    color="positive" if source else ("grey" if not slot.required else "negative"),
                ).classes("fb-cred-state").props(f'data-slot="{slot.name}"')
            if source is None and slot.required:
                bind_button(self.session, Account(provider, account), self._after_bind)
            name_input = (
                ui.input("Account name", value=ref.name if ref else "default", placeholder="default")
                .props("dense outlined")
                .classes("w-full")
            )
            name_input.on(
                "blur",
                lambda: self._set_ref(slot, str(name_input.value or "default")),
            )
            with ui.row().classes("items-center w-full no-wrap"):
                secret = (
                    ui.input("Key (this session only)", password=True, password_toggle_button=False)
                    .props("dense outlined autocomplete=off")
                    .classes("grow")
                    .mark(f"secret-{slot.name}")
                )
                ui.button("Bind", on_click=lambda: self._bind(slot, secret)).props("dense unelevated").mark(
                    f"bind-{slot.name}"
                )

    def _after_bind(self) -> None:
        self.show(self.node_id)
        self.on_change(False)

    def _set_ref(self, slot: CredentialSlot, name: str) -> None:
        if self.node_id is None:
            return
        spec = self.session.state.flow.node(self.node_id)
        ref = spec.credentials.get(slot.name)
        self.session.state.set_credential_ref(self.node_id, slot.name, ref.provider if ref else slot.provider, name)
        self.show(self.node_id)
        self.on_change(False)

    def _bind(self, slot: CredentialSlot, secret: Any) -> None:
        value = str(secret.value or "")
        secret.value = ""  # clear first: the secret must never travel back to the page
        if not value or self.node_id is None:
            notify("Type the secret first.", type="warning")
            return
        provider, name = account_key(self.session, self.node_id, slot)
        count = bind_account(self.session, provider, name, value)
        notify(
            f"{provider_name(provider)} account “{name}” bound for this session ({count} node setting(s)).",
            type="positive",
        )
        self.show(self.node_id)
        self.on_change(False)
