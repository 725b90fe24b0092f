"""Layouts that read: an imported flow whose cards overlap is laid out in the browser by ELK's layered
algorithm (frontend/src/layout.mjs, static/dist/layout.js) with the cards measured there, and the positions
come back to Python and are saved in the flow. At 1280x720 and 1440x900, for the overlapping public n8n
exports, the n8n course flow and an export with overlapping positions: no two cards overlap, every card is
on screen after fit, each note frames exactly the nodes it framed in the file, and no link passes under a
card it does not connect. The Auto-layout button uses the same layout."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen

from flowbuilder.flow import Flow
from flowbuilder.ui.session import PAGES
from flowbuilder.ui.state import EditorState, note_members

from .conftest import N8N_COURSE_FILE
from .test_browser import click_import, css, send_file, wait_settled, wait_stable, wait_until
from .test_canvas_window import OVERLAPPING_EXPORT, SIZES, check_view

pytestmark = pytest.mark.browser

PUBLIC = Path(__file__).resolve().parents[1] / "formats" / "corpus_public"
# the public n8n exports whose cards overlap where the file puts them (EditorState.needs_layout)
OVERLAPPING = [
    PUBLIC / "n8n__2395_supabase_insert_upsert_retrieve.json",
    PUBLIC / "n8n__5734_simple_rag_pinecone_rerank.json",
    N8N_COURSE_FILE,
    OVERLAPPING_EXPORT,
]

RECTS_JS = """
const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
const all = (sel) => Object.fromEntries([...document.querySelectorAll(sel)].map((el) => [el.dataset.id, rect(el)]));
return { cards: all('.vue-flow__node-fbnode'), notes: all('.vue-flow__node-fbnote') };
"""


def inside(inner: list[float], outer: list[float]) -> bool:
    return (
        outer[0] - 1 <= inner[0]
        and inner[0] + inner[2] <= outer[0] + outer[2] + 1
        and outer[1] - 1 <= inner[1]
        and inner[1] + inner[3] <= outer[1] + outer[3] + 1
    )


def meets(a: list[float], b: list[float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def wait_layout(screen: Screen, count: int) -> str:
    """Wait for the page's ``count``-th layout; returns how it was made ("elk" or "python")."""
    done = wait_until(
        lambda: css(screen, f'.fb-wrap[data-layout$="-{count}"]'), timeout=90
    )  # ELK's 1.5 MB is loaded on first use; the machine is shared
    wait_settled(screen)  # applied and fitted
    return str(done[0].get_attribute("data-layout")).split("-")[0]  # type: ignore[index]


def close_buttons(screen: Screen) -> list:  # type: ignore[type-arg]
    return [b for b in css(screen, ".fb-import-report-dialog button") if b.is_displayed() and b.text == "CLOSE"]


def import_file(screen: Screen, path: Path) -> None:
    """Import through the header's dialog (generous waits: the machine is shared) and close its report."""
    click_import(screen)
    send_file(screen, '.fb-import-upload input[type="file"]', path)
    for attempt in range(3):  # a click that lands while the report is still being drawn can be lost (seen once in CI)
        wait_until(lambda: close_buttons(screen), timeout=90)
        # a click during the dialog's opening animation can miss: click once it stands still
        wait_stable(lambda: [b.rect for b in close_buttons(screen)], what="the import report's Close button")
        wait_until(lambda: close_buttons(screen)[0].click() or True, what="a click on Close")
        try:
            wait_until(lambda: not css(screen, ".fb-import-report-dialog"), timeout=10 if attempt < 2 else 30)
            return
        except AssertionError:
            if attempt == 2:
                raise


def open_page(screen: Screen) -> None:
    screen.selenium.set_page_load_timeout(60)  # a shared 2-core machine: the first load can take seconds
    screen.open("/", timeout=60)
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=60)


def check_frames(screen: Screen, source: Flow, label: str) -> int:
    """Every note frames the cards it framed in the file, and no other card. Returns the frames checked."""
    state = EditorState(source)
    members = note_members(source, state._card_sizes())
    _, owner = state._layout_graph()

    def root(node_id: str) -> str:
        while node_id in owner:
            node_id = owner[node_id]
        return node_id

    got = screen.selenium.execute_script(RECTS_JS)
    for note_id, framed in members.items():
        # a framed card's sub-nodes may go with it (a shared one stands apart, between its consumers)
        ids, either = set(framed), {n for n in got["cards"] if root(n) in framed} - set(framed)
        frame = got["notes"][note_id]
        for node_id, card in got["cards"].items():
            if node_id in either:
                continue
            if node_id in ids:
                assert inside(card, frame), (label, note_id, node_id, card, frame)
            else:
                assert not meets(card, frame), (label, note_id, "frames", node_id, card, frame)
    return len(members)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_overlapping_imports_are_laid_out_by_elk(screen: Screen, builder: Callable[..., None], size: tuple) -> None:
    builder()
    screen.selenium.set_window_size(*size)
    open_page(screen)
    page = list(PAGES.values())[-1]  # the server runs in this process
    tag = f"{size[0]}x{size[1]}"
    framed = 0
    for count, path in enumerate(OVERLAPPING, start=1):
        import_file(screen, path)
        assert wait_layout(screen, count) == "elk", path.name
        label = f"elk-{path.stem[:24]}-{tag}"
        check_view(screen, len(page.state.flow.nodes), label)  # on screen, no overlap, no link under a card
        source = Flow.model_validate_json(page.state._undo[-1])  # the file's own layout: one undo step back
        assert EditorState(source).needs_layout(), path.name  # (the file's cards do overlap)
        framed += check_frames(screen, source, label)
        # the positions are ELK's, in the flow that is saved, and not those of the Python fallback
        fallback = EditorState(Flow.model_validate_json(page.state._undo[-1]))
        fallback.auto_layout()
        ids = page.state.flow.node_ids()
        placed = {n: page.state.flow.position(n) for n in ids}
        assert placed != {n: fallback.flow.position(n) for n in ids}, path.name
        assert not page.state.needs_layout(), path.name
    assert framed >= 6  # the course flow's three notes and the public exports' notes were all checked


def test_auto_layout_button_uses_elk_and_undo_restores(screen: Screen, builder: Callable[..., None]) -> None:
    builder()
    screen.selenium.set_window_size(1280, 720)
    open_page(screen)
    page = list(PAGES.values())[-1]
    import_file(screen, PUBLIC / "n8n__5734_simple_rag_pinecone_rerank.json")
    wait_layout(screen, 1)
    source = Flow.model_validate_json(page.state._undo[-1])
    # one undo step brings back the file's own positions (the fallback and ELK's layout are one step)
    page.state.undo()
    page.refresh()
    assert page.state.flow.layout.positions == source.layout.positions
    # the header's Auto-layout button lays it out again, with ELK
    wait_until(lambda: css(screen, ".vue-flow__node-fbnode"))
    next(b for b in css(screen, "button") if b.text.strip() == "account_tree").click()
    assert wait_layout(screen, 2) == "elk"
    check_view(screen, len(page.state.flow.nodes), "elk-button-1280x720")
    check_frames(screen, source, "elk-button")
