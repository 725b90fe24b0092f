"""Small real flows for the comparison tests: the first 30 rows of the VWO CSV, naive vs row-labelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROWS = 30


def _flow(name: str, nodes: list[dict[str, object]], edges: list[tuple[str, str, str, str]]) -> dict[str, object]:
    return {
        "format": "flowbuilder",
        "version": 1,
        "name": name,
        "nodes": nodes,
        "edges": [{"source": s, "source_port": sp, "target": t, "target_port": tp} for s, sp, t, tp in edges],
    }


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with vwo30.csv, naive.json, labelled.json, no_store.json and questions.jsonl."""
    folder = tmp_path_factory.mktemp("compare")
    lines = (REPO / "data" / "VWO_500_Test_Cases.csv").read_text(encoding="utf-8-sig").split("\n")
    (folder / "vwo30.csv").write_text("\n".join(lines[: ROWS + 1]) + "\n", encoding="utf-8")
    embedder = {"id": "embedder", "type": "embedder.local", "config": {}}
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
            embedder,
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
    labelled = _flow(
        "Labelled small",
        [
            {"id": "loader", "type": "loader.file", "config": {"path": "vwo30.csv", "mode": "records"}},
            {"id": "labeller", "type": "labeller.row", "config": {}},
            {"id": "splitter", "type": "splitter.record", "config": {}},
            {"id": "store", "type": "vectorstore.chroma", "config": {"collection": "test-labelled"}},
            embedder,
        ],
        [
            ("loader", "records", "labeller", "records"),
            ("labeller", "records", "splitter", "documents"),
            ("splitter", "chunks", "store", "documents"),
            ("embedder", "embedder", "store", "embedder"),
        ],
    )
    no_store = _flow(
        "No store",
        [{"id": "loader", "type": "loader.file", "config": {"path": "vwo30.csv"}}],
        [],
    )
    for name, flow in (("naive.json", naive), ("labelled.json", labelled), ("no_store.json", no_store)):
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


@pytest.fixture(scope="session")
def compare_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir (embedding cache + Chroma) shared by the comparison tests of a session."""
    return tmp_path_factory.mktemp("fbdata")
