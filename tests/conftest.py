"""Test-wide isolation: user data, credentials and caches go to a temporary folder, never ~; ports from tests.ports.

Everything here is per pytest process, so per xdist worker: each worker has its own sandbox folder, its own port
for the browser tests' NiceGUI server and its own Chromium (see tests/README.md).
"""

from __future__ import annotations

import os
import tempfile

import pytest

# Set before any test module imports flowbuilder, so every default path points inside the sandbox.
_SANDBOX = tempfile.mkdtemp(prefix=f"flowbuilder-tests-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
os.environ["FLOWBUILDER_DATA_DIR"] = os.path.join(_SANDBOX, "data")
os.environ["FLOWBUILDER_CREDENTIALS"] = os.path.join(_SANDBOX, "credentials.json")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("SE_OFFLINE", "true")


@pytest.hookimpl(trylast=True)  # after NiceGUI's plugin, which sets its own
def pytest_configure(config: pytest.Config) -> None:
    """The browser tests' server port: one per process, held for the session (older NiceGUI used 3392 for every
    run on the machine; newer ones an ephemeral port, which an outgoing connection can take between two tests)."""
    from nicegui.testing import Screen

    from tests.ports import reserve_port

    Screen.PORT = reserve_port()
    # xdist hands out files by their number of tests, most first, which leaves the few-test files that take
    # minutes (a Ray cluster, a whole evaluation) for the end, where one worker runs them alone while the other
    # waits. The order below (pytest_collection_modifyitems) is the one the workers get instead.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


LONG_FILES = (
    "tests/cluster/test_ray_cluster.py",
    "tests/evaluation/test_known_verdicts.py",
    "tests/ui/test_first_hour.py",
    "tests/flows/test_examples.py",
    "tests/ui/test_no_lockout.py",
    "tests/ui/test_layout_elk.py",
    "tests/ui/test_background_ingest.py",
    "tests/ui/test_canvas_window.py",
    "tests/ui/test_compare_page.py",
    "tests/nodes/test_chroma.py",
    "tests/evaluation/test_every_flow.py",
    "tests/ui/test_canvas_readable.py",
    "tests/serve/test_mcp_tool_node.py",
    "tests/nodes/test_folder_sync.py",
    "tests/ui/test_browser.py",
)
"""The files that took longest in a whole run (`pytest -n 2 --dist loadfile --durations=80`, summed per file,
2026-12-03), longest first. They start first so that the many short files fill the workers' time at the end; a
file missing here only starts later, nothing breaks."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long files first (see :data:`LONG_FILES`), the rest in collection order (a stable sort)."""
    rank = {name: index for index, name in enumerate(LONG_FILES)}
    root = config.rootpath

    def key(item: pytest.Item) -> int:
        try:
            name = item.path.relative_to(root).as_posix()
        except ValueError:
            return len(LONG_FILES)
        return rank.get(name, len(LONG_FILES))

    items.sort(key=key)
