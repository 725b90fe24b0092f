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
