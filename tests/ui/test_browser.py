"""Real-browser journeys in headless Chromium (selenium through NiceGUI's ``screen`` fixture).

Screenshots of each journey's end state go to /tmp/shots/ for a human look.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui.testing import Screen
from selenium.webdriver import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from flowbuilder.ui.session import PAGES
from tests.waiting import wait_stable, wait_until

from .conftest import N8N_COURSE_FILE, SHOTS

pytestmark = pytest.mark.browser


def css(screen: Screen, selector: str) -> list:  # type: ignore[type-arg]
    return screen.selenium.find_elements(By.CSS_SELECTOR, selector)


def handle(node: str, port: str, kind: str) -> str:
    return f'.vue-flow__handle.{kind}[data-nodeid="{node}"][data-handleid="{port}"]'


def open_builder(screen: Screen, builder: Callable[..., None], **kwargs: object) -> None:
    builder(**kwargs)
    screen.selenium.set_window_size(1600, 1000)
    screen.open("/")
    wait_until(lambda: len(css(screen, ".vue-flow__node")) >= 3)
    wait_settled(screen)


VIEW_JS = """
const view = document.querySelector('.vue-flow__viewport');
const cards = [...document.querySelectorAll('.vue-flow__node')].map((n) => {
  const r = n.getBoundingClientRect();
  return [n.dataset.id, Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];
});
return [view ? view.style.transform : null, cards];
"""


def wait_settled(screen: Screen, timeout: float = 90.0) -> None:
    """Until the builder page is done arranging itself: its browser layout (ELK, when the flow needs one) applied
    and the view no longer moving (fit, measured cards). Elements found before that may be drawn again (stale)."""
    page = list(PAGES.values())[-1]  # the page this test opened (the builder fixture clears PAGES)
    wait_until(lambda: css(screen, ".fb-wrap[data-ready]"), timeout, "the canvas's first fit")
    wait_until(lambda: not page.laying_out and not page.state.refine_layout, timeout, "the page's layout")
    wait_stable(lambda: screen.selenium.execute_script(VIEW_JS), timeout, what="the canvas view")


FINITE_ANIMATIONS_JS = """return document.getAnimations().filter((a) => a.playState === 'running'
  && a.effect && a.effect.getComputedTiming().endTime !== Infinity).length"""


def wait_animations_done(screen: Screen, timeout: float = 15.0) -> None:
    """Until no CSS transition or finite animation runs on the page (a highlight fading in, a dialog opening):
    what a screenshot should show. Endless ones (spinners) do not count."""
    wait_until(lambda: screen.selenium.execute_script(FINITE_ANIMATIONS_JS) == 0, timeout, "the page's animations")


def click(screen: Screen, selector: str, timeout: float = 30.0, text: str = "") -> None:
    """Click the first shown element matching ``selector`` (and holding ``text``, if given), found again whenever
    the page drew it anew between finding and clicking (a stale reference) or something still covered it."""

    def attempt() -> bool:
        shown = [e for e in css(screen, selector) if e.is_displayed() and text in e.text]
        if shown:
            shown[0].click()  # raises when stale or covered: wait_until tries again with a fresh look
        return bool(shown)

    wait_until(attempt, timeout, f"a click on {selector} {text!r}")


UPLOAD = '.fb-import-upload input[type="file"]'


def click_import(screen: Screen, opens: str = UPLOAD, timeout: float = 60.0) -> None:
    """Click the header's Import button and wait for what it opens (``opens``: the upload field, or the question
    about unsaved changes). The click waits until the button stands still and is checked: on a loaded machine the
    header can still shift (the flow's name, the activity bar) between finding the button and the click, which then
    lands on its neighbour (CI once got "Save flow as"). Whatever opened instead is closed and the click repeated."""

    def button() -> list:  # type: ignore[type-arg]
        return [b for b in css(screen, ".q-header button") if b.is_displayed() and b.text.strip().endswith("Import")]

    for attempt in range(3):
        wait_stable(lambda: [b.rect for b in button()], timeout, what="the header's Import button")
        wait_until(lambda: button()[0].click() or True, timeout, "a click on Import")
        try:
            wait_until(lambda: [e for e in css(screen, opens) if e.is_displayed() or e.tag_name == "input"], 20)
            return
        except AssertionError:
            if attempt == 2:
                raise
            screen.selenium.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
            wait_until(lambda: not [d for d in css(screen, ".q-dialog") if d.is_displayed()], timeout, "no dialog")


def send_file(screen: Screen, selector: str, path: Path, timeout: float = 60.0) -> None:
    """Give ``path`` to the file input matching ``selector``, found again if the page drew it anew meanwhile."""

    def attempt() -> bool:
        inputs = css(screen, selector)
        if inputs:
            inputs[0].send_keys(str(path))
        return bool(inputs)

    wait_until(attempt, timeout, f"the file input {selector}")


def shot(screen: Screen, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    screen.selenium.get_screenshot_as_file(str(SHOTS / f"{name}.png"))


def drag(screen: Screen, source_selector: str, target_selector: str) -> None:
    src = css(screen, source_selector)[0]
    dst = css(screen, target_selector)[0]
    ActionChains(screen.selenium).move_to_element(src).click_and_hold().move_by_offset(15, 5).move_to_element(
        dst
    ).release().perform()


def test_canvas_renders_typed_ports_and_issues(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    assert len(css(screen, ".vue-flow__node")) == 3
    assert len(css(screen, ".vue-flow__edge")) == 1
    # the store's embedder input is a service port: a diamond handle on the bottom edge
    service = css(screen, handle("store", "embedder", "target"))[0]
    assert "fb-service" in service.get_attribute("class") and "vue-flow__handle-bottom" in service.get_attribute(
        "class"
    )
    assert "fb-t-records" in css(screen, handle("loader", "records", "source"))[0].get_attribute("class")
    issues = css(screen, '.vue-flow__node[data-id="store"] .fb-issues')[0]
    assert "not connected" in issues.get_attribute("title")
    assert not css(screen, ".vue-flow__minimap")  # off by default: it would cover cards of the fitted flow
    css(screen, ".fb-map-toggle")[0].click()
    wait_until(lambda: css(screen, ".vue-flow__minimap"))
    shot(screen, "browser-canvas")
    # a failed badge shows the cause without the "Node 'x' (type) failed:" lead; the tooltip keeps it all
    page = list(PAGES.values())[-1]
    error = "Node 'loader' (loader.file) failed: File 'cases.csv' not found."
    page.canvas.patch({"loader": {"status": "failed", "error": error, "duration": 0.01}})
    badge = wait_until(lambda: css(screen, '.vue-flow__node[data-id="loader"] .fb-status-failed .fb-status'))[0]  # type: ignore[index]
    assert badge.find_element(By.CSS_SELECTOR, ".fb-status-text").text == "File 'cases.csv' not found."
    assert badge.get_attribute("title") == error
    assert not badge.find_elements(By.CSS_SELECTOR, ".fb-time")  # the cause gets the room


def test_drag_node_from_palette(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    item = css(screen, '.fb-palette-item[data-type="embedder.local"]')[0]
    # items fill the palette column (less its scrollbar gutter), descriptions end in an ellipsis
    column = css(screen, ".fb-palette")[0]
    assert item.size["width"] >= column.size["width"] - 16, (item.size, column.size)
    desc = item.find_element(By.CSS_SELECTOR, ".fb-palette-desc")
    assert screen.selenium.execute_script("return getComputedStyle(arguments[0]).textOverflow", desc) == "ellipsis"
    pane = css(screen, ".vue-flow__pane")[0]
    # Selenium's synthetic mouse drag does not fire HTML5 drag-and-drop, so dispatch the DnD events
    # (dragstart on the palette item -> dragover/drop on the canvas) with one DataTransfer, as a browser does.
    screen.selenium.execute_script(
        """
        const [item, pane] = arguments;
        const r = pane.getBoundingClientRect();
        const dt = new DataTransfer();
        const at = {clientX: r.left + r.width * 0.6, clientY: r.top + r.height * 0.75, bubbles: true, dataTransfer: dt};
        item.dispatchEvent(new DragEvent('dragstart', {bubbles: true, dataTransfer: dt}));
        pane.dispatchEvent(new DragEvent('dragover', at));
        pane.dispatchEvent(new DragEvent('drop', at));
        """,
        item,
        pane,
    )
    wait_until(lambda: css(screen, '.vue-flow__node[data-id="embedder-local"]'))
    assert len(css(screen, ".vue-flow__node")) == 4
    screen.should_contain("all-MiniLM")  # the inspector shows the dropped node
    # connect the new embedder's service output to the store's service input
    drag(screen, handle("embedder-local", "embedder", "source"), handle("store", "embedder", "target"))
    wait_until(lambda: len(css(screen, ".vue-flow__edge")) == 2)
    shot(screen, "browser-drop-connect")


def test_connect_and_mismatch_refused(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    drag(screen, handle("loader", "records", "source"), handle("store", "query", "target"))
    screen.should_contain("Cannot connect records to text")
    assert len(css(screen, ".vue-flow__edge")) == 1
    drag(screen, handle("splitter", "chunks", "source"), handle("store", "documents", "target"))
    wait_until(lambda: len(css(screen, ".vue-flow__edge")) == 2)
    # undo with the keyboard removes it again (handled by Python state)
    css(screen, ".vue-flow__pane")[0].click()
    ActionChains(screen.selenium).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    wait_until(lambda: len(css(screen, ".vue-flow__edge")) == 1)


def test_edit_config_value(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    css(screen, '.vue-flow__node[data-id="splitter"] .fb-title')[0].click()
    field = wait_until(lambda: css(screen, 'input[data-field="chunk_size"], [data-field="chunk_size"] input'))[0]  # type: ignore[index]
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("25")
    page = list(PAGES.values())[-1]  # the server runs in this process
    wait_until(lambda: page.state.flow.node("splitter").config.get("chunk_size") == 25)
    shot(screen, "browser-inspector")
    # a name change is reflected on the canvas card
    name = css(screen, ".fb-side input")[0]
    name.send_keys(Keys.CONTROL, "a")
    name.send_keys("My splitter")
    wait_until(lambda: "My splitter" in css(screen, '.vue-flow__node[data-id="splitter"] .fb-title')[0].text)


def test_run_shows_badges_and_output(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    css(screen, '.vue-flow__node[data-id="splitter"] .fb-title')[0].click()
    screen.click("Run to selected")
    wait_until(lambda: css(screen, '.vue-flow__node[data-id="splitter"] .fb-status-ok'), timeout=30)
    loader_status = css(screen, '.vue-flow__node[data-id="loader"] .fb-status-text')[0].text
    assert loader_status == "3 records"
    assert "chunks" in css(screen, '.vue-flow__node[data-id="splitter"] .fb-status-text')[0].text
    css(screen, '.vue-flow__node[data-id="splitter"] .fb-title')[0].click()
    screen.should_contain("LOGIN_002")
    screen.should_contain("chars min")
    # rows are only as tall as their (short) texts, and the text column stays narrow
    rows = css(screen, ".fb-out-table tbody tr")
    assert len(rows) == 8 and max(r.size["height"] for r in rows) < 80, [r.size["height"] for r in rows]
    cell = css(screen, ".fb-out-table td.fb-cell-text")[0]
    assert cell.size["width"] <= 280
    clamp = css(screen, ".fb-out-table .fb-clamp")[0]
    assert screen.selenium.execute_script("return getComputedStyle(arguments[0]).webkitLineClamp", clamp) == "3"
    clamp.click()  # expands in the browser, a second click folds it again
    wait_until(lambda: "fb-open" in clamp.get_attribute("class"))
    assert screen.selenium.execute_script("return getComputedStyle(arguments[0]).webkitLineClamp", clamp) != "3"
    clamp.click()
    wait_until(lambda: "fb-open" not in clamp.get_attribute("class"))
    # switching tabs shows one panel at once (no slide with the old panel at the left edge)
    next(t for t in css(screen, ".fb-side .q-tab") if t.text.strip().lower() == "run log").click()
    panels = screen.selenium.execute_script(
        "return [...document.querySelectorAll('.fb-side .q-tab-panel')].filter(p => p.offsetParent).length"
    )
    assert panels == 1
    log = css(screen, ".fb-run-log .q-scrollarea__content")[0]
    assert screen.selenium.execute_script("return getComputedStyle(arguments[0]).whiteSpace", log) == "pre-wrap"
    next(t for t in css(screen, ".fb-side .q-tab") if t.text.strip().lower() == "output").click()
    shot(screen, "browser-run-output")


def test_import_n8n_course_file(screen: Screen, builder: Callable[..., None], tmp_path: Path) -> None:
    if not N8N_COURSE_FILE.exists():
        pytest.skip("course file not present")
    open_builder(screen, builder)
    click_import(screen)
    send_file(screen, UPLOAD, N8N_COURSE_FILE)
    screen.should_contain("Import report")
    wait_until(lambda: len(css(screen, ".vue-flow__node")) >= 4)
    shot(screen, "browser-import-n8n")
    screen.click("Close")
    assert not css(screen, '.vue-flow__node[data-id="splitter"]')  # the small flow was replaced


def test_export_downloads_native_file(screen: Screen, builder: Callable[..., None]) -> None:
    from nicegui.testing import screen_plugin

    open_builder(screen, builder)
    screen.click("Export")
    screen.click("Flowbuilder (native JSON)")
    target = screen_plugin.DOWNLOAD_DIR / "Small_CSV_flow.flow.json"
    wait_until(target.exists, timeout=10)
    assert '"type": "splitter.recursive"' in target.read_text(encoding="utf-8")
