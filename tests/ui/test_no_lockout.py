"""Nothing locks the builder out: every flow that can be saved opens again from autosave.

The corpus (real n8n / LangFlow exports), the UI fixtures, the example flows, the fuzz reproducers
(mutated files that import cleanly) and hand-made worst cases (a cycle, a dangling edge, an unknown
type, an over-limit config) are each written as the workspace's autosave; ``/`` must then answer
HTTP 200, draw the canvas and list the flow's issues instead of failing."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui import core
from nicegui.testing import Screen
from selenium.common.exceptions import WebDriverException

from flowbuilder.errors import FlowbuilderError
from flowbuilder.flow import Edge, Flow, Layout, NodeSpec, Position
from flowbuilder.formats.convert import import_file
from flowbuilder.formats.native import detect_format, load_flow
from flowbuilder.ui.files import AUTOSAVE_NAME
from flowbuilder.ui.session import PAGES

from .test_browser import css, wait_until

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "security"))
from fuzz_harness import cases  # noqa: E402

FUZZ_CASES = 40


def _flow_of(path: Path) -> Flow | None:
    """The flow a user gets from this file (import or open), or None when it is refused."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (ValueError, RecursionError, UnicodeDecodeError):
        data = None
    try:
        if detect_format(data) in ("n8n", "langflow"):
            return import_file(path)[0]
        return load_flow(path)
    except FlowbuilderError:
        return None


def hand_made() -> dict[str, Flow]:
    """States the editor can hold and save that no valid flow has."""
    cycle = Flow(
        name="cycle",
        nodes=[NodeSpec(id="a", type="splitter.recursive"), NodeSpec(id="b", type="splitter.recursive")],
        edges=[
            Edge(source="a", source_port="chunks", target="b", target_port="documents"),
            Edge(source="b", source_port="chunks", target="a", target_port="documents"),
        ],
    )
    dangling = Flow(
        name="dangling",
        nodes=[NodeSpec(id="a", type="splitter.recursive")],
        edges=[Edge(source="gone", source_port="records", target="a", target_port="documents")],
    )
    unknown = Flow(
        name="unknown type",
        nodes=[NodeSpec(id="x", type="n8n.someNodeWeDoNotKnow"), NodeSpec(id="a", type="chat.input")],
        edges=[Edge(source="a", source_port="message", target="x", target_port="nowhere")],
    )
    over = Flow(
        name="over the limits",
        nodes=[NodeSpec(id="p", type="prompt.template", config={"template": "x" * 2_100_000, "n": 10**40})],
        layout=Layout(positions={"p": Position(x=1e15, y=-1e15)}),
    )
    return {"cycle": cycle, "dangling": dangling, "unknown": unknown, "over-limit": over}


def all_flows(tmp: Path) -> dict[str, Flow]:
    flows: dict[str, Flow] = {}
    files = sorted((ROOT / "tests" / "formats" / "corpus").glob("*.json"))
    files += sorted((ROOT / "tests" / "formats" / "fixtures").rglob("*.json"))
    files += sorted((ROOT / "tests" / "ui" / "fixtures").glob("*.json"))
    files += sorted((ROOT / "flows").rglob("*.json"))
    for path in files:
        flow = _flow_of(path)
        if flow is not None:
            flows[str(path.relative_to(ROOT))] = flow
    for label, text in cases(FUZZ_CASES, seed=7):  # the fuzz campaign's reproducers (seed of test_untrusted_files)
        case = tmp / "case.json"
        case.write_text(text, encoding="utf-8", errors="surrogatepass")
        flow = _flow_of(case)
        if flow is not None:
            flows[f"fuzz {label}"] = flow
    flows.update(hand_made())
    return flows


def test_every_saveable_flow_reopens_from_autosave(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    builder(flow_path=None)
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        flows = all_flows(Path(scratch))
    assert len(flows) > 30, sorted(flows)
    screen.open("/")  # starts the server
    screen.selenium.set_page_load_timeout(90)
    url = screen.selenium.current_url.split("#")[0]
    failures = []
    for label, flow in flows.items():
        autosave = {"path": None, "dirty": True, "flow": flow.model_dump(mode="json")}
        (workspace / AUTOSAVE_NAME).write_text(json.dumps(autosave), encoding="utf-8")
        try:
            status = urllib.request.urlopen(url, timeout=60).status  # loopback only
        except urllib.error.HTTPError as exc:
            status = exc.code
        if status != 200:
            failures.append(f"{label}: HTTP {status}")
            continue
        (workspace / AUTOSAVE_NAME).write_text(json.dumps(autosave), encoding="utf-8")
        drawn: Exception | None = None
        for _ in range(2):  # a second try: on a loaded 2-core machine one page load can time out
            try:
                screen.selenium.get(url)
                wait_until(lambda: css(screen, ".fb-wrap .vue-flow"), timeout=30)
                drawn = None
                break
            except (AssertionError, WebDriverException) as exc:
                drawn = exc
        if drawn is not None:
            failures.append(f"{label}: the page did not draw ({type(drawn).__name__})")
            continue
        cards = len(css(screen, ".vue-flow__node-fbnode"))
        if flow.nodes and not cards:
            failures.append(f"{label}: no card drawn for {len(flow.nodes)} nodes")
        listed = {"cycle": "has a cycle", "dangling": "gone", "unknown": "n8n.someNodeWeDoNotKnow"}.get(label)
        if listed:  # the overview is drawn again once the browser's layout is in: wait for it, not for one look
            try:
                wait_until(lambda text=listed: shows(screen, text), timeout=30)
            except AssertionError:
                screen.selenium.get_screenshot_as_file(f"/tmp/shots/lockout-{label}.png")
                failures.append(f"{label}: its issue ({listed!r}) is not listed")
        # the page's own layout ends (and autosaves) before the next autosave is written: a late one would
        # replace it, and the next page would open this flow again
        page = list(PAGES.values())[-1]
        wait_until(lambda page=page: not page.laying_out and not page.state.refine_layout, timeout=90)
    assert not failures, "\n".join(failures)


def shows(screen: Screen, text: str) -> bool:
    return text in str(screen.selenium.execute_script("return document.body.innerText"))


def test_a_closed_tab_does_not_overwrite_the_autosave(
    screen: Screen, builder: Callable[..., None], tmp_path: Path
) -> None:
    """A tab's browser layout can answer (or time out) after the tab was closed; what it then draws is for no one,
    and writing it to the autosave would replace what a newer tab of the same workspace holds (seen: the lock-out
    test's page showed the flow before the one it had written)."""
    builder(flow_path=None)
    autosave_file = tmp_path / "workspace" / AUTOSAVE_NAME
    autosave_file.parent.mkdir(exist_ok=True)
    first, second = hand_made()["cycle"], hand_made()["dangling"]
    autosave_file.write_text(json.dumps({"path": None, "dirty": True, "flow": first.model_dump(mode="json")}))
    screen.open("/")
    wait_until(lambda: css(screen, ".vue-flow__node-fbnode"))
    page = list(PAGES.values())[-1]
    assert page.state.flow.name == "cycle"
    screen.selenium.get("about:blank")  # the tab is closed
    wait_until(lambda: page.client.is_deleted, timeout=30)
    newer = {"path": None, "dirty": True, "flow": second.model_dump(mode="json")}
    autosave_file.write_text(json.dumps(newer))  # what another tab saved since
    assert core.loop is not None
    asyncio.run_coroutine_threadsafe(page.auto_layout(), core.loop).result(timeout=90)
    page.update_title()
    assert json.loads(autosave_file.read_text())["flow"]["name"] == "dangling"
