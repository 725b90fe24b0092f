"""The canvas takes the window: at 1280x720 and 1440x900 the demo flow, the n8n and LangFlow course flows
and an export with overlapping positions open with every card on screen, no canvas text under 11 px,
no card over another; the palette and the details panel collapse and the browser remembers it; node
details open as a drawer on selection and close back to the full canvas."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen

from flowbuilder.examples import example_flow
from flowbuilder.flow import Flow, Layout, NodeSpec, Note, Position
from flowbuilder.formats.native import save_flow

from .conftest import LANGFLOW_COURSE_FILE, N8N_COURSE_FILE
from .test_browser import css, shot, wait_settled, wait_until
from .test_canvas_readable import covered, import_file

pytestmark = pytest.mark.browser

OVERLAPPING_EXPORT = Path(__file__).resolve().parents[1] / "formats" / "fixtures" / "n8n" / "cloud_sources_rag.json"
SIZES = [(1280, 720), (1440, 900)]

# Every card's screen rectangle, the canvas rectangle, and every canvas text under 11 px on screen.
VIEW_JS = """
const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
const pane = document.querySelector('.vue-flow__transformationpane');
const zoom = new DOMMatrix(getComputedStyle(pane).transform).a;
const small = [];
for (const el of pane.querySelectorAll('*')) {
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !el.checkVisibility({ visibilityProperty: true })) continue;
  const r = el.getBoundingClientRect();
  if (!r.width || !r.height) continue;
  const px = parseFloat(getComputedStyle(el).fontSize) * zoom;
  if (px < 10.95) small.push([String(el.className.baseVal ?? el.className), el.textContent.trim().slice(0, 30), px]);
}
// edges drawn under a card that is neither their source nor their target (sampled every 8 px)
const boxes = [...document.querySelectorAll('.vue-flow__node-fbnode')]
  .map((el) => [el.dataset.id, el.getBoundingClientRect()]);
const under = [];
for (const edge of document.querySelectorAll('.vue-flow__edge')) {
  const path = edge.querySelector('.vue-flow__edge-path');
  const id = edge.dataset.id || '';
  if (!path || !path.getTotalLength) continue;
  const m = path.getScreenCTM();
  const length = path.getTotalLength();
  for (let d = 0; d < length; d += 8 / m.a) {
    const p = path.getPointAtLength(d).matrixTransform(m);
    const inside = (r) => p.x > r.left + 2 && p.x < r.right - 2 && p.y > r.top + 2 && p.y < r.bottom - 2;
    const hit = boxes.find(([nid, r]) => !id.includes(nid) && inside(r));
    if (hit) { under.push([id, hit[0]]); break; }
  }
}
const wrap = document.querySelector('.fb-wrap');
return { under,
  zoom, small, canvas: rect(wrap), level: [...wrap.classList].find((c) => c.startsWith('fb-detail-')),
  cards: [...document.querySelectorAll('.vue-flow__node-fbnode')].map((el) => ({ id: el.dataset.id, rect: rect(el) })),
};
"""


def view(screen: Screen) -> dict:  # type: ignore[type-arg]
    return screen.selenium.execute_script(VIEW_JS)  # type: ignore[no-any-return]


def check_view(screen: Screen, cards: int, label: str) -> dict:  # type: ignore[type-arg]
    got = view(screen)
    shot(screen, label)
    assert len(got["cards"]) == cards, (label, len(got["cards"]))
    cx, cy, cw, ch = got["canvas"]
    width = screen.selenium.execute_script("return window.innerWidth")
    assert cw >= 0.75 * width, (label, cw, width)  # the palette may stay, the details panel is closed
    for card in got["cards"]:
        x, y, w, h = card["rect"]
        assert cx - 1 <= x and x + w <= cx + cw + 1 and cy - 1 <= y and y + h <= cy + ch + 1, (label, card)
    assert not got["small"], (label, got["zoom"], got["small"][:8])
    worst = max((covered(a["rect"], b["rect"]) for i, a in enumerate(got["cards"]) for b in got["cards"][i + 1 :]))
    assert worst == 0.0, (label, worst)
    assert not got["under"], (label, got["under"])  # no link is drawn under a card it does not touch
    return got


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_demo_and_imported_flows_fit_readable(screen: Screen, builder: Callable[..., None], size: tuple) -> None:  # type: ignore[type-arg]
    builder(flow_path=example_flow())
    screen.selenium.set_window_size(*size)
    screen.selenium.set_page_load_timeout(60)  # a loaded 2-core machine
    screen.open("/", timeout=60)
    wait_settled(screen)
    tag = f"{size[0]}x{size[1]}"
    demo = check_view(screen, 10, f"window-demo-{tag}")
    # far out the cards are title chips, 12 px on screen
    if demo["level"] == "fb-detail-chip":
        chip = css(screen, ".fb-chip span")[0]
        assert chip.is_displayed() and chip.text
    for count, (path, cards, name) in enumerate(
        ((N8N_COURSE_FILE, 12, "n8n"), (LANGFLOW_COURSE_FILE, 9, "langflow"), (OVERLAPPING_EXPORT, 21, "overlapping")),
        start=1,
    ):
        import_file(screen, path)
        screen.click("Close")
        # each of them overlaps where its file puts it: the browser's ELK layout replaces the first one
        wait_until(lambda n=count: css(screen, f'.fb-wrap[data-layout$="-{n}"]'), timeout=90)  # type: ignore[misc]
        wait_settled(screen)
        check_view(screen, cards, f"window-{name}-{tag}")


def test_panels_collapse_remember_and_details_open_as_a_drawer(screen: Screen, builder: Callable[..., None]) -> None:
    builder()
    screen.selenium.set_window_size(1280, 720)
    screen.open("/")
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=30)
    side = css(screen, ".fb-side")[0]
    assert not side.is_displayed()  # a narrow window opens with the canvas taking the room
    width0 = css(screen, ".fb-wrap")[0].rect["width"]
    # hide the palette: the canvas grows, and a reload keeps it hidden
    css(screen, ".fb-palette-close")[0].click()
    wait_until(lambda: not css(screen, ".fb-palette-col")[0].is_displayed())
    wait_until(lambda: css(screen, ".fb-wrap")[0].rect["width"] > width0 + 200)
    screen.open("/")
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=30)
    assert not css(screen, ".fb-palette-col")[0].is_displayed()
    assert css(screen, ".fb-palette-open")[0].is_displayed()
    full = css(screen, ".fb-wrap")[0].rect["width"]
    # selecting a card opens its details as a drawer; a click on the empty canvas closes it again
    css(screen, '.vue-flow__node[data-id="splitter"]')[0].click()
    wait_until(lambda: css(screen, ".fb-side")[0].is_displayed())
    wait_until(lambda: "splitter.recursive" in css(screen, ".fb-side")[0].text)
    shot(screen, "window-drawer-open")
    pane = css(screen, ".vue-flow__pane")[0]
    screen.selenium.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "const at = {bubbles: true, clientX: r.left + 30, clientY: r.bottom - 30};"
        "arguments[0].dispatchEvent(new MouseEvent('click', at))",
        pane,
    )
    wait_until(lambda: not css(screen, ".fb-side")[0].is_displayed())
    assert abs(css(screen, ".fb-wrap")[0].rect["width"] - full) < 2
    # opened by the user from the rail, the panel stays, and a reload keeps it open
    css(screen, ".fb-side-open-run")[0].click()
    wait_until(lambda: css(screen, ".fb-side")[0].is_displayed())
    wait_until(lambda: "validation issue" in css(screen, ".fb-side")[0].text)
    screen.open("/")
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=30)
    assert css(screen, ".fb-side")[0].is_displayed()
    css(screen, ".fb-side-close")[0].click()
    wait_until(lambda: not css(screen, ".fb-side")[0].is_displayed())


def test_notes_never_load_remote_resources(screen: Screen, builder: Callable[..., None], tmp_path: Path) -> None:
    hits: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)  # stands in for a video site
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        flow = Flow(
            name="Note with an image",
            nodes=[NodeSpec(id="question", type="chat.input")],
            notes=[Note(id="note", text=f"## Watch\n![the video]({url}/thumb.png)", width=300, height=160)],
            layout=Layout(positions={"question": Position(x=0, y=220), "note": Position(x=0, y=0)}),
        )
        path = tmp_path / "note.json"
        save_flow(flow, path)
        builder(flow_path=path)
        screen.open("/")
        wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout=30)
        link = wait_until(lambda: css(screen, ".fb-note-md a.fb-note-image"))[0]  # type: ignore[index]
        assert link.get_attribute("href") == f"{url}/thumb.png" and "the video" in link.text
        assert not css(screen, ".fb-note-md img")
        # and should an image slip into the page anyway, the page's CSP keeps the browser from fetching it
        image = screen.selenium.execute_script(
            "const i = document.createElement('img'); i.src = arguments[0]; document.body.appendChild(i); return i;",
            f"{url}/slipped.png",
        )
        # done trying: blocked (an error), or fetched from the recorder if the policy let it through
        wait_until(lambda: screen.selenium.execute_script("return arguments[0].complete", image), what="the image")
        assert hits == [], hits
        blocked: list[str] = []  # read here, all of it: the fixture fails on a browser error left in the log

        def csp_refusal_logged() -> bool:
            blocked.extend(e["message"] for e in screen.selenium.get_log("browser"))
            return any("slipped.png" in m and "Content Security Policy" in m for m in blocked)

        wait_until(csp_refusal_logged, what="the browser's Content Security Policy refusal in its log")
    finally:
        server.shutdown()
