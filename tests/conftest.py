"""Test-wide isolation: user data, credentials and caches go to a temporary folder, never ~."""

from __future__ import annotations

import os
import tempfile

# Set before any test module imports flowbuilder, so every default path points inside the sandbox.
_SANDBOX = tempfile.mkdtemp(prefix="flowbuilder-tests-")
os.environ["FLOWBUILDER_DATA_DIR"] = os.path.join(_SANDBOX, "data")
os.environ["FLOWBUILDER_CREDENTIALS"] = os.path.join(_SANDBOX, "credentials.json")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("SE_OFFLINE", "true")
