"""The first hour in the builder, at 1280x720 in headless Chromium (issue 33): ports can be connected at the
zoom a flow opens at (and from a chip's edge far out), the first question is answered by keyword search while the
store fills, the chat follows the conversation, overlays give way to the cards and dialogs, a 500-node flow reads,
and nothing unsaved is replaced without asking. Each test leaves a screenshot in /tmp/shots/."""

from __future__ import annotations

import csv
import itertools
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nicegui.testing import Screen
from selenium.webdriver import ActionChains
from selenium.webdriver.common.keys import Keys

from flowbuilder.examples import example_flow
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.ui.session import PAGES
from flowbuilder.ui.state import EditorState
from flowbuilder.ui.widgets import notify
from tests.serve.test_concurrent_search import search_flow, small_csv

from .conftest import N8N_COURSE_FILE
from .test_browser import click_import, css, drag, handle, shot, wait_stable, wait_until
from .test_canvas_readable import import_file

pytestmark = pytest.mark.browser

SIZE = (1280, 720)
LEVEL_JS = "return [...document.querySelector('.fb-wrap').classList].find((c) => c.startsWith('fb-detail-'))"
ZOOM_JS = "return parseFloat(getComputedStyle(document.querySelector('.fb-wrap')).getPropertyValue('--fb-zoom'))"
WHEEL_JS = """
const pane = document.querySelector('.vue-flow__pane'), r = pane.getBoundingClientRect();
pane.dispatchEvent(new WheelEvent('wheel', { deltaY: arguments[0], clientX: r.left + r.width / 2,
  clientY: r.top + r.height / 2, bubbles: true, cancelable: true }));
"""
RECT_JS = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];"
CARDS_JS = """return [...document.querySelectorAll('.vue-flow__node-fbnode')].map((el) => {
  const r = el.getBoundingClientRect(); return [el.dataset.id, r.left, r.top, r.right, r.bottom]; });"""
BAR_JS = """const bar = document.querySelector('.fb-activity-builder');
if (!bar || !bar.checkVisibility()) return null;
const r = bar.getBoundingClientRect();
return { rect: [r.left, r.top, r.right, r.bottom], rows: [...bar.querySelectorAll('.fb-job')]
  .filter((j) => j.checkVisibility()).map((j) => j.innerText) };"""


def open_at(screen: Screen, builder: Callable[..., None], **kwargs: object) -> Any:
    builder(**kwargs)
    screen.selenium.set_window_size(*SIZE)
    screen.open("/")
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=90)
    time.sleep(0.3)  # the fit's frame
    return list(PAGES.values())[-1]


def overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def zoom_to(screen: Screen, level: str, step: int) -> None:
    """Mouse-wheel the canvas until it shows ``level`` (step > 0 zooms out)."""
    for _ in range(40):
        if screen.selenium.execute_script(LEVEL_JS) == f"fb-detail-{level}":
            return
        screen.selenium.execute_script(WHEEL_JS, step)
        time.sleep(0.3)
    raise AssertionError(f"never reached {level}: {screen.selenium.execute_script(LEVEL_JS)}")


def answering_flow(folder: Path, rows: int) -> Path:
    """The demo's shape over ``rows`` rows no other test embedded (the session shares one embedding cache): labelled
    rows in Chroma, a retriever, a prompt and an Ollama model nobody runs here, which answers extractively."""
    csv_path = small_csv(folder / "rows.csv", rows)
    with csv_path.open(encoding="utf-8", newline="") as source:
        table = list(csv.reader(source))
    with csv_path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows([table[0], *[[f"{folder.name}-{row[0]}", *row[1:]] for row in table[1:] if row]])
    flow = search_flow(csv_path, f"first-hour-{folder.name}"[:60])
    flow.nodes += [
        NodeSpec(id="prompt", type="prompt.template"),
        NodeSpec(
            id="llm",
            type="llm.ollama",
            name="Ollama chat model",
            config={"base_url": "http://127.0.0.1:9", "when_unreachable": "extractive", "max_retries": 0},
        ),
        NodeSpec(id="answer", type="chat.output"),
    ]
    flow.edges += [
        Edge(source="retriever", source_port="hits", target="prompt", target_port="context"),
        Edge(source="question", source_port="message", target="prompt", target_port="question"),
        Edge(source="prompt", source_port="prompt", target="llm", target_port="prompt"),
        Edge(source="llm", source_port="answer", target="answer", target_port="message"),
    ]
    state = EditorState(flow)
    state.auto_layout()
    path = folder / "answering.json"
    save_flow(state.flow, path)
    return path


def test_the_demo_opens_with_ports_a_user_connects(screen: Screen, builder: Callable[..., None]) -> None:
    page = open_at(screen, builder, flow_path=example_flow())
    assert screen.selenium.execute_script(LEVEL_JS) != "fb-detail-chip"  # cards with named ports, not chips
    wrap = screen.selenium.execute_script(RECT_JS, css(screen, ".fb-wrap")[0])
    for card in screen.selenium.execute_script(CARDS_JS):
        assert wrap[0] <= card[1] and card[3] <= wrap[2] and wrap[1] <= card[2] and card[4] <= wrap[3], card
    before = len(page.state.flow.edges)
    drag(screen, handle("question", "message", "source"), handle("llm", "system", "target"))
    wait_until(lambda: len(page.state.flow.edges) == before + 1)
    assert any(e.target == "llm" and e.target_port == "system" for e in page.state.flow.edges)
    shot(screen, "first-hour-connect-at-opening-zoom")
    # far out, the notes show their first line and the cards their titles, with the ports on the chips' edges
    zoom_to(screen, "chip", 240)
    note = css(screen, ".fb-note-chip span")[0]
    assert note.is_displayed() and note.text.startswith("Row-labelled chunking.")
    shot(screen, "first-hour-demo-chips")


def test_ports_stay_on_a_chips_edge_and_a_missed_drag_says_zoom_in(
    screen: Screen, builder: Callable[..., None]
) -> None:
    page = open_at(screen, builder)  # loader -> splitter, the store not connected yet
    assert screen.selenium.execute_script(LEVEL_JS) == "fb-detail-full"  # a small flow opens at full size
    zoom_to(screen, "chip", 240)
    source = css(screen, handle("splitter", "chunks", "source"))[0]
    assert source.is_displayed() and source.size["width"] >= 5  # reachable on the chip's edge, above the chip
    drag(screen, handle("splitter", "chunks", "source"), handle("store", "documents", "target"))
    wait_until(lambda: any(e.target == "store" for e in page.state.flow.edges))
    # a drag from the card's edge that misses the port moves the card, and the canvas says how to connect
    card = css(screen, '.vue-flow__node[data-id="store"]')[0]
    left, top, right, bottom = screen.selenium.execute_script(RECT_JS, card)  # as drawn (scaled), unlike .size
    ActionChains(screen.selenium).move_to_element_with_offset(
        card, int(-(right - left) / 2) + 3, int((bottom - top) / 2) - 3
    ).click_and_hold().move_by_offset(10, 4).move_by_offset(30, 10).release().perform()
    message = wait_until(lambda: [m for m in css(screen, ".fb-canvas-message") if m.is_displayed()])[0]  # type: ignore[index]
    assert "Zoom in to see ports" in message.text and "fb-canvas-hint" in message.get_attribute("class")
    shot(screen, "first-hour-chip-ports-and-hint")
    # a blank flow comes at full size: its first card is a card, not a chip
    screen.selenium.execute_script("arguments[0].click()", css(screen, ".fb-palette-close")[0])
    page.files.blank()
    wait_until(lambda: abs(screen.selenium.execute_script(ZOOM_JS) - 1) < 1e-6)
    assert screen.selenium.execute_script(LEVEL_JS) == "fb-detail-full"


def test_the_first_question_is_answered_while_the_store_fills_and_the_chat_follows(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    open_at(screen, builder, flow_path=answering_flow(tmp_path, 400))
    counts: list[tuple[int, int]] = []

    def header() -> str:
        text = str(screen.selenium.execute_script("return document.querySelector('.fb-background').innerText"))
        found = re.search(r"(\d+)/(\d+)", text)
        if found:
            counts.append((int(found[1]), int(found[2])))
        return text

    css(screen, ".fb-side-open-chat")[0].click()
    box = wait_until(lambda: [e for e in css(screen, ".fb-chat-compose input") if e.is_displayed()])[0]  # type: ignore[index]
    questions = (
        "How is an email with two dots in a row handled at login?",
        "What happens with an empty password?",
        "Can a locked account log in?",
    )
    for number, question in enumerate(questions, start=1):
        box.send_keys(question + Keys.ENTER)
        wait_until(lambda n=number: len(css(screen, ".fb-chat-reply .fb-chat-hits")) >= n, timeout=180)  # type: ignore[misc]
        header()
        if number == 1:
            # answered before the rows are all embedded, and the reply says which search found its chunks
            note = css(screen, ".fb-chat-stand-in .fb-box-title")[0]
            assert note.text.startswith("Answered by keyword search while embeddings"), note.text
            assert counts and counts[-1][0] < 400, counts
            fallback = css(screen, ".fb-chat-fallback")[0].text
            assert "“Ollama chat model” answered by a fallback path" in fallback and "--cred" not in fallback
            assert css(screen, ".fb-ollama-help")  # the fix is a button, not a command line
            shot(screen, "first-hour-keyword-answer")
        time.sleep(0.6)  # the next animation frames: the list follows the newest message
        geometry = screen.selenium.execute_script(
            """const box = document.querySelector('.fb-chat-messages').getBoundingClientRect();
            const last = (q) => [...document.querySelectorAll(q)].pop().getBoundingClientRect();
            const sent = last('.fb-chat-messages .q-message-sent');
            const reply = last('.fb-chat-reply');
            const compose = document.querySelector('.fb-chat-compose').getBoundingClientRect();
            return [box.top, box.bottom, sent.top, reply.top, reply.bottom, compose.top];"""
        )
        top, bottom, sent, reply_top, reply_bottom, compose = geometry
        assert top - 1 <= sent < bottom and reply_top < bottom, geometry  # the newest question and its reply
        assert bottom <= compose + 1, geometry  # the compose box lies over no message
        assert reply_bottom <= bottom + 1 or sent <= top + 12, geometry  # the whole reply, or read from its start
    shot(screen, "first-hour-chat-follows")
    for _ in range(20):  # the header's count while the ingest goes on (it used to drop from 500/500 to 0/500)
        header()
        time.sleep(0.3)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(counts)), counts  # never goes back


def test_no_card_under_the_activity_bar_and_the_drawer_keeps_its_card(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    page = open_at(screen, builder, flow_path=answering_flow(tmp_path, 12))
    wait_until(lambda: page.session.background is None, timeout=300)  # 12 rows embedded in the background
    page.run_input.value = "two dots in the email"
    css(screen, ".fb-run")[0].click()
    bar = wait_until(
        lambda: (b := screen.selenium.execute_script(BAR_JS)) and any("Run " in r for r in b["rows"]) and b
    )
    cards = screen.selenium.execute_script(CARDS_JS)
    assert len(cards) == 10 and not [c for c in cards if overlaps(c[1:], bar["rect"])], (bar, cards)  # type: ignore[index]
    shot(screen, "first-hour-bar-after-a-run")
    # finished jobs fold into one line after a few seconds
    wait_until(lambda: len(screen.selenium.execute_script(BAR_JS)["rows"]) == 1, timeout=30)
    # the drawer opens for the card furthest right, and the canvas keeps that card in view beside it
    css(screen, '.vue-flow__node[data-id="answer"]')[0].click()
    wait_until(lambda: css(screen, ".fb-side")[0].is_displayed())
    side = screen.selenium.execute_script(RECT_JS, css(screen, ".fb-side")[0])
    assert side[2] - side[0] <= 400  # narrower at 1280 than at 1920

    def card_in_view() -> bool:
        wrap = screen.selenium.execute_script(RECT_JS, css(screen, ".fb-wrap")[0])
        card = screen.selenium.execute_script(RECT_JS, css(screen, '.vue-flow__node[data-id="answer"]')[0])
        return wrap[0] <= card[0] and card[2] <= wrap[2] and card[2] <= side[0]

    wait_until(card_in_view)
    shot(screen, "first-hour-drawer-keeps-card")


def test_toasts_leave_a_dialogs_buttons_alone(screen: Screen, builder: Callable[..., None]) -> None:
    page = open_at(screen, builder)
    import_file(screen, N8N_COURSE_FILE)  # the report dialog, with its buttons at the bottom
    with page.client:  # a toast while it is open (the import's own may be gone on a slow machine), kept on screen
        notify("A toast while the import report is open", type="positive", timeout=0)
    toast = wait_until(  # type: ignore[index]
        lambda: [t for t in css(screen, ".q-notification") if t.is_displayed() and "while the import" in t.text]
    )[0]
    # where it comes to rest: it slides in from the top while its transition's "-enter" classes are on it
    wait_until(lambda: "-enter" not in str(toast.get_attribute("class")), 15, "the toast's slide in")
    toast_rect = wait_stable(lambda: screen.selenium.execute_script(RECT_JS, toast))
    assert toast_rect[1] >= 48  # under the header: the header's buttons stay clickable too
    buttons = [b for b in css(screen, ".q-dialog .q-btn") if b.is_displayed()]
    assert buttons
    for button in buttons:
        assert not overlaps(toast_rect, screen.selenium.execute_script(RECT_JS, button)), button.text
    shot(screen, "first-hour-toast-and-dialog")


def test_import_asks_before_replacing_unsaved_work(screen: Screen, builder: Callable[..., None]) -> None:
    page = open_at(screen, builder)
    css(screen, '.vue-flow__node[data-id="store"]')[0].click()
    screen.selenium.find_element("css selector", "body").send_keys(Keys.DELETE)  # an edit
    wait_until(lambda: page.state.dirty and len(page.state.flow.nodes) == 2)
    click_import(screen, opens=".fb-confirm-discard")
    screen.should_contain("Discard unsaved changes?")
    shot(screen, "first-hour-import-asks")
    screen.click("Keep editing")
    wait_until(lambda: not [d for d in css(screen, ".fb-confirm-discard") if d.is_displayed()])
    assert len(page.state.flow.nodes) == 2 and not css(screen, ".fb-import-upload")
    click_import(screen, opens=".fb-confirm-discard")
    screen.click("Discard changes")
    wait_until(lambda: css(screen, '.fb-import-upload input[type="file"]'))


def test_a_500_node_flow_is_drawn_whole_in_a_grid_with_legible_chips(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    state = EditorState(Flow(name="500 nodes"))
    for _ in range(125):
        loader, splitter = state.add_node("loader.file"), state.add_node("splitter.recursive")
        store, embedder = state.add_node("vectorstore.chroma"), state.add_node("embedder.local")
        state.connect(loader, "records", splitter, "documents")
        state.connect(splitter, "chunks", store, "documents")
        state.connect(embedder, "embedder", store, "embedder")
    state.auto_layout()  # 125 independent chains: packed in rows to the window's shape, not one column
    save_flow(state.flow, tmp_path / "big.json")
    screen.selenium.set_page_load_timeout(180)  # a loaded 2-core machine; the speed is benchmarks/ui_render.py's
    try:
        open_at(screen, builder, flow_path=tmp_path / "big.json")
    finally:
        screen.selenium.set_page_load_timeout(60)
    wrap = screen.selenium.execute_script(RECT_JS, css(screen, ".fb-wrap")[0])
    cards = screen.selenium.execute_script(CARDS_JS)
    in_view = [
        c for c in cards if wrap[0] - 1 <= c[1] and c[3] <= wrap[2] + 1 and wrap[1] - 1 <= c[2] and c[4] <= wrap[3]
    ]
    assert len(cards) == len(in_view) == 500  # every card drawn (313 of 500 were, in one column at zoom 0.02)
    zoom = screen.selenium.execute_script(ZOOM_JS)
    assert zoom >= 0.09, zoom
    chip = css(screen, ".fb-chip span")[0]
    px = float(screen.selenium.execute_script("return parseFloat(getComputedStyle(arguments[0]).fontSize)", chip))
    assert px * zoom >= 10.9 and chip.text.strip()
    shot(screen, "first-hour-500-nodes")


def test_eval_and_compare_say_what_they_do_and_show_no_upload_box(screen: Screen, builder: Callable[..., None]) -> None:
    builder()
    screen.selenium.set_window_size(*SIZE)
    for path, intro, sentence in (
        ("/eval", "eval-intro", "Scores a flow's answers question by question"),
        ("/compare", "compare-intro", "Compares how two or more flows chunk and retrieve"),
    ):
        screen.open(path)
        text = wait_until(lambda i=intro: css(screen, f"[data-testid={i}]"))[0].text  # type: ignore[index,misc]
        assert text.startswith(sentence) and ".jsonl" in text
        assert not [u for u in css(screen, ".q-uploader") if u.is_displayed()]  # no "0.0B / 0.00%" box
        shot(screen, f"first-hour-intro-{path.strip('/')}")
    assert css(screen, "[data-testid=flows]")  # /compare last
    screen.open("/eval")
    assert "Open a saved result" in wait_until(lambda: css(screen, "[data-testid=eval-upload]"))[0].text  # type: ignore[index]
