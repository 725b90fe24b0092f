"""Keyword search stands in for the dense search while the background ingest fills the store: the demo answers
from the first moment, from the same rows, and says so; flows whose store feeds anything else wait as before."""

from __future__ import annotations

import threading
from pathlib import Path

from flowbuilder.background import BackgroundIngest
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Edge, NodeSpec
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import analyze
from flowbuilder.standin import keyword_stand_in
from tests.serve.conftest import DEMO_FLOW
from tests.serve.test_concurrent_search import search_flow, small_csv

QUESTION = "How is an email with two dots in a row handled at login?"


def test_the_demo_answers_by_keyword_search_while_its_store_fills(tmp_path: Path) -> None:
    flow = load_flow(DEMO_FLOW)
    executor = Executor(data_dir=tmp_path / "data")
    first_progress = threading.Event()
    job = BackgroundIngest(
        executor,
        flow,
        base_dir=DEMO_FLOW.parent,
        on_event=lambda e: first_progress.set() if e.kind == "progress" else None,
    )
    stand_in = job.stand_in()
    assert stand_in is not None and stand_in.replaced == ("retriever",)
    keyword = stand_in.flow.node("retriever")
    assert keyword.type == "retriever.keyword" and keyword.config["k"] == 5 and keyword.name == "Top 5 chunks"
    assert {"store", "embedder"}.isdisjoint(stand_in.flow.node_ids())  # left to the ingest
    assert stand_in.quiet == {"loader", "labeller", "splitter", "store", "embedder"}
    with job.paused():  # the ingest waits after its first batch: the answer comes before the store is full
        assert job.start()
        assert first_progress.wait(300)
        run = executor.run(stand_in.flow, inputs=QUESTION, to="prompt", base_dir=DEMO_FLOW.parent)
        assert job.running and job.done < 500
    assert run.ok, [r.error for r in run.failed()]
    hits = run.results["retriever"].outputs["hits"]
    assert hits and "INVALID-011" in hits[0].document.text  # "consecutive dots in email"
    assert all("keyword" in hit.legs for hit in hits)
    assert "INVALID-011" in run.results["prompt"].outputs["prompt"]
    job.cancel()
    assert job.wait(300)


def test_stand_in_for_a_store_that_searches_itself_and_a_reader_of_its_collection(tmp_path: Path) -> None:
    flow = search_flow(small_csv(tmp_path / "rows.csv", 12), "stand-in-self")
    # the store searches itself (its query wired, its hits read) instead of a retriever doing it
    flow.nodes = [n for n in flow.nodes if n.id != "retriever"] + [NodeSpec(id="out", type="parser.stringify")]
    flow.edges = [e for e in flow.edges if "retriever" not in (e.source, e.target)] + [
        Edge(source="question", source_port="message", target="store", target_port="query"),
        Edge(source="store", source_port="hits", target="out", target_port="items"),
    ]
    flow.node("store").config["k"] = 2
    executor = Executor(data_dir=tmp_path / "data")
    graph = analyze(flow, executor.registry, base_dir=tmp_path)
    stand_in = keyword_stand_in(flow, graph, ["store"])
    assert stand_in is not None and stand_in.replaced == ("store",)
    store = stand_in.flow.node("store")
    assert store.type == "retriever.keyword" and store.config["k"] == 2
    assert "embed" not in stand_in.flow.node_ids()
    run = executor.run(stand_in.flow, inputs="login with two dots", base_dir=tmp_path)
    assert run.ok and len(run.results["store"].outputs["hits"]) == 2


def test_no_stand_in_when_the_store_feeds_something_keyword_search_is_not(tmp_path: Path) -> None:
    executor = Executor(data_dir=tmp_path / "data")
    agent = load_flow(DEMO_FLOW.parent / "agent_rag.json")  # the store is an agent's tool
    job = BackgroundIngest(executor, agent, base_dir=DEMO_FLOW.parent)
    assert job.targets and job.stand_in() is None
    assert keyword_stand_in(agent, analyze(agent, executor.registry), []) is None


def test_the_embedded_count_never_goes_back(tmp_path: Path) -> None:
    flow = search_flow(small_csv(tmp_path / "rows.csv", 3), "counts")
    job = BackgroundIngest(Executor(data_dir=tmp_path / "data"), flow, base_dir=tmp_path)

    def progress(node: str, done: int, total: int, message: str = "embedding") -> None:
        job._event(RunEvent("progress", node, {"done": done, "total": total, "message": message}))

    progress("store", 500, 500)
    progress("label", 0, 500, "")  # another node's count
    progress("store", 0, 500, "writing")  # a later stage of the store
    progress("store", 120, 500)  # a late, older batch report
    assert (job.done, job.total) == (500, 500)
