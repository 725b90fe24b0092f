"""compare checks a flow's settings before any ingest, and adjusts the deeper search where a node limits it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.evaluation.compare import ComparisonError, FlowComparer, deepen, retrieval_node
from flowbuilder.evaluation.questions import Question
from flowbuilder.executor import RunEvent
from flowbuilder.flow import Flow
from flowbuilder.registry import default_registry


def reranked(folder: Path, candidates: int, keep: int) -> Path:
    """The small naive flow with an LLM reranker (no model reachable: it keeps the incoming order)."""
    flow: dict[str, Any] = json.loads((folder / "naive.json").read_text())
    flow["nodes"] += [
        {"id": "llm", "type": "llm.ollama", "config": {"base_url": "http://127.0.0.1:9"}},
        {"id": "rerank", "type": "reranker.llm", "config": {"candidates": candidates, "keep": keep,
                                                            "if_model_fails": "continue"}},
    ]  # fmt: skip
    flow["edges"] += [
        {"source": "retriever", "source_port": "hits", "target": "rerank", "target_port": "hits"},
        {"source": "question", "source_port": "message", "target": "rerank", "target_port": "query"},
        {"source": "llm", "source_port": "model", "target": "rerank", "target_port": "model"},
    ]
    path = folder / f"reranked_{candidates}_{keep}.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    return path


def test_deeper_search_keeps_a_reranker_within_its_candidates(small_corpus: Path) -> None:
    registry = default_registry()
    flow = Flow.model_validate(json.loads(reranked(small_corpus, 12, 4).read_text()))
    target = retrieval_node(flow, registry)
    assert target == "rerank"
    deep, adjusted = deepen(flow, target, 50, registry, "f.json")
    assert deep.node("rerank").config == {"candidates": 12, "keep": 12, "if_model_fails": "continue"}
    assert flow.node("rerank").config["keep"] == 4  # the flow itself is untouched
    assert len(adjusted) == 1 and "'rerank'" in adjusted[0] and "12 candidates" in adjusted[0]
    plain = Flow.model_validate(json.loads((small_corpus / "naive.json").read_text()))
    deep, adjusted = deepen(plain, "retriever", 50, registry, "f.json")
    assert deep.node("retriever").config["k"] == 50 and adjusted == []


def test_bad_settings_fail_before_any_ingest(small_corpus: Path, tmp_path: Path) -> None:
    events: list[RunEvent] = []
    questions = [Question("q", "Remember Me?", ("LOGIN-005",), "Remember Me checkbox")]
    with pytest.raises(ComparisonError) as error:
        FlowComparer().evaluate(
            reranked(small_corpus, 3, 5), questions, 3, on_progress=lambda _, event: events.append(event)
        )
    message = str(error.value)
    assert "node 'rerank' (reranker.llm): keep (5) is larger than candidates (3)" in message
    assert "before ingesting" in message
    assert not [e for e in events if e.kind == "node_started"]  # nothing ran, nothing embedded
