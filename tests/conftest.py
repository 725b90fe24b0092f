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
for _var in ("OPENAI_API_KEY", "GROQ_API_KEY", "PINECONE_API_KEY", "MISTRAL_API_KEY", "COHERE_API_KEY"):
    # Live-key tests read the original value from FLOWBUILDER_LIVE_<VAR>; the rest of the suite must
    # behave as on a machine with no keys.
    if _var in os.environ:
        os.environ[f"FLOWBUILDER_LIVE_{_var}"] = os.environ.pop(_var)
