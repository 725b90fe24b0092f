"""FlowCanvas: the NiceGUI element that draws an :class:`EditorState` with Vue Flow.

Python -> browser: :meth:`FlowCanvas.render` rebuilds the ``nodes``/``edges`` props from the state
(after structural edits: add, delete, connect, undo, paste, layout, open) and
:meth:`FlowCanvas.patch` sends small per-node data patches (run status) without a re-render.
Browser -> Python: the events listed in ``canvas.js`` (``connect``, ``nodes_moved``, ``shortcut``...);
the page decides what to do with them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import markdown2
from nicegui import ui

from flowbuilder.errors import ValidationIssue
from flowbuilder.flow import Edge, NodeSpec, Note
from flowbuilder.graph import implicit_dependencies
from flowbuilder.ports import Port, PortKind, PortType, compatible
from flowbuilder.ui.state import EditorState

STATIC_DIR = Path(__file__).parent / "static"
log = logging.getLogger(__name__)

# Edge colour by the type its source port carries (same palette as canvas.css).
TYPE_COLOURS = {
    "text": "#0891b2",
    "message": "#0891b2",
    "prompt": "#0891b2",
    "answer": "#0891b2",
    "records": "#2563eb",
    "chunks": "#7c3aed",
    "vectors": "#059669",
    "hits": "#d97706",
    "any": "#64748b",
    "embedder": "#db2777",
    "vector_store": "#ea580c",
    "chat_model": "#16a34a",
    "memory": "#a16207",
    "tool": "#dc2626",
    "retriever": "#9333ea",
}


_IMG = re.compile(r"<img\b[^>]*?>", re.IGNORECASE)
_ATTR = re.compile(r'(src|alt)="([^"]*)"')


def _image_link(match: re.Match[str]) -> str:
    attrs = dict(_ATTR.findall(match.group(0)))
    src, alt = attrs.get("src", ""), attrs.get("alt", "") or "image"
    return f'<a class="fb-note-image" href="{src}" target="_blank" rel="noopener noreferrer">🖼 {alt}</a>'


def note_html(text: str) -> str:
    """A note's markdown as HTML. Notes come from imported files, so raw HTML in them is escaped, unsafe
    link targets are dropped (markdown2's safe mode) and images become links: opening a flow never makes
    the browser fetch anything from elsewhere (the page's CSP says so too)."""
    html = str(markdown2.markdown(text or "", safe_mode="escape", extras=["break-on-newline", "tables"]))
    return _IMG.sub(_image_link, html)


def note_title(text: str) -> str:
    """A note's first line without markdown marks: what its chip shows when the canvas is zoomed far out."""
    for line in (text or "").splitlines():
        line = line.strip().lstrip("#>*-_ ").strip("*_` ")
        if line:
            return line[:80]
    return "note"


def port_view(port: Port) -> dict[str, object]:
    """What a card draws of a port (its description stays out: a 500-node flow's props are 12% lighter)."""
    return {
        "name": port.name,
        "type": port.type.value,
        "kind": port.kind.value,
        "required": port.required,
        "multiple": port.multiple,
    }


def node_views(
    state: EditorState,
    issues: dict[str, list[ValidationIssue]] | None = None,
    status: dict[str, dict[str, Any]] | None = None,
    base_dir: Path | None = None,
    describe: Callable[[ValidationIssue], str] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Vue Flow ``nodes`` and ``edges`` for the state, with issues and run status folded in; ``describe``
    words an issue for the page (default: its message)."""
    issues = issues or {}
    words = describe or (lambda issue: issue.message)
    status = status or {}
    flow = state.flow
    nodes: list[dict[str, Any]] = []
    out_types: dict[tuple[str, str], tuple[str, str]] = {}
    for spec in flow.nodes:
        inputs, outputs = state.spec_ports(spec)
        for port in outputs:
            out_types[(spec.id, port.name)] = (port.type.value, port.kind.value)
        data = _card_data(
            state, spec, inputs, outputs, [{"port": i.port, "message": words(i)} for i in issues.get(spec.id, [])]
        )
        data.update(status.get(spec.id, {}))
        pos = flow.position(spec.id)
        nodes.append({"id": spec.id, "type": "fbnode", "position": {"x": pos.x, "y": pos.y}, "data": data})
    nodes += [_note_view(state, note) for note in flow.notes]
    edges = [_edge_view(edge, *out_types.get((edge.source, edge.source_port), ("any", "data"))) for edge in flow.edges]
    edges += implicit_edges(state, base_dir)
    return nodes, edges


def _card_data(
    state: EditorState,
    spec: NodeSpec,
    inputs: tuple[Port, ...],
    outputs: tuple[Port, ...],
    issues: list[dict[str, Any]],
) -> dict[str, Any]:
    """What a node card shows before a run: its label, type, category (``Unknown`` for a type no longer
    registered), ports and issues, idle."""
    cls = state.registry.get(spec.type) if spec.type in state.registry else None
    return {
        "label": spec.label,
        "typeName": spec.type,
        "category": cls.category if cls else "Unknown",
        "inputs": [port_view(p) for p in inputs],
        "outputs": [port_view(p) for p in outputs],
        "disabled": spec.disabled,
        "issues": issues,
        "status": "idle",
        "summary": "",
        "error": None,
        "duration": None,
        "progress": None,
    }


def _note_view(state: EditorState, note: Note) -> dict[str, Any]:
    """A sticky note: its markdown made safe, a title for far zoom, and its size."""
    pos = state.flow.position(note.id)
    return {
        "id": note.id,
        "type": "fbnote",
        "position": {"x": pos.x, "y": pos.y},
        "data": {"text": note.text, "html": note_html(note.text), "title": note_title(note.text)},
        "style": {"width": f"{note.width or 220}px", "height": f"{note.height or 120}px"},
        # Behind the node cards and their edges, like n8n's sticky notes: a note is a frame.
        "zIndex": -1,
    }


def _edge_view(edge: Edge, type_name: str, kind: str) -> dict[str, Any]:
    """A link coloured by the type its source port carries; a service link dashed and drawn straight."""
    style: dict[str, Any] = {"stroke": TYPE_COLOURS.get(type_name, "#64748b")}
    item: dict[str, Any] = {
        "id": edge.key,
        "source": edge.source,
        "sourceHandle": edge.source_port,
        "target": edge.target,
        "targetHandle": edge.target_port,
        "style": style,
        "data": {"type": type_name},
        "type": "fbrouted",  # canvas.js RoutedEdge: a curve, or round the cards it would pass under
    }
    if kind == PortKind.SERVICE.value:
        style["strokeDasharray"] = "6 4"
        # A service leaves the top of its provider and enters the bottom of its consumer; when the
        # consumer sits below (a store feeding a retriever on the next row) a curve would loop around
        # both cards, so service links are drawn straight (canvas.js ServiceEdge: round any card in the way).
        item["type"] = "fbservice"
    return item


def implicit_edges(state: EditorState, base_dir: Path | None = None) -> list[dict[str, Any]]:
    """Writer -> reader "same collection" dependencies (a store that fills a collection and one that
    searches it without a connection) as dashed, read-only links."""
    try:
        found = implicit_dependencies(state.flow, state.registry, base_dir)
    except Exception as exc:  # a drawing aid must never break the canvas
        log.warning("implicit dependencies unavailable: %s", exc)
        return []
    links = []
    for dep in found:
        _, outputs = state.ports(dep.writer)
        inputs, _ = state.ports(dep.reader)
        source = next((p.name for p in outputs if p.kind is PortKind.DATA), None)
        target = next((p.name for p in inputs if p.name == "documents"), None) or next(
            (p.name for p in inputs if p.kind is PortKind.DATA), None
        )
        if source is None or target is None:
            continue
        links.append(
            {
                "id": f"implicit:{dep.writer}->{dep.reader}",
                "source": dep.writer,
                "sourceHandle": source,
                "target": dep.reader,
                "targetHandle": target,
                "label": "same collection",
                "class": "fb-implicit",
                "type": "fbrouted",
                "selectable": False,
                "deletable": False,
                "focusable": False,
                "style": {"stroke": "#64748b", "strokeDasharray": "3 5"},
                "labelStyle": {"fill": "#475569", "fontSize": "13px"},
                "labelBgStyle": {"fill": "#f8fafc"},
                "data": {"type": "implicit", "reason": str(getattr(dep, "reason", ""))},
            }
        )
    return links


class FlowCanvas(ui.element, component="canvas.js", esm={"flowbuilder-vueflow": "static/dist"}):
    """Vue Flow canvas bound to an :class:`EditorState` (which it never edits itself)."""

    def __init__(self, state: EditorState) -> None:
        super().__init__()
        self.state = state
        self.add_resource(STATIC_DIR)  # -> prop 'resource-path' (vueflow.css, canvas.css)
        self.issues: dict[str, list[ValidationIssue]] = {}
        self.status: dict[str, dict[str, Any]] = {}
        self.base_dir: Path | None = None  # where the flow's relative paths resolve (collection addresses)
        self.describe: Callable[[ValidationIssue], str] | None = None  # issue wording (the page's, no CLI flags)
        self._props["nodes"] = []
        self._props["edges"] = []
        # the one compatibility rule, for the drag-time hint: output type -> input types it may feed
        self._props["compat"] = {s.value: [t.value for t in PortType if compatible(s, t)] for s in PortType}

    def render(self, issues: dict[str, list[ValidationIssue]] | None = None) -> None:
        """Redraw the whole graph from the state (structural change)."""
        if issues is not None:
            self.issues = issues
        nodes, edges = node_views(self.state, self.issues, self.status, self.base_dir, self.describe)
        self._props["nodes"] = nodes
        self._props["edges"] = edges
        self.update()

    def node_data(self, node_id: str) -> dict[str, Any] | None:
        for node in self._props["nodes"]:
            if node["id"] == node_id:
                return node["data"]
        return None

    def patch(self, patches: dict[str, dict[str, Any]]) -> None:
        """Update node data in place (run status): props are kept in step silently, the browser
        gets one batched call, and nothing re-renders the graph."""
        if not patches:
            return
        for node_id, patch in patches.items():
            self.status.setdefault(node_id, {}).update(patch)
            data = self.node_data(node_id)
            if data is not None:
                data.update(patch)
        if self.client.has_socket_connection:
            self.run_method("patchNodes", patches)

    def clear_status(self, keep: Iterable[str] = ()) -> None:
        """Every card back to idle, except ``keep`` (cards another job is drawing: the background ingest's)."""
        kept = {node_id: self.status[node_id] for node_id in keep if node_id in self.status}
        reset = {"status": "idle", "summary": "", "error": None, "duration": None, "progress": None}
        self.status = {}
        self.patch({spec.id: dict(reset) for spec in self.state.flow.nodes if spec.id not in kept})
        self.status = kept

    def patch_note(self, note_id: str, text: str) -> None:
        """A note's new text and its rendered HTML, without re-rendering the graph."""
        data = self.node_data(note_id)
        patch = {"text": text, "html": note_html(text), "title": note_title(text)}
        if data is not None:
            data.update(patch)
        if self.client.has_socket_connection:
            self.run_method("patchNodes", {note_id: patch})

    async def layered_layout(self, request: dict[str, Any], timeout: float = 60.0) -> dict[str, Any] | None:
        """The browser's ELK layout of ``EditorState.layout_request()`` with measured cards, or None (no
        browser, or the layout failed: the reason is logged)."""
        if not self.client.has_socket_connection:
            return None
        try:
            result = await self.run_method("layeredLayout", request, timeout=timeout)
        except TimeoutError:
            log.warning("The browser's layout took longer than %g s", timeout)
            return None
        if not isinstance(result, dict) or "error" in result:
            log.warning("The browser's layout failed: %s", result.get("error") if isinstance(result, dict) else result)
            return None
        return result

    def fit_view(self) -> None:
        if self.client.has_socket_connection:
            self.run_method("fitView")

    def keep_in_view(self, node_id: str) -> None:
        """Pan (after the drawer opened) just enough that ``node_id``'s card is on screen."""
        if self.client.has_socket_connection:
            self.run_method("keepInView", node_id)

    def restore_view(self) -> None:
        """Undo :meth:`keep_in_view`'s pan (the drawer closed), unless the user moved the view since."""
        if self.client.has_socket_connection:
            self.run_method("restoreView")
