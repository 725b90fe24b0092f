"""Compare tells the truth: failures exit 1 naming flow and node, flows never share a collection, skipped
nodes are not FAILED, the final retrieval node (fusion with legs) is what gets judged, and N flows make a
leaderboard with verdicts. Real nodes, local MiniLM, embedded Chroma over the first 30 VWO rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.evaluation.compare import FlowComparer, retrieval_node
from flowbuilder.evaluation.namespace import isolate
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.formats.native import load_flow
from flowbuilder.registry import default_registry


@pytest.fixture(autouse=True)
def _data_dir(monkeypatch: pytest.MonkeyPatch, compare_data_dir: Path) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(compare_data_dir))


def edit_flow(folder: Path, source: str, target: str, change: Any) -> Path:
    """Copy flow ``source`` to ``target`` after ``change(data)`` edits its JSON."""
    data = json.loads((folder / source).read_text(encoding="utf-8"))
    change(data)
    path = folder / target
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def node(data: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in data["nodes"] if n["id"] == node_id)


def compare(folder: Path, *flows: str | Path, extra: tuple[str, ...] = ()) -> list[str]:
    return ["compare", *map(str, (folder / f for f in flows)), "--questions", str(folder / "questions.jsonl"), *extra]


def test_a_missing_loader_file_exits_1_naming_flow_and_node(
    small_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = edit_flow(small_corpus, "labelled.json", "missing_file.json",
                       lambda d: node(d, "loader")["config"].update(path="nowhere.csv"))  # fmt: skip
    assert main(compare(small_corpus, "naive.json", broken.name, extra=("--quiet",))) == 1
    err = capsys.readouterr().err
    assert str(broken) in err and "node 'loader' (loader.file) failed" in err and "nowhere.csv" in err
    assert "Traceback" not in err


def test_a_store_without_chunks_exits_1(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def disable_splitter(data: dict[str, Any]) -> None:
        node(data, "splitter")["disabled"] = True

    empty = edit_flow(small_corpus, "labelled.json", "no_chunks.json", disable_splitter)
    assert main(compare(small_corpus, "naive.json", empty.name, extra=("--quiet",))) == 1
    err = capsys.readouterr().err
    assert "store node 'store' received no chunks ('splitter' disabled)" in err and str(empty) in err


def test_skipped_nodes_are_not_failed(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def add_llm(data: dict[str, Any]) -> None:
        data["nodes"] += [
            {"id": "prompt", "type": "prompt.template", "config": {}},
            {"id": "llm", "type": "llm.ollama", "config": {"base_url": "http://127.0.0.1:9"}},
        ]
        data["edges"] += [
            {"source": "retriever", "source_port": "hits", "target": "prompt", "target_port": "context"},
            {"source": "question", "source_port": "message", "target": "prompt", "target_port": "question"},
            {"source": "prompt", "source_port": "prompt", "target": "llm", "target_port": "prompt"},
        ]

    with_llm = edit_flow(small_corpus, "naive.json", "naive_llm.json", add_llm)
    assert main(compare(small_corpus, with_llm.name, "labelled.json")) == 0
    err = capsys.readouterr().err
    assert "[A] skipped llm (llm.ollama): not needed for retrieval" in err
    assert "[A] skipped prompt (prompt.template)" in err
    assert "FAILED" not in err


def test_flows_sharing_a_collection_do_not_see_each_others_chunks(
    small_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def shared(data: dict[str, Any]) -> None:
        node(data, "store")["config"]["collection"] = "shared-by-two"

    edit_flow(small_corpus, "naive.json", "naive_shared.json", shared)
    edit_flow(small_corpus, "labelled.json", "labelled_shared.json", shared)
    code = main(compare(small_corpus, "naive_shared.json", "labelled_shared.json", extra=("--quiet", "--json")))
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    naive, labelled = report["a"], report["b"]
    assert naive["store_count"] == naive["stats"]["chunks"] == 31
    assert labelled["store_count"] == labelled["stats"]["chunks"] == 30
    assert not naive["warnings"] and not labelled["warnings"]
    assert naive["namespaces"]["store"] != labelled["namespaces"]["store"]
    assert all(
        ns.startswith("shared-by-two-fb") for ns in (naive["namespaces"]["store"], labelled["namespaces"]["store"])
    )
    # No stranger's chunk: naive hits are raw CSV lines, labelled hits labelled records.
    for question in naive["questions"]:
        assert not any(hit["text"].startswith("Scenario TID:") for hit in question["hits"])
    for question in labelled["questions"]:
        assert all(hit["text"].startswith("Scenario TID:") for hit in question["hits"])


def test_namespace_follows_the_ingest_branch(small_corpus: Path) -> None:
    registry = default_registry()
    flow = load_flow(small_corpus / "labelled.json")
    _, first = isolate(flow, registry, small_corpus)
    _, again = isolate(flow, registry, small_corpus)
    assert first == again  # stable: a re-run reuses the stored chunks
    query_only = flow.model_copy(deep=True)
    query_only.node("store").config["k"] = 9
    assert isolate(query_only, registry, small_corpus)[1] == first  # k is not what is stored
    resplit = flow.model_copy(deep=True)
    resplit.node("labeller").config["template"] = "{Scenario TID}"
    assert isolate(resplit, registry, small_corpus)[1] != first
    # A reader node on the writer's collection (LangFlow exports) shares the writer's namespace.
    reader = flow.model_copy(deep=True)
    reader.nodes.append(reader.node("store").model_copy(update={"id": "reader"}))
    moved = isolate(reader, registry, small_corpus)[1]
    assert moved["reader"] == moved["store"]


def fusion_flow(data: dict[str, Any]) -> None:
    """The labelled flow searched three ways: dense, BM25 over the same store, fused with RRF."""
    data["name"] = "Labelled hybrid small"
    data["nodes"] += [
        {"id": "question", "type": "chat.input", "config": {}},
        {"id": "dense", "type": "retriever.vector", "config": {"k": 10}},
        {"id": "keyword", "type": "retriever.keyword", "config": {"k": 10}},
        {"id": "fusion", "type": "retriever.fusion", "config": {"names": ["dense", "keyword"], "keep": 4}},
    ]
    data["edges"] += [
        {"source": "store", "source_port": "store", "target": "dense", "target_port": "store"},
        {"source": "store", "source_port": "store", "target": "keyword", "target_port": "store"},
        {"source": "question", "source_port": "message", "target": "dense", "target_port": "query"},
        {"source": "question", "source_port": "message", "target": "keyword", "target_port": "query"},
        {"source": "dense", "source_port": "hits", "target": "fusion", "target_port": "hits"},
        {"source": "keyword", "source_port": "hits", "target": "fusion", "target_port": "hits"},
    ]


def test_the_final_retrieval_node_is_judged_with_its_legs(
    small_corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hybrid = edit_flow(small_corpus, "labelled.json", "hybrid.json", fusion_flow)
    registry = default_registry()
    assert retrieval_node(load_flow(hybrid), registry) == "fusion"
    assert retrieval_node(load_flow(small_corpus / "naive.json"), registry) == "retriever"
    assert retrieval_node(load_flow(small_corpus / "labelled.json"), registry) is None  # no query: store search
    code = main(compare(small_corpus, "labelled.json", hybrid.name, extra=("--quiet", "--json", "--k", "3")))
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    plain, fused = report["a"], report["b"]
    assert (plain["retrieval_node"], fused["retrieval_node"]) == ("", "fusion")
    assert fused["retrieval_type"] == "retriever.fusion"
    legs_seen = 0
    for question in fused["questions"]:
        assert len(question["hits"]) <= 3
        if question["first_rank"]:
            assert set(question["legs"]) <= {"dense", "keyword"} and question["legs"]
            legs_seen += 1
    assert legs_seen >= 2
    # The same chunks, searched another way: one namespace, and nothing embedded twice. Each flow keeps its
    # collection in its own folder (docs/decisions/0020), so the second flow fills its own from the cache.
    assert plain["namespaces"] == fused["namespaces"]
    assert fused["embedded"] == 0


def test_n_way_leaderboard_and_require_significant(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = compare(small_corpus, "naive.json", "labelled.json", "improved.json", extra=("--quiet", "--k", "3"))
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [f["label"] for f in report["flows"]] == ["A", "B", "C"] and "a" not in report
    mrr = {f["label"]: f["metrics"]["mrr"] for f in report["flows"]}
    assert report["leaderboard"] == sorted(mrr, key=lambda label: -mrr[label])
    assert [(p["a"], p["b"]) for p in report["pairs"]] == [("A", "B"), ("A", "C")]
    for pair in report["pairs"]:
        assert pair["verdict"].startswith("no detectable difference on 3 questions")  # 3 questions: noise
        assert pair["differences"]["mrr"]["resamples"] == 10_000
    for flow in report["flows"]:
        assert set(flow["misses"]) == {"cut", "below_k", "past_token_limit", "no_chunk"}
        missed = [q for q in flow["questions"] if q["answerable"] and q["first_rank"] is None]
        assert sum(flow["misses"].values()) == len(missed)
        assert all(q["miss"]["kind"] in flow["misses"] for q in missed)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Leaderboard (by MRR):" in out and "B vs A: no detectable difference" in out and "C vs A:" in out
    assert main([*argv, "--require-significant"]) == 1
    assert "is not significantly better than A" in capsys.readouterr().err


def test_cancelling_stops_a_comparison(small_corpus: Path) -> None:
    import threading

    from flowbuilder.evaluation.compare import ComparisonCancelled

    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ComparisonCancelled):
        FlowComparer().compare(
            small_corpus / "naive.json",
            small_corpus / "labelled.json",
            load_questions(small_corpus / "questions.jsonl"),
            3,
            cancel_event=cancel,
        )


def test_a_cancelled_comparison_keeps_the_flows_that_finished(small_corpus: Path) -> None:
    import threading

    from flowbuilder.evaluation.compare import ComparisonCancelled, FlowSource
    from flowbuilder.executor import RunEvent

    cancel = threading.Event()

    def cancel_in_b(label: str, event: RunEvent) -> None:
        if label == "B":
            cancel.set()  # the page's Cancel, pressed while the second flow ingests

    sources = [FlowSource(small_corpus / name) for name in ("naive.json", "labelled.json", "improved.json")]
    with pytest.raises(ComparisonCancelled) as stopped:
        FlowComparer().compare_many(
            sources, load_questions(small_corpus / "questions.jsonl"), 3, on_progress=cancel_in_b, cancel_event=cancel
        )
    finished = stopped.value.finished
    assert [ev.label for ev in finished] == ["A"] and finished[0].metrics.questions > 0


def test_vary_compares_variants_of_one_flow(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = compare(small_corpus, "improved.json", extra=("--quiet", "--k", "3", "--json"))
    assert main([*argv, "--vary", "splitter.chunk_size=500,1000"]) == 0
    report = json.loads(capsys.readouterr().out)
    names = [flow["name"] for flow in report["flows"]]
    assert names == ["Improved small [splitter.chunk_size=500]", "Improved small [splitter.chunk_size=1000]"]
    small, large = report["flows"]
    assert small["stats"]["chunks"] > large["stats"]["chunks"]
    assert small["namespaces"]["store"] != large["namespaces"]["store"]
    assert "chunk_size=500" in small["description"]
    assert main([*argv, "--vary", "splitter.nope=1,2"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(compare(small_corpus, "improved.json", extra=("--quiet",))) == 2
    assert "two or more flows" in capsys.readouterr().err


def test_langflow_style_writer_and_reader_nodes(small_corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LangFlow exports ingest with one Chroma node (which also takes the chat input as its search query) and
    search with another on the same collection in an unconnected branch: both share the flow's namespace."""

    def langflow_style(data: dict[str, Any]) -> None:
        data["nodes"] += [
            {"id": "question", "type": "chat.input", "config": {}},
            {"id": "reader", "type": "vectorstore.chroma", "config": {"collection": "test-labelled"}},
            {"id": "reader_embedder", "type": "embedder.local", "config": {}},
        ]
        data["edges"] += [
            {"source": "question", "source_port": "message", "target": "store", "target_port": "query"},
            {"source": "question", "source_port": "message", "target": "reader", "target_port": "query"},
            {"source": "reader_embedder", "source_port": "embedder", "target": "reader", "target_port": "embedder"},
        ]

    edit_flow(small_corpus, "labelled.json", "langflow_style.json", langflow_style)
    code = main(compare(small_corpus, "labelled.json", "langflow_style.json", extra=("--quiet", "--json", "--k", "3")))
    err = capsys.readouterr()
    assert code == 0, err.err
    report = json.loads(err.out)
    plain, styled = report["a"], report["b"]
    assert styled["retrieval_node"] == "reader"
    assert styled["namespaces"]["reader"] == styled["namespaces"]["store"]
    assert styled["store_count"] == 30 and not styled["warnings"]
    assert [q["first_rank"] for q in styled["questions"]] == [q["first_rank"] for q in plain["questions"]]
