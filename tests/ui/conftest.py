"""UI test fixtures: a tiny offline flow, a registered builder page, and headless Chromium options."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from flowbuilder.flow import Edge, Flow, Layout, NodeSpec, Position
from flowbuilder.formats.native import save_flow
from flowbuilder.ui.browser import CHROMIUM, chrome_options

# Course exports shipped with the tests (copied from the course corpus): the n8n one has three sticky
# notes framing its nodes, the LangFlow one LangFlow's wide spacing.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
N8N_COURSE_FILE = FIXTURES / "n8n__AI3X_Basic_RAG.json"
LANGFLOW_COURSE_FILE = FIXTURES / "langflow__AI_3X_Naive_RAG.json"
SHOTS = Path("/tmp/shots")

CSV_TEXT = (
    "Scenario TID,TestCase Description,Expected Result\n"
    "LOGIN_001,Login with a valid email and password,The dashboard opens\n"
    "LOGIN_002,Login with two dots in a row in the email,An error says the email is invalid\n"
    "LOGIN_003,Login with an empty password,The password field is marked as required\n"
)


def small_flow(folder: Path) -> Path:
    """loader.file -> splitter.recursive on a 3-row CSV: runs offline in well under a second."""
    (folder / "cases.csv").write_text(CSV_TEXT, encoding="utf-8")
    flow = Flow(
        name="Small CSV flow",
        nodes=[
            NodeSpec(id="loader", type="loader.file", name="CSV rows", config={"path": "cases.csv", "mode": "records"}),
            NodeSpec(id="splitter", type="splitter.recursive", config={"chunk_size": 40, "chunk_overlap": 0}),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "ui-test"}),
        ],
        edges=[Edge(source="loader", source_port="records", target="splitter", target_port="documents")],
        layout=Layout(
            positions={
                "loader": Position(x=0, y=0),
                "splitter": Position(x=320, y=0),
                "store": Position(x=640, y=0),
            }
        ),
    )
    path = folder / "small.json"
    save_flow(flow, path)
    return path


def chat_flow(
    folder: Path, collection: str, tail: list[NodeSpec], tail_edges: list[tuple[str, str, str, str]], name: str
) -> Path:
    """chat.input -> Chroma (local embedder, the 3-row CSV, k=2) -> parser.stringify -> ``tail``: the
    retrieval half of a chat flow; ``tail`` and ``tail_edges`` say what the retrieved text feeds."""
    small_flow(folder)  # writes cases.csv next to the flow
    nodes = [
        NodeSpec(id="question", type="chat.input"),
        NodeSpec(id="loader", type="loader.file", config={"path": "cases.csv", "mode": "records"}),
        NodeSpec(id="embedder", type="embedder.local"),
        NodeSpec(
            id="store",
            type="vectorstore.chroma",
            config={"collection": collection, "k": 2, "persist_directory": str(folder / "chroma")},
        ),
        NodeSpec(id="context", type="parser.stringify"),
        *tail,
    ]
    edges = [
        ("loader", "records", "store", "documents"),
        ("embedder", "embedder", "store", "embedder"),
        ("question", "message", "store", "query"),
        ("store", "hits", "context", "items"),
        *tail_edges,
    ]
    flow = Flow(
        name=name, nodes=nodes, edges=[Edge(source=a, source_port=b, target=c, target_port=d) for a, b, c, d in edges]
    )
    path = folder / f"{collection}.json"
    save_flow(flow, path)
    return path


@pytest.fixture
def small_flow_path(tmp_path: Path) -> Path:
    return small_flow(tmp_path)


@pytest.fixture
def builder(tmp_path: Path, small_flow_path: Path) -> Callable[..., None]:
    """Register the builder pages on the test app, opening the small flow by default."""
    from flowbuilder.ui.app import register_pages
    from flowbuilder.ui.session import PAGES

    for page in PAGES.values():  # an earlier test's background ingest would hold the store this test ingests into
        if page.session.background is not None:
            page.session.background.cancel()
    PAGES.clear()  # pages of earlier tests' clients (the test reset drops clients without deleting them)

    def register(flow_path: Path | None = small_flow_path) -> None:
        register_pages(workspace=tmp_path / "workspace", flow_path=flow_path)

    return register


WINDOW = (1600, 1000)
"""Every browser test starts in a window of this size (wide enough for both side panels)."""


@pytest.fixture(scope="session")
def nicegui_chrome_options():  # type: ignore[no-untyped-def]
    """Debian's chromium, offline, with the flags that work in this container."""
    if not (os.path.exists(CHROMIUM) and shutil.which("chromedriver")):
        pytest.skip("chromium and chromium-driver are not installed")
    from nicegui.testing import screen_plugin

    options = chrome_options(window_size=",".join(map(str, WINDOW)))
    options.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(screen_plugin.DOWNLOAD_DIR),
            "download.prompt_for_download": False,
            "download.directory_upgrade": True,
        },
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return options


PAGE_LOAD_S = 60.0
"""NiceGUI's screen gives a page 4 s to load and 3 s to connect; a 2-core machine running other jobs (or a cold
first page) needs longer, and a slow page is not what these tests judge."""


@pytest.fixture
def screen(screen):  # type: ignore[no-untyped-def]  # NiceGUI's own fixture, with patient page loads
    screen.selenium.set_page_load_timeout(PAGE_LOAD_S)
    # the browser is shared by the session: a test that narrowed the window would hand its size (and so a
    # closed side panel, the default below 1500 px) to the next one, whose outcome then depends on the order
    screen.selenium.set_window_size(*WINDOW)
    open_page = screen.open
    screen.open = lambda path, timeout=PAGE_LOAD_S: open_page(path, timeout)
    return screen
