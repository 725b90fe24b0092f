"""The Fix button beside a required input left empty: it shows what it will do and does it in one click
(connect the node the flow already has for that input, or add the offline default and connect it)."""

from __future__ import annotations

from collections.abc import Callable

from nicegui import ui

from flowbuilder.errors import FlowbuilderError, ValidationIssue
from flowbuilder.fixes import Fix, suggest_fix
from flowbuilder.ui.session import EditorSession
from flowbuilder.ui.widgets import notify


def fix_for(session: EditorSession, issue: ValidationIssue) -> Fix | None:
    if issue.code != "missing-input" or not issue.node_id or not issue.port:
        return None
    return suggest_fix(session.state.flow, issue.node_id, issue.port, session.state.registry)


def apply_fix(session: EditorSession, fix: Fix) -> None:
    """Apply ``fix`` through the editing state (one undo step each: add, connect)."""
    state = session.state
    source = fix.source
    if source is None:
        assert fix.add_type is not None
        here = state.flow.position(fix.node)
        source = state.add_node(fix.add_type, here.x - 300, here.y + 40)
    state.connect(source, fix.source_port, fix.node, fix.port)


def fix_button(
    session: EditorSession, issue: ValidationIssue, on_fixed: Callable[[], None], where: str = ""
) -> ui.button | None:
    """A "Fix" button for a ``missing-input`` issue with a known fix (its tooltip says what it does)."""
    fix = fix_for(session, issue)
    if fix is None:
        return None

    def run() -> None:
        try:
            apply_fix(session, fix)
        except FlowbuilderError as exc:
            notify(str(exc), type="negative")
            return
        notify(f"Fixed: {fix.label}.", type="positive")
        on_fixed()

    button = (
        ui.button("Fix", icon="build", on_click=run)
        .props("dense unelevated no-caps size=sm color=primary")
        .classes("fb-fix")
        .mark(f"fix-{issue.node_id}-{issue.port}", *([f"{where}-fix"] if where else []))
    )
    button.tooltip(fix.label)
    return button
