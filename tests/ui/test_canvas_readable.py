"""Imported course flows open readable in headless Chromium: notes are frames behind the nodes with their
markdown rendered, no card hides another, node titles are at least 11 px on screen; notes resize and edit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen
from selenium.webdriver import ActionChains

from flowbuilder.ui.session import PAGES

from .conftest import LANGFLOW_COURSE_FILE, N8N_COURSE_FILE
from .test_browser import click_import, css, open_builder, send_file, shot, wait_settled, wait_until

pytestmark = pytest.mark.browser

# Screen rectangles of every node card and note, the title's on-screen font size and the notes' z-index.
GEOMETRY_JS = """
const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
const cards = [...document.querySelectorAll('.vue-flow__node-fbnode')].map((el) => ({
  id: el.dataset.id, rect: rect(el), z: Number(getComputedStyle(el).zIndex) || 0,
  // the title as shown: the card's title, or its chip when the canvas is zoomed far out
  title: (() => { const chip = el.querySelector('.fb-chip span');
    const t = chip && chip.checkVisibility() ? chip : el.querySelector('.fb-title');
    return parseFloat(getComputedStyle(t).fontSize) * t.getBoundingClientRect().height / t.offsetHeight; })() }));
const notes = [...document.querySelectorAll('.vue-flow__node-fbnote')].map((el) => ({
  id: el.dataset.id, rect: rect(el), z: Number(getComputedStyle(el).zIndex) || 0,
  html: el.querySelector('.fb-note-md') ? el.querySelector('.fb-note-md').innerHTML : '' }));
return { cards, notes };
"""


def covered(a: list[float], b: list[float]) -> float:
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(0.0, w) * max(0.0, h) / min(a[2] * a[3], b[2] * b[3])


def import_file(screen: Screen, path: Path) -> None:
    click_import(screen)
    send_file(screen, '.fb-import-upload input[type="file"]', path)
    screen.should_contain("Import report")
    wait_until(lambda: not css(screen, '.vue-flow__node[data-id="splitter"]'))
    wait_settled(screen)  # laid out, fitted, measured


def geometry(screen: Screen) -> dict:  # type: ignore[type-arg]
    return screen.selenium.execute_script(GEOMETRY_JS)  # type: ignore[no-any-return]


def test_n8n_course_flow_opens_with_notes_as_frames_behind_readable_nodes(
    screen: Screen, builder: Callable[..., None]
) -> None:
    open_builder(screen, builder)
    import_file(screen, N8N_COURSE_FILE)
    shot(screen, "readable-n8n-import")
    geo = geometry(screen)
    cards, notes = geo["cards"], geo["notes"]
    assert len(cards) == 12 and len(notes) == 3
    # notes are drawn behind every card
    assert max(n["z"] for n in notes) < min(c["z"] for c in cards)
    # markdown rendered, not shown raw
    phase1 = next(n for n in notes if "Phase 1" in n["html"])
    assert "<h2>Phase 1 - Ingestion</h2>" in phase1["html"] and "##" not in phase1["html"]
    # no card hides part of another (they all sat under the notes, 160 px apart, before)
    worst = max(covered(a["rect"], b["rect"]) for i, a in enumerate(cards) for b in cards[i + 1 :])
    assert worst == 0.0, worst
    # the ingestion nodes are inside the Phase 1 frame (the frame survived the layout)
    page = next(iter(PAGES.values()))
    flow = page.state.flow
    assert page.state.flow.position("store-the-docs-to-vector-db").y < flow.position("rag-agent").y
    by_id = {c["id"]: c["rect"] for c in cards}
    for node_id in ("on-form-submission", "recursive-character-text-splitter"):
        r, f = by_id[node_id], phase1["rect"]
        assert f[0] <= r[0] and f[1] <= r[1] and r[0] + r[2] <= f[0] + f[2] and r[1] + r[3] <= f[1] + f[3]
    # titles readable on screen: at least 11 px (the flow is panned, not shrunk, to get there)
    assert min(c["title"] for c in cards) >= 10.9, min(c["title"] for c in cards)


def test_langflow_course_flow_opens_readable(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    import_file(screen, LANGFLOW_COURSE_FILE)
    shot(screen, "readable-langflow-import")
    cards = geometry(screen)["cards"]
    assert len(cards) == 9
    assert min(c["title"] for c in cards) >= 10.9
    assert max(covered(a["rect"], b["rect"]) for i, a in enumerate(cards) for b in cards[i + 1 :]) == 0.0
    # LangFlow's spacing is for cards twice our size: the layout packs the flow (9 cards span < 4 screens)
    xs = [c["rect"][0] for c in cards]
    assert max(xs) - min(xs) < 4 * 1000


def test_note_resizes_from_its_corner_and_edits_as_markdown(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    page = next(iter(PAGES.values()))
    add = next(b for b in css(screen, "header button") if "sticky_note_2" in b.text)
    add.click()
    wait_until(lambda: page.state.flow.notes, timeout=30)
    note_el = wait_until(lambda: css(screen, ".vue-flow__node-fbnote"))[0]  # type: ignore[index]
    note_id = page.state.flow.notes[0].id
    width0 = note_el.rect["width"]
    corner = note_el.find_element("css selector", ".fb-note-resize")
    ActionChains(screen.selenium).move_to_element(corner).click_and_hold().move_by_offset(80, 60).release().perform()
    wait_until(lambda: (page.state.flow.notes[0].width or 0) > 250)
    assert css(screen, ".vue-flow__node-fbnote")[0].rect["width"] > width0 + 40
    # double-click edits; blur saves; the view shows rendered markdown
    ActionChains(screen.selenium).double_click(css(screen, ".fb-note-md")[0]).perform()
    area = wait_until(lambda: css(screen, ".fb-note textarea"))[0]  # type: ignore[index]
    area.send_keys("## Ingest\n**bold** <b>raw</b>")
    screen.selenium.execute_script("arguments[0].blur()", area)
    wait_until(lambda: css(screen, ".fb-note-md h2"))
    html = css(screen, ".fb-note-md")[0].get_attribute("innerHTML")
    assert "<strong>bold</strong>" in html and "&lt;b&gt;raw&lt;/b&gt;" in html  # imported HTML never runs
    assert page.state.flow.notes[0].id == note_id and "**bold**" in page.state.flow.notes[0].text
    shot(screen, "note-resized-edited")


def body_text(screen: Screen) -> str:
    return str(screen.selenium.execute_script("return document.body.innerText"))


def test_import_dialog_runs_offline_and_speaks_ui(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    click_import(screen)
    screen.should_contain("Run offline (swap cloud providers for local ones)")
    shot(screen, "import-dialog")
    screen.click("Run offline (swap cloud providers for local ones)")
    send_file(screen, '.fb-import-upload input[type="file"]', N8N_COURSE_FILE)
    screen.should_contain("Running offline: 5 cloud component(s) swapped for local ones")
    shot(screen, "import-offline-report")
    page = next(iter(PAGES.values()))
    types = {n.type for n in page.state.flow.nodes}
    assert not types & {"embedder.openai", "llm.openai", "vectorstore.pinecone"}
    assert "Keys to bind" not in body_text(screen)
    assert not [i for i in page.state.issues(page.session.resolver) if i.code == "missing-credential"]
    # offline, both Pinecone nodes became one embedded Chroma collection: the writer -> reader dependency is
    # drawn as a dashed, read-only "same collection" link (no connection exists between them)
    screen.click("Close")
    link = wait_until(lambda: css(screen, ".vue-flow__edge.fb-implicit"))[0]  # type: ignore[index]
    assert link.get_attribute("data-id") == "implicit:store-the-docs-to-vector-db->pinecone-vector-store"
    assert "same collection" in body_text(screen)
    dash = link.find_element("css selector", ".vue-flow__edge-path").get_attribute("style") or ""
    assert "stroke-dasharray" in dash
    assert len(page.state.flow.edges) == 10  # drawn only: not part of the flow
    shot(screen, "implicit-link")


def test_import_report_binds_one_key_per_account(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    import_file(screen, N8N_COURSE_FILE)
    text = body_text(screen)
    assert "Keys to bind" in text and "--cred" not in text and "OPENAI_API_KEY" not in text
    rows = css(screen, ".fb-import-account")
    # 5 key slots, 3 accounts: OpenAI "OpenAI account" (2 nodes), OpenAI "n8n free OpenAI API credits", Pinecone (2)
    assert len(rows) == 3, [r.text for r in rows]
    pinecone = next(r for r in rows if "Pinecone" in r.text)
    assert "Store the Docs to Vector DB" in pinecone.text and "Pinecone Vector Store" in pinecone.text
    shot(screen, "import-report-accounts")
    pinecone.find_element("css selector", ".fb-bind-key").click()
    secret = wait_until(lambda: css(screen, ".fb-bind-dialog input"))[0]  # type: ignore[index]
    secret.send_keys("pc-test-KEY-42")
    next(b for b in css(screen, ".fb-bind-dialog button") if b.text.strip().lower() == "bind").click()
    wait_until(lambda: any("Pinecone" in r.text and "bound" in r.text for r in css(screen, ".fb-import-account")))
    page = next(iter(PAGES.values()))
    explicit = page.session.resolver.explicit
    pinecone_account = page.state.flow.node("store-the-docs-to-vector-db").credentials["api_key"].name
    assert explicit[f"pinecone/{pinecone_account}"] == "pc-test-KEY-42"  # one account, both Pinecone nodes
    assert page.state.flow.node("pinecone-vector-store").credentials["api_key"].name == pinecone_account
    assert "pc-test-KEY-42" not in page.state.flow.model_dump_json()
    assert "pc-test-KEY-42" not in str(screen.selenium.page_source)
    screen.click("Close")
    # the issues left name the account, each with its own "Bind a key" button
    overview = wait_until(lambda: css(screen, ".fb-overview-issue"))
    assert len(overview) == 3  # type: ignore[arg-type]
    assert all(o.find_elements("css selector", ".fb-bind-key") for o in overview)  # type: ignore[union-attr]
    assert "No OpenAI key bound (account “OpenAI account”)" in body_text(screen) and "--cred" not in body_text(screen)
