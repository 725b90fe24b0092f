"""Small real flows for comparison tests: the first 30 rows of the VWO CSV chunked three ways.

``naive.json`` (whole CSV split on newlines), ``labelled.json`` (one labelled record per chunk) and
``improved.json`` (LangFlow's "improved" flow: labelled records joined, then re-split at 1000 chars).
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROWS = 30
IMPROVED_TEMPLATE = (
    "Scenario TID: {Scenario TID}\nDescription: {TestCase Description}\nPreCondition: {PreCondition}\n"
    "Test Steps: {TestSteps}\nExpected Result: {Expected Result}"
)
_EMBEDDER = {"id": "embedder", "type": "embedder.local", "config": {}}


def _flow(name: str, nodes: list[dict[str, object]], edges: list[tuple[str, str, str, str]]) -> dict[str, object]:
    return {
        "format": "flowbuilder",
        "version": 1,
        "name": name,
        "nodes": nodes,
        "edges": [{"source": s, "source_port": sp, "target": t, "target_port": tp} for s, sp, t, tp in edges],
    }


def _labelled_flow(
    name: str, labeller_config: dict[str, object], splitter: dict[str, object], collection: str
) -> dict[str, object]:
    """CSV records -> labeller -> splitter -> Chroma: the labelled and improved flows differ only in configs."""
    return _flow(
        name,
        [
            {"id": "loader", "type": "loader.file", "config": {"path": "vwo30.csv", "mode": "records"}},
            {"id": "labeller", "type": "labeller.row", "config": labeller_config},
            {"id": "splitter", **splitter},
            {"id": "store", "type": "vectorstore.chroma", "config": {"collection": collection}},
            _EMBEDDER,
        ],
        [
            ("loader", "records", "labeller", "records"),
            ("labeller", "records", "splitter", "documents"),
            ("splitter", "chunks", "store", "documents"),
            ("embedder", "embedder", "store", "embedder"),
        ],
    )


def write_small_corpus(folder: Path) -> Path:
    """Write vwo30.csv, naive.json, labelled.json, improved.json, no_store.json and questions.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (REPO / "data" / "VWO_500_Test_Cases.csv").read_text(encoding="utf-8-sig").split("\n")
    (folder / "vwo30.csv").write_text("\n".join(lines[: ROWS + 1]) + "\n", encoding="utf-8")
    naive = _flow(
        "Naive small",
        [
            {"id": "loader", "type": "loader.file", "config": {"path": "vwo30.csv", "mode": "whole"}},
            {
                "id": "splitter",
                "type": "splitter.character",
                "config": {"separator": "\n", "chunk_size": 1000, "chunk_overlap": 200},
            },
            {"id": "store", "type": "vectorstore.chroma", "config": {"collection": "test-naive"}},
            _EMBEDDER,
            {"id": "question", "type": "chat.input", "config": {"text": "unused"}},
            {"id": "retriever", "type": "retriever.vector", "config": {"k": 3}},
        ],
        [
            ("loader", "records", "splitter", "documents"),
            ("splitter", "chunks", "store", "documents"),
            ("embedder", "embedder", "store", "embedder"),
            ("store", "store", "retriever", "store"),
            ("question", "message", "retriever", "query"),
        ],
    )
    labelled = _labelled_flow("Labelled small", {}, {"type": "splitter.record", "config": {}}, "test-labelled")
    no_store = _flow(
        "No store",
        [{"id": "loader", "type": "loader.file", "config": {"path": "vwo30.csv"}}],
        [],
    )
    improved = _labelled_flow(
        "Improved small",
        {"template": IMPROVED_TEMPLATE, "join": True},
        {"type": "splitter.character", "config": {"separator": "\n", "chunk_size": 1000, "chunk_overlap": 0}},
        "test-improved",
    )
    flows = {"naive.json": naive, "labelled.json": labelled, "improved.json": improved, "no_store.json": no_store}
    for name, flow in flows.items():
        (folder / name).write_text(json.dumps(flow, indent=2), encoding="utf-8")
    questions = [
        {"id": "q1", "question": "How do we verify the Remember Me checkbox?", "gold": ["LOGIN-005"]},
        {
            "id": "q2",
            "question": "Which test covers submitting the login form with the Enter key?",
            "gold": ["LOGIN-010"],
        },
        {"id": "q3", "question": "Is there a test for allocation total not 100?", "gold": ["ABTEST-018"]},
        {"id": "q4", "question": "What is the weather on Mars?", "gold": []},
    ]
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n", encoding="utf-8")
    return folder
    return folder
