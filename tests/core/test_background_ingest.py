"""The builder's background ingest: fills a local flow's store before the first question, tags its events,
can be cancelled and resumes; flows that would send data anywhere never start by themselves."""

from __future__ import annotations

from pathlib import Path

from flowbuilder.background import JOB, BackgroundIngest
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow
from tests.serve.conftest import DEMO_FLOW
from tests.serve.test_concurrent_search import search_flow, small_csv


def test_ingests_in_the_background_so_the_first_question_embeds_nothing(tmp_path: Path) -> None:
    flow = search_flow(small_csv(tmp_path / "rows.csv", 12), "background")
    executor = Executor(data_dir=tmp_path / "data")
    events: list[RunEvent] = []
    job = BackgroundIngest(executor, flow, base_dir=tmp_path, on_event=events.append)
    assert job.targets == ["store"]
    assert job.start() and job.wait(300)
    assert job.error is None and job.results[0].ok and job.done == job.total == 12
    assert events and all(e.data.get("job") == JOB for e in events)
    assert any(e.kind == "progress" and e.node_id == "store" for e in events)

    store = job.results[0].results["store"].outputs["store"]
    sent_before = store.embedder.model_texts
    run = executor.run(flow, inputs="How is a login with two dots handled?", base_dir=tmp_path)
    assert run.ok and run.results["retriever"].outputs["hits"]
    assert run.results["load"].status == "cached"  # the background run's results serve the question
    assert "+0 added" in run.results["store"].summary and "12 kept" in run.results["store"].summary
    assert run.results["store"].outputs["store"].embedder.model_texts == sent_before + 1  # the question only


def test_cancel_stops_it_and_the_next_run_resumes(tmp_path: Path) -> None:
    flow = search_flow(small_csv(tmp_path / "rows.csv", 40), "background-cancel")
    executor = Executor(data_dir=tmp_path / "data")
    job = BackgroundIngest(executor, flow, base_dir=tmp_path)

    def cancel_at_first_progress(event: RunEvent) -> None:
        if event.kind == "progress" and event.node_id == "store" and event.data.get("done"):
            job.cancel()

    job.on_event = cancel_at_first_progress
    job.start()
    assert job.wait(300)
    assert job.results and job.results[0].cancelled
    again = executor.run(flow, to="store", base_dir=tmp_path)
    assert again.ok and again.results["store"].outputs["store"].count() == 40


def test_only_local_ingests_start_by_themselves(tmp_path: Path) -> None:
    executor = Executor(data_dir=tmp_path / "data")
    demo = load_flow(DEMO_FLOW)
    assert BackgroundIngest(executor, demo, base_dir=DEMO_FLOW.parent).targets == ["store"]
    remote = demo.model_copy(deep=True)
    remote.node("embedder").type = "embedder.openai"
    assert BackgroundIngest(executor, remote, base_dir=DEMO_FLOW.parent).targets == []
    server = demo.model_copy(deep=True)
    server.node("store").config["server_host"] = "db.example.com"
    assert BackgroundIngest(executor, server, base_dir=DEMO_FLOW.parent).targets == []
    assert not BackgroundIngest(executor, Flow(name="empty"), base_dir=tmp_path).start()


def test_a_loader_with_nothing_to_read_starts_no_ingest(tmp_path: Path) -> None:
    """A new flow's empty loader would only fail with "no file to load" in the run log."""
    executor = Executor(data_dir=tmp_path / "data")
    demo = load_flow(DEMO_FLOW)
    loader = next(n for n in demo.nodes if n.type == "loader.file")
    empty = demo.model_copy(deep=True)
    empty.node(loader.id).config["path"] = ""
    assert BackgroundIngest(executor, empty, base_dir=DEMO_FLOW.parent).targets == []
    assert BackgroundIngest(executor, demo, base_dir=DEMO_FLOW.parent).targets == ["store"]
