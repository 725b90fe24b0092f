"""EditorState: the graph being edited, in plain Python (no NiceGUI), so it can be tested alone.

The canvas only reflects this state. Every edit goes through a method here that checks it (ports via
:func:`flowbuilder.ports.compatible`, configs via the node's pydantic Config), records an undo snapshot
and mutates :attr:`EditorState.flow`. Undo/redo keep whole-flow snapshots: flows are small, and a
snapshot can never drift from the real model the way inverse operations can.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import networkx as nx
from pydantic import BaseModel, ValidationError

from flowbuilder.errors import InvalidConnectionError, ValidationIssue
from flowbuilder.flow import Edge, Flow, NodeSpec, Note, Position
from flowbuilder.graph import analyze
from flowbuilder.ports import Port, PortKind, compatible
from flowbuilder.registry import NodeClass, NodeRegistry, default_registry
from flowbuilder.trust.credentials import CredentialResolver
from flowbuilder.trust.providers import CredentialRef
from flowbuilder.ui.names import display_name, unique_name

MAX_UNDO = 100
PASTE_OFFSET = 40.0

# Auto-layout geometry (canvas pixels); matches the node card size drawn by canvas.js closely enough.
NODE_WIDTH = 230.0
COLUMN_GAP = 90.0
ROW_GAP = 40.0
SUB_GAP = 70.0
FRAME_PAD = 24.0
PART_GAP = 60.0
CANVAS_ASPECT = 2.1
"""Width / height of the room a fit fills on the canvas at 1280x720 and 1920x1080 (less its padding and the activity
bar's room); the browser's ELK layout measures the real one."""
# Undo key of a layout: the fallback layout of an import and the browser's layout that refines it are one step
LAYOUT_STEP = ("layout",)
# needs_layout(): overlap share of a card, and card area / bounding box area, that call for a layout
OVERLAP_SHARE = 0.25
SPARSE_DENSITY = 0.1


def node_height(n_inputs: int, n_outputs: int) -> float:
    """Approximate rendered height of a node card with this many side (data) ports."""
    return 58.0 + 22.0 * max(n_inputs, n_outputs, 1)


class EditorState:
    """The flow under edit, with undo/redo, a clipboard and checked edits."""

    def __init__(self, flow: Flow | None = None, registry: NodeRegistry | None = None) -> None:
        self.registry = registry or default_registry()
        self.flow = flow or Flow()
        self._undo: list[str] = []
        self._redo: list[str] = []
        self._merge_key: object = None
        self.clipboard: str | None = None
        self.dirty = False
        self.refine_layout = False
        """The Python layout was applied and a browser layout (ELK, with measured cards) should replace it."""
        self._framed: dict[str, list[str]] = {}  # note id -> nodes it framed before that layout
        self.folder: Callable[[], Path | None] = lambda: None
        """The flow file's folder (set by the session): relative paths and command approvals depend on it."""
        self.file: Callable[[], Path | None] = lambda: None
        """The flow's file when it was saved (set by the session): which flow it is, for its own stores."""

    # ------------------------------------------------------------------ history
    def load(self, flow: Flow) -> None:
        """Replace the flow (open, import, new); history starts afresh."""
        self.flow = flow
        self._undo.clear()
        self._redo.clear()
        self._merge_key = None
        self.dirty = False
        self.refine_layout = False

    def _snapshot(self, merge_key: object = None) -> None:
        """Record the state before an edit. Edits sharing a ``merge_key`` in a row (typing in one
        field) make one undo step."""
        if merge_key is not None and merge_key == self._merge_key and self._undo:
            self._redo.clear()
            return
        self._undo.append(self.flow.model_dump_json())
        del self._undo[:-MAX_UNDO]
        self._redo.clear()
        self._merge_key = merge_key
        self.dirty = True

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo(self) -> bool:
        if not self._undo:
            return False
        self._redo.append(self.flow.model_dump_json())
        self.flow = Flow.model_validate_json(self._undo.pop())
        self._merge_key = None
        self.dirty = True
        return True

    def redo(self) -> bool:
        if not self._redo:
            return False
        self._undo.append(self.flow.model_dump_json())
        self.flow = Flow.model_validate_json(self._redo.pop())
        self._merge_key = None
        self.dirty = True
        return True

    # ------------------------------------------------------------------ ports
    def node_class(self, node_id: str) -> NodeClass | None:
        spec = self.flow.find_node(node_id)
        if spec is None or spec.type not in self.registry:
            return None
        return self.registry.get(spec.type)

    def parsed_config(self, spec: NodeSpec) -> BaseModel | None:
        if spec.type not in self.registry:
            return None
        try:
            return self.registry.get(spec.type).Config.model_validate(spec.config)
        except ValidationError:
            return None

    def ports(self, node_id: str) -> tuple[tuple[Port, ...], tuple[Port, ...]]:
        """(inputs, outputs) of a node for its current config (prompt variables add inputs)."""
        return self.spec_ports(self.flow.find_node(node_id))

    def spec_ports(self, spec: NodeSpec | None) -> tuple[tuple[Port, ...], tuple[Port, ...]]:
        """``ports`` of a node in hand (a walk over every node would look each one up again: n² on a big flow)."""
        if spec is None or spec.type not in self.registry:
            return (), ()
        cls = self.registry.get(spec.type)
        config = self.parsed_config(spec)
        return cls.input_ports(config), cls.output_ports(config)

    def _port(self, node_id: str, name: str, side: str) -> Port:
        spec = self.flow.find_node(node_id)
        if spec is None:
            raise InvalidConnectionError(f"There is no node '{node_id}'; nodes: {', '.join(self.flow.node_ids())}.")
        inputs, outputs = self.ports(node_id)
        ports = inputs if side == "input" else outputs
        for port in ports:
            if port.name == name:
                return port
        names = ", ".join(p.describe() for p in ports) or "none"
        raise InvalidConnectionError(f"Node '{spec.label}' has no {side} '{name}'; its {side}s: {names}.")

    # ------------------------------------------------------------------ nodes
    def add_node(self, type_name: str, x: float = 0.0, y: float = 0.0, name: str = "") -> str:
        cls = self.registry.get(type_name)  # UnknownNodeTypeError lists close matches
        self._snapshot()
        node_id = self.flow.new_id(type_name)
        # a readable name ("Vector Store Retriever 2"), not the id, on the new card
        name = name or unique_name(display_name(cls), {n.label for n in self.flow.nodes})
        self.flow.nodes.append(NodeSpec(id=node_id, type=cls.type_name, name=name))
        self.flow.layout.positions[node_id] = Position(x=x, y=y)
        return node_id

    def remove(self, ids: Iterable[str]) -> list[str]:
        """Delete nodes and/or notes (and the edges of deleted nodes). Returns what was removed."""
        wanted = set(ids)
        present = [i for i in self.flow.node_ids() if i in wanted] + [n.id for n in self.flow.notes if n.id in wanted]
        if not present:
            return []
        self._snapshot()
        gone = set(present)
        self.flow.nodes = [n for n in self.flow.nodes if n.id not in gone]
        self.flow.notes = [n for n in self.flow.notes if n.id not in gone]
        self.flow.edges = [e for e in self.flow.edges if e.source not in gone and e.target not in gone]
        for item_id in gone:
            self.flow.layout.positions.pop(item_id, None)
        return present

    def move(self, positions: dict[str, tuple[float, float]]) -> None:
        """Positions after a drag; one undo step per drag."""
        known = set(self.flow.node_ids()) | {n.id for n in self.flow.notes}
        changed = {
            i: p for i, p in positions.items() if i in known and (self.flow.position(i).x, self.flow.position(i).y) != p
        }
        if not changed:
            return
        self._snapshot()
        for item_id, (x, y) in changed.items():
            self.flow.layout.positions[item_id] = Position(x=x, y=y)

    def rename(self, node_id: str, name: str) -> None:
        spec = self.flow.node(node_id)
        if spec.name != name:
            self._snapshot(("name", node_id))
            spec.name = name

    def set_disabled(self, node_id: str, disabled: bool) -> None:
        spec = self.flow.node(node_id)
        if spec.disabled != disabled:
            self._snapshot()
            spec.disabled = disabled

    def config_errors(self, node_id: str, config: dict[str, Any]) -> dict[str, str]:
        """Pydantic's messages for a candidate config, keyed by top-level field (``""`` for the whole)."""
        cls = self.node_class(node_id)
        if cls is None:
            return {}
        try:
            cls.Config.model_validate(config)
        except ValidationError as exc:
            errors: dict[str, str] = {}
            for error in exc.errors():
                field = str(error["loc"][0]) if error["loc"] else ""
                errors.setdefault(field, error["msg"])
            return errors
        return {}

    def set_config_value(self, node_id: str, field: str, value: Any) -> dict[str, str]:
        """Set one config field if the whole config stays valid; returns the errors otherwise."""
        spec = self.flow.node(node_id)
        candidate = {**spec.config, field: value}
        errors = self.config_errors(node_id, candidate)
        if errors:
            return errors
        if spec.config.get(field, object()) != value:
            self._snapshot(("config", node_id, field))
            spec.config = candidate
            self._drop_dangling_edges(node_id)
        return {}

    def _drop_dangling_edges(self, node_id: str) -> None:
        """A config change can remove dynamic ports (a prompt variable); their edges go with them."""
        inputs, outputs = self.ports(node_id)
        if self.node_class(node_id) is None:
            return
        in_names = {p.name for p in inputs}
        out_names = {p.name for p in outputs}
        self.flow.edges = [
            e
            for e in self.flow.edges
            if not (e.target == node_id and e.target_port not in in_names)
            and not (e.source == node_id and e.source_port not in out_names)
        ]

    def set_credential_ref(self, node_id: str, slot: str, provider: str, name: str) -> None:
        spec = self.flow.node(node_id)
        ref = CredentialRef(provider=provider, name=name or "default")
        if spec.credentials.get(slot) != ref:
            self._snapshot(("cred", node_id, slot))
            spec.credentials[slot] = ref

    # ------------------------------------------------------------------ edges
    def check_connection(self, source: str, source_port: str, target: str, target_port: str) -> tuple[Port, Port]:
        """Both ports, or :class:`InvalidConnectionError` saying why (naming both types on a mismatch)."""
        out_port = self._port(source, source_port, "output")
        in_port = self._port(target, target_port, "input")
        if source == target:
            raise InvalidConnectionError("A node cannot feed itself.")
        if not compatible(out_port.type, in_port.type):
            hint = ""
            if out_port.kind is PortKind.SERVICE or in_port.kind is PortKind.SERVICE:
                hint = " (a service port only fits the same service type)"
            raise InvalidConnectionError(
                f"Cannot connect {out_port.type.value} to {in_port.type.value}: "
                f"{self.flow.node(source).label}.{out_port.name} outputs {out_port.type.value}, "
                f"{self.flow.node(target).label}.{in_port.name} expects {in_port.type.value}{hint}."
            )
        graph = nx.DiGraph([(e.source, e.target) for e in self.flow.edges])
        if graph.has_node(target) and graph.has_node(source) and nx.has_path(graph, target, source):
            raise InvalidConnectionError(f"Connecting {source} to {target} would make a cycle; flows must be acyclic.")
        return out_port, in_port

    def connect(self, source: str, source_port: str, target: str, target_port: str) -> Edge:
        """Add a checked edge. An input that takes one connection has its old edge replaced."""
        _, in_port = self.check_connection(source, source_port, target, target_port)
        edge = Edge(source=source, source_port=source_port, target=target, target_port=target_port)
        if any(e.key == edge.key for e in self.flow.edges):
            return edge
        self._snapshot()
        if not in_port.multiple:
            self.flow.edges = [e for e in self.flow.edges if not (e.target == target and e.target_port == target_port)]
        self.flow.edges.append(edge)
        return edge

    def disconnect(self, keys: Iterable[str]) -> int:
        wanted = set(keys)
        kept = [e for e in self.flow.edges if e.key not in wanted]
        removed = len(self.flow.edges) - len(kept)
        if removed:
            self._snapshot()
            self.flow.edges = kept
        return removed

    # ------------------------------------------------------------------ notes
    def add_note(self, text: str = "", x: float = 0.0, y: float = 0.0) -> str:
        self._snapshot()
        note_id = self.flow.new_id("note")
        self.flow.notes.append(Note(id=note_id, text=text, width=220, height=120))
        self.flow.layout.positions[note_id] = Position(x=x, y=y)
        return note_id

    def set_note_text(self, note_id: str, text: str) -> None:
        for note in self.flow.notes:
            if note.id == note_id and note.text != text:
                self._snapshot(("note", note_id))
                note.text = text

    # ------------------------------------------------------------------ clipboard
    def copy(self, ids: Iterable[str]) -> int:
        """Copy nodes/notes and the edges between them as native-flow JSON (pastable elsewhere)."""
        wanted = set(ids)
        nodes = [n for n in self.flow.nodes if n.id in wanted]
        notes = [n for n in self.flow.notes if n.id in wanted]
        if not nodes and not notes:
            return 0
        kept = {n.id for n in nodes}
        clip = Flow(
            name="clipboard",
            nodes=[n.model_copy(deep=True) for n in nodes],
            notes=[n.model_copy(deep=True) for n in notes],
            edges=[e for e in self.flow.edges if e.source in kept and e.target in kept],
        )
        for item_id in [*kept, *(n.id for n in notes)]:
            clip.layout.positions[item_id] = self.flow.position(item_id)
        self.clipboard = clip.model_dump_json()
        return len(nodes) + len(notes)

    def paste(self, offset: float = PASTE_OFFSET) -> list[str]:
        """Paste the clipboard with fresh ids, shifted by ``offset``; returns the new ids."""
        if not self.clipboard:
            return []
        clip = Flow.model_validate(json.loads(self.clipboard))
        self._snapshot()
        renamed: dict[str, str] = {}
        for spec in clip.nodes:
            new_id = self.flow.new_id(spec.id.rsplit("-", 1)[0] if spec.id[-1:].isdigit() else spec.id)
            renamed[spec.id] = new_id
            self.flow.nodes.append(spec.model_copy(update={"id": new_id}))
        for note in clip.notes:
            new_id = self.flow.new_id("note")
            renamed[note.id] = new_id
            self.flow.notes.append(note.model_copy(update={"id": new_id}))
        for edge in clip.edges:
            self.flow.edges.append(
                edge.model_copy(update={"source": renamed[edge.source], "target": renamed[edge.target]})
            )
        for old, new in renamed.items():
            pos = clip.position(old)
            self.flow.layout.positions[new] = Position(x=pos.x + offset, y=pos.y + offset)
        # Next paste lands a step further so repeated pastes don't stack exactly.
        for pos in clip.layout.positions.values():
            pos.x += offset
            pos.y += offset
        self.clipboard = clip.model_dump_json()
        return list(renamed.values())

    # ------------------------------------------------------------------ checks
    def issues(self, resolver: CredentialResolver | None = None, base_dir: Path | None = None) -> list[ValidationIssue]:
        """Every issue; ``base_dir`` is the flow's folder (which files it may read; its relative paths)."""
        folder = base_dir if base_dir is not None else self.folder()
        return analyze(self.flow, self.registry, resolver, base_dir=folder, flow_file=self.file()).issues

    def issues_by_node(
        self, resolver: CredentialResolver | None = None, base_dir: Path | None = None
    ) -> dict[str, list[ValidationIssue]]:
        return by_node(self.issues(resolver, base_dir))

    # ------------------------------------------------------------------ layout
    def auto_layout(self, aspect: float = CANVAS_ASPECT) -> None:
        """Layered left-to-right layout by topological generation; service sub-nodes go UNDER the node
        that uses them (n8n's "tidy up"): an embedder sits below its vector store, a model below its agent.
        Unconnected parts are packed in rows to ``aspect`` (the canvas's width / height).

        This is the layout without a browser (CLI, tests, the first paint of an import). With a canvas on
        screen the page then asks ELK for the real one (:meth:`layout_request`, :meth:`apply_layout`) and
        ``refine_layout`` says that it should.
        """
        if not self.flow.nodes:
            return
        self._snapshot(LAYOUT_STEP)
        self.refine_layout = True
        ids = self.flow.node_ids()
        flow_edges, owner = self._layout_graph()
        sizes = self._card_sizes()
        trees = _ServiceTrees(owner, {n: sizes[n][1] for n in ids})
        graph = nx.DiGraph()  # the main nodes, linked where anything in their trees is
        graph.add_nodes_from(n for n in ids if n not in owner)
        for edge in flow_edges:
            a, b = trees.root_of(edge.source), trees.root_of(edge.target)
            if a != b:
                graph.add_edge(a, b)
        # Notes that framed nodes before the layout frame the same nodes after it (n8n sticky notes).
        members = note_members(self.flow, sizes)
        self._framed = members  # what the notes framed in the file: the browser's layout keeps it
        framed_by = {m: note_id for note_id, ms in members.items() for m in ms}
        headers = {note.id: note_header_height(note.text) for note in self.flow.notes}
        # Each connected part gets its own band, in its old top-to-bottom order, so frames never overlap.
        old = {n: (self.flow.position(n).y, self.flow.position(n).x) for n in ids}
        parts = sorted(
            (sorted(part) for part in nx.weakly_connected_components(graph)),
            key=lambda part: min(old[n] for n in part),
        )
        boxes: list[tuple[list[str], float, float]] = []  # each part laid out alone: its nodes, width, height
        for part in parts:
            everything = [n for n in ids if trees.root_of(n) in set(part)]
            frames = {framed_by[n] for n in everything if n in framed_by}
            top = max((headers[f] for f in frames), default=0.0)
            width, bottom = self._lay_out_part(graph.subgraph(part), trees, top)
            boxes.append((everything, width, bottom + (FRAME_PAD if frames else 0.0)))
        # Parts side by side in rows about as wide as the window's shape asks (one column of 125 chains would be
        # fitted at a zoom where a card is a hairline), in their old top-to-bottom order.
        positions = self.flow.layout.positions
        for (everything, _, _), (left, top) in zip(boxes, shelf_pack([b[1:] for b in boxes], aspect), strict=True):
            for node_id in everything:
                positions[node_id] = Position(x=positions[node_id].x + left, y=positions[node_id].y + top)
        self._place_notes(members, headers, sizes)

    def _lay_out_part(self, part: nx.DiGraph, trees: _ServiceTrees, top: float) -> tuple[float, float]:
        """One connected part from (0, ``top``): a column per topological generation (one column for a part with
        a cycle), each main node's service tree below it; returns the part's width and bottom."""
        generations = (
            [sorted(g) for g in nx.topological_generations(part)]
            if nx.is_directed_acyclic_graph(part)
            else [sorted(part.nodes)]
        )
        positions = self.flow.layout.positions
        x = 0.0
        bottom = top
        for generation in generations:
            column_width = max(trees.width(n) for n in generation)
            y = top
            for node_id in generation:
                node_x = x + column_width / 2 - NODE_WIDTH / 2
                positions[node_id] = Position(x=node_x, y=y)
                trees.place_children(node_id, node_x, y, positions)
                y += trees.height(node_id) + ROW_GAP
            bottom = max(bottom, y - ROW_GAP)
            x += column_width + COLUMN_GAP
        return x - COLUMN_GAP, bottom

    def layout_request(self) -> dict[str, Any]:
        """What the canvas's ELK layout needs (frontend/src/layout.mjs): nodes with estimated card sizes and
        data ports (the browser measures the real ones), service sub-nodes' owners, links, and the notes with
        the nodes each frames now (a note that frames none is placed beside the flow at its own size)."""
        flow_edges, owner = self._layout_graph()
        sizes = self._card_sizes()
        nodes = []
        for node_id, (width, height) in sizes.items():
            inputs, outputs = self.ports(node_id)
            nodes.append(
                {
                    "id": node_id,
                    "width": width,
                    "height": height,
                    "inputs": [{"name": p.name} for p in inputs if p.kind is PortKind.DATA],
                    "outputs": [{"name": p.name} for p in outputs if p.kind is PortKind.DATA],
                }
            )
        # after the fallback layout of an import, what the notes framed in the file (that layout may have
        # drawn a frame over a card it did not frame)
        members = self._framed if self.refine_layout else note_members(self.flow, sizes)
        notes = [
            {
                "id": note.id,
                "members": members.get(note.id, []),
                "header": note_header_height(note.text),
                "width": note.width or 220.0,
                "height": note.height or 120.0,
            }
            for note in self.flow.notes
        ]
        edges = [
            {"source": e.source, "sourceHandle": e.source_port, "target": e.target, "targetHandle": e.target_port}
            for e in flow_edges
        ]
        return {"nodes": nodes, "owner": owner, "edges": edges, "notes": notes}

    def apply_layout(self, result: dict[str, Any]) -> bool:
        """Take the browser's layout (``{positions: {id: {x, y}}, notes: {id: {x, y, width, height}},
        sizes: {id: [w, h]}}``): one undo step with a fallback layout just before it. Notes it did not place
        keep their place unless they now cover a card. False (nothing changed) when it does not place every
        node."""
        positions = result.get("positions") if isinstance(result, dict) else None
        if not isinstance(positions, dict):
            return False
        placed: dict[str, Position] = {}
        for node_id in self.flow.node_ids():
            point = _point(positions.get(node_id))
            if point is None:
                return False
            placed[node_id] = Position(x=point[0], y=point[1])
        self._snapshot(LAYOUT_STEP)
        self.refine_layout = False
        self.flow.layout.positions.update(placed)
        framed: set[str] = set()
        for note in self.flow.notes:
            box = result.get("notes", {}).get(note.id)
            point = _point(box)
            if point is None or not isinstance(box, dict):
                continue
            width, height = _point({"x": box.get("width"), "y": box.get("height")}) or (0.0, 0.0)
            if width > 0 and height > 0:
                self.flow.layout.positions[note.id] = Position(x=point[0], y=point[1])
                note.width, note.height = width, height
                framed.add(note.id)
        sizes = self._card_sizes()
        for node_id, size in (result.get("sizes") or {}).items():
            wh = _point({"x": size[0], "y": size[1]}) if isinstance(size, list) and len(size) == 2 else None
            if node_id in sizes and wh is not None:
                sizes[node_id] = wh
        self._place_notes({}, {}, sizes, keep=framed)
        return True

    def _layout_graph(self) -> tuple[list[Edge], dict[str, str]]:
        """The edges between known nodes, and each service sub-node's owner.

        A node is a *sub-node* when it has outgoing edges, all of them from service ports, and no
        incoming data edges. Its owner is its first consumer (by id).
        """
        ids = self.flow.node_ids()
        # A dangling edge (its node deleted or never imported) has nothing to lay out.
        known = set(ids)
        flow_edges = [e for e in self.flow.edges if e.source in known and e.target in known]
        service_out: dict[str, bool] = {}
        for edge in flow_edges:
            try:
                port = self._port(edge.source, edge.source_port, "output")
                is_service = port.kind is PortKind.SERVICE
            except InvalidConnectionError:
                is_service = False
            service_out[edge.key] = is_service
        out_edges: dict[str, list[Edge]] = defaultdict(list)
        data_in: dict[str, int] = defaultdict(int)
        for edge in flow_edges:
            out_edges[edge.source].append(edge)
            if not service_out[edge.key]:
                data_in[edge.target] += 1
        owner: dict[str, str] = {}
        for node_id in ids:
            edges = out_edges.get(node_id, [])
            if edges and all(service_out[e.key] for e in edges) and not data_in.get(node_id):
                owner[node_id] = sorted(e.target for e in edges)[0]
        # An owner chain that loops back (never in a valid flow) would recurse forever: break it.
        for node_id in list(owner):
            seen = {node_id}
            cur = owner.get(node_id)
            while cur is not None and cur in owner:
                if cur in seen:
                    owner.pop(node_id, None)
                    break
                seen.add(cur)
                cur = owner.get(cur)
        return flow_edges, owner

    def _place_notes(
        self,
        members: dict[str, list[str]],
        headers: dict[str, float],
        sizes: dict[str, tuple[float, float]],
        keep: set[str] | None = None,
    ) -> None:
        """Frame notes around their members; free notes keep their place unless they now cover a node,
        then they go in a row above the flow. Notes in ``keep`` are already placed."""
        positions = self.flow.layout.positions
        boxes = [(positions[n].x, positions[n].y, w, h) for n, (w, h) in sizes.items() if n in positions]
        top = min((b[1] for b in boxes), default=0.0)
        free_x = min((b[0] for b in boxes), default=0.0)
        for note in self.flow.notes:
            if keep and note.id in keep:
                continue
            mine = [n for n in members.get(note.id, []) if n in positions]
            if mine:
                left = min(positions[n].x for n in mine) - FRAME_PAD
                upper = min(positions[n].y for n in mine) - FRAME_PAD - headers[note.id]
                right = max(positions[n].x + sizes[n][0] for n in mine) + FRAME_PAD
                lower = max(positions[n].y + sizes[n][1] for n in mine) + FRAME_PAD
                positions[note.id] = Position(x=left, y=upper)
                note.width, note.height = right - left, lower - upper
                continue
            pos = self.flow.position(note.id)
            width, height = note.width or 220.0, note.height or 120.0
            if note.id in positions and not any(_overlap((pos.x, pos.y, width, height), b) for b in boxes):
                continue
            positions[note.id] = Position(x=free_x, y=top - height - FRAME_PAD - 60)
            free_x += width + 20

    def needs_layout(self) -> bool:
        """True when node cards drawn at the stored positions would overlap (n8n places its small
        round nodes closer than our cards are wide) or no node has a position at all."""
        return positions_overlap(self.flow, self._card_sizes())

    def _card_sizes(self) -> dict[str, tuple[float, float]]:
        sizes = {}
        for spec in self.flow.nodes:
            inputs, outputs = self.spec_ports(spec)
            side_in = [p for p in inputs if p.kind is PortKind.DATA]
            side_out = [p for p in outputs if p.kind is PortKind.DATA]
            sizes[spec.id] = (NODE_WIDTH, node_height(len(side_in), len(side_out)))
        return sizes

    def free_spot(self, x: float, y: float, width: float, height: float) -> tuple[float, float]:
        """(x, y), or a place above the cards if a box there would sit under one (notes are drawn behind)."""
        boxes = [(self.flow.position(n).x, self.flow.position(n).y, *wh) for n, wh in self._card_sizes().items()]
        while any(_overlap((x, y, width, height), b) for b in boxes):
            y = min(b[1] for b in boxes if _overlap((x, y, width, height), b)) - height - 20
        return x, y

    def resize_note(self, note_id: str, width: float, height: float) -> None:
        for note in self.flow.notes:
            if note.id == note_id and (note.width, note.height) != (width, height):
                self._snapshot(("note-size", note_id))
                note.width, note.height = max(120.0, width), max(60.0, height)


class _ServiceTrees:
    """Service sub-nodes hung under the node that uses them (an embedder under its store, a model under its
    agent): each main node's tree, how wide and tall it is, and where its sub-nodes go."""

    def __init__(self, owner: dict[str, str], heights: dict[str, float]) -> None:
        self.owner = owner
        self.heights = heights
        self.children: dict[str, list[str]] = defaultdict(list)
        for child, parent in sorted(owner.items()):
            self.children[parent].append(child)

    def root_of(self, node_id: str) -> str:
        """The main node whose tree holds ``node_id`` (itself when it is one)."""
        while node_id in self.owner:
            node_id = self.owner[node_id]
        return node_id

    def width(self, node_id: str) -> float:
        """The tree's width: its sub-trees side by side, at least a card."""
        kids = self.children.get(node_id, [])
        if not kids:
            return NODE_WIDTH
        return max(NODE_WIDTH, sum(self.width(k) for k in kids) + COLUMN_GAP / 2 * (len(kids) - 1))

    def height(self, node_id: str) -> float:
        """The tree's height: the card, then its tallest sub-tree below it."""
        kids = self.children.get(node_id, [])
        below = max((self.height(k) for k in kids), default=-SUB_GAP)
        return self.heights[node_id] + SUB_GAP + below

    def place_children(self, node_id: str, x: float, y: float, positions: dict[str, Position]) -> None:
        """Centre the sub-trees of the card at (x, y) in a row below it, recursively."""
        kids = self.children.get(node_id, [])
        if not kids:
            return
        total = sum(self.width(k) for k in kids) + COLUMN_GAP / 2 * (len(kids) - 1)
        cursor = x + NODE_WIDTH / 2 - total / 2
        child_y = y + self.heights[node_id] + SUB_GAP
        for kid in kids:
            width = self.width(kid)
            kid_x = cursor + width / 2 - NODE_WIDTH / 2
            positions[kid] = Position(x=kid_x, y=child_y)
            self.place_children(kid, kid_x, child_y, positions)
            cursor += width + COLUMN_GAP / 2


def shelf_pack(sizes: list[tuple[float, float]], aspect: float = CANVAS_ASPECT) -> list[tuple[float, float]]:
    """Top-left corners for boxes (width, height) placed in order in rows, :data:`PART_GAP` apart, the row width
    chosen so that the whole is fitted at the largest zoom into an area of shape ``aspect`` (width / height)
    (frontend/src/layout.mjs packs ELK's parts the same way)."""
    if not sizes:
        return []
    aspect = min(4.0, max(0.5, aspect))
    widest, total = max(w for w, _ in sizes), sum(w + PART_GAP for w, _ in sizes)
    # a few dozen row widths from one box a row to all in one: the one whose packing needs the least zoom-out
    steps = 48
    candidates = [widest + (total - widest) * (i / steps) ** 2 for i in range(steps + 1)]
    packings = [_shelves(sizes, width) for width in candidates]
    return min(packings, key=lambda packed: max(packed[1] / aspect, packed[2]))[0]


def _shelves(sizes: list[tuple[float, float]], row_width: float) -> tuple[list[tuple[float, float]], float, float]:
    """Corners of ``sizes`` in rows at most ``row_width`` wide (a wider box alone), and the width and height used."""
    corners = []
    x = y = row_height = used = 0.0
    for w, h in sizes:
        if x > 0 and x + w > row_width:
            x, y, row_height = 0.0, y + row_height + PART_GAP, 0.0
        corners.append((x, y))
        used = max(used, x + w)
        x += w + PART_GAP
        row_height = max(row_height, h)
    return corners, used, y + row_height


def _point(value: Any) -> tuple[float, float] | None:
    """(x, y) from ``{"x": .., "y": ..}`` when both are finite numbers (the browser's answer is checked)."""
    if not isinstance(value, dict):
        return None
    x, y = value.get("x"), value.get("y")
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y))
    if not numbers or not math.isfinite(x) or not math.isfinite(y):  # type: ignore[arg-type]
        return None
    return float(x), float(y)  # type: ignore[arg-type]


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _covered(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Share of the smaller card that the other one covers."""
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(0.0, w) * max(0.0, h) / min(a[2] * a[3], b[2] * b[3])


def positions_overlap(flow: Flow, sizes: dict[str, tuple[float, float]]) -> bool:
    """True when the cards would be unreadable where they stand: a quarter of one card under another
    (n8n's small round nodes sit closer than our cards are wide), no positions at all, or so sparse
    (LangFlow's cards are twice as big as ours) that fitting the flow shrinks every title."""
    placed = [n for n in sizes if n in flow.layout.positions]
    if sizes and not placed:
        return True
    boxes = [(flow.position(n).x, flow.position(n).y, *sizes[n]) for n in placed]
    # a grid of card-sized cells: only cards sharing a cell can overlap (500 nodes: milliseconds)
    cells: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, (x, y, w, h) in enumerate(boxes):
        for cx in range(int(x // NODE_WIDTH), int((x + w) // NODE_WIDTH) + 1):
            for cy in range(int(y // 100), int((y + h) // 100) + 1):
                cells[(cx, cy)].append(index)
    for members in cells.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if _covered(boxes[a], boxes[b]) > OVERLAP_SHARE:
                    return True
    if len(boxes) < 3:
        return False
    width = max(b[0] + b[2] for b in boxes) - min(b[0] for b in boxes)
    height = max(b[1] + b[3] for b in boxes) - min(b[1] for b in boxes)
    return sum(b[2] * b[3] for b in boxes) / (width * height) < SPARSE_DENSITY


def note_members(flow: Flow, sizes: dict[str, tuple[float, float]]) -> dict[str, list[str]]:
    """Note id -> the nodes whose top-left corner lies inside it (the smallest such note wins)."""
    found: dict[str, list[str]] = defaultdict(list)
    notes = [n for n in flow.notes if n.id in flow.layout.positions and n.width and n.height]
    for node_id in sizes:
        if node_id not in flow.layout.positions:
            continue
        p = flow.position(node_id)
        inside = [
            n
            for n in notes
            if flow.position(n.id).x <= p.x <= flow.position(n.id).x + (n.width or 0)
            and flow.position(n.id).y <= p.y <= flow.position(n.id).y + (n.height or 0)
        ]
        if inside:
            smallest = min(inside, key=lambda n: (n.width or 0) * (n.height or 0))
            found[smallest.id].append(node_id)
    return dict(found)


def note_header_height(text: str, width: float = 460.0) -> float:
    """Room a framing note keeps above its nodes for its own text (a rough line count at 7 px/char)."""
    chars_per_line = max(20, int(width / 7))
    lines = sum(max(1, -(-len(line) // chars_per_line)) for line in text.strip().splitlines()) if text.strip() else 0
    return min(220.0, 28.0 + 20.0 * lines)


def by_node(issues: list[ValidationIssue]) -> dict[str, list[ValidationIssue]]:
    """The issues that name a node, grouped by it (the canvas marks each card with its own)."""
    grouped: dict[str, list[ValidationIssue]] = defaultdict(list)
    for issue in issues:
        if issue.node_id is not None:
            grouped[issue.node_id].append(issue)
    return dict(grouped)
