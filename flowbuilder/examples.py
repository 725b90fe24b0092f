"""Where the example flows and sample data live.

In a source checkout (the README's editable install) they are the repository's ``flows/`` and
``data/`` folders; in a wheel they are bundled under ``flowbuilder/_bundled/``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent

DEMO_FLOW = "row_labelled_csv_rag.json"
NAIVE_FLOW = "naive_csv_rag.json"
ROW_LABELLED_FLOW = "row_labelled_csv_rag.json"
PDF_FLOW = "pdf_rag.json"
AGENT_FLOW = "agent_rag.json"
IMPROVED_FLOW = "langflow_improved_csv_rag.json"


def _find(name: str) -> Path:
    for candidate in (_PACKAGE_DIR.parent / name, _PACKAGE_DIR / "_bundled" / name):
        if candidate.is_dir():
            return candidate
    return _PACKAGE_DIR.parent / name


def flows_dir() -> Path:
    return _find("flows")


def data_dir() -> Path:
    return _find("data")


def example_flow(name: str = DEMO_FLOW) -> Path:
    return flows_dir() / name
