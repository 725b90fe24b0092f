"""The example flows: valid with no keys, and the main job runs offline up to the LLM step."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.evaluation.chunk_stats import compute_chunk_stats
from flowbuilder.examples import (
    AGENT_FLOW,
    IMPROVED_FLOW,
    NAIVE_FLOW,
    PDF_FLOW,
    ROW_LABELLED_FLOW,
    example_flow,
    flows_dir,
)
from flowbuilder.executor import Executor
from flowbuilder.formats.native import load_flow, save_flow
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

EXAMPLES = sorted(flows_dir().glob("*.json"))
QUESTION = "How is an email with two dots in a row handled at login?"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_validates_without_any_key(path: Path, tmp_path: Path) -> None:
    resolver = CredentialResolver(store=CredentialStore(tmp_path / "none.json"), environ={})
    assert analyze(load_flow(path), resolver=resolver).issues == []


def test_the_four_examples_of_the_issue_exist() -> None:
    for name in (PDF_FLOW, NAIVE_FLOW, ROW_LABELLED_FLOW, AGENT_FLOW):
        assert example_flow(name).is_file()


@pytest.fixture(scope="module")
def row_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The demo flow run once up to the retriever, on the real CSV, embedder and Chroma."""
    data_dir = tmp_path_factory.mktemp("data")
    executor = Executor(data_dir=data_dir)
    flow = load_flow(example_flow(ROW_LABELLED_FLOW))
    run = executor.run(flow, inputs=QUESTION, to="retriever", base_dir=flows_dir())
    return executor, flow, run


def test_row_labelled_flow_retrieves_the_right_test_case(row_run) -> None:  # type: ignore[no-untyped-def]
    _, _, run = row_run
    assert run.ok, [r.error for r in run.failed()]
    hits = run.results["retriever"].outputs["hits"]
    assert len(hits) == 5
    ids = [h.document.metadata["record_id"] for h in hits]
    assert "INVALID-011" in ids[:2]  # "consecutive dots in email"
    assert all(h.document.text.startswith("Scenario TID: ") for h in hits)
    assert hits[0].score >= hits[-1].score


def test_changing_k_reuses_the_embedded_store(row_run) -> None:  # type: ignore[no-untyped-def]
    executor, flow, _ = row_run
    flow.node("retriever").config["k"] = 8
    again = executor.run(flow, inputs=QUESTION, to="retriever", base_dir=flows_dir())
    statuses = {n: again.results[n].status for n in ("loader", "labeller", "splitter", "store", "retriever")}
    assert statuses == {
        "loader": "cached",
        "labeller": "cached",
        "splitter": "cached",
        "store": "ok",  # a store re-syncs every run (the collection is outside the flow) ...
        "retriever": "ok",
    }
    store = again.results["store"].details
    assert (store["added"], store["removed"], store["kept"], store["count"]) == (0, 0, 500, 500)  # ... embeds nothing
    assert len(again.results["retriever"].outputs["hits"]) == 8


def test_main_job_offline_shows_hits_and_prompt_and_explains_the_llm(tmp_path: Path, capsys) -> None:
    """`flowbuilder run <row-labelled flow> --input ...` with no Ollama and no key."""
    flow = load_flow(example_flow(ROW_LABELLED_FLOW))
    flow.node("loader").config["path"] = str(flows_dir() / flow.node("loader").config["path"])
    flow.node("llm").config["base_url"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    path = tmp_path / "demo.json"
    save_flow(flow, path)
    code = main(["run", str(path), "--input", QUESTION])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0  # the demo answers offline: its LLM quoted the chunks (status warning, not a failure)
    assert "Retrieved by retriever (5 hits" in out and "INVALID-011" in out
    assert "Prompt built by prompt:" in out and "Question: " + QUESTION in out
    assert "WARNING llm: the model did not answer (Ollama" in out and "ollama serve" in out
    assert "answered extractively" in out and "! llm: the model did not answer" in captured.err
    answer = out.split("Output answer.message:")[1].split("\n\n")[0]
    assert 'The closest test case is INVALID-011, "Verify Invalid Login - consecutive dots in email" [1].' in answer
    assert "[1] INVALID-011, Expected Result: " in answer  # the record's outcome is quoted with it


@pytest.mark.parametrize(
    ("name", "chunks", "cut", "at_start"),
    [(IMPROVED_FLOW, 481, 480, 1), (NAIVE_FLOW, 501, 0, 500), (ROW_LABELLED_FLOW, 500, 0, 500)],
)
def test_example_chunking_figures(name: str, chunks: int, cut: int, at_start: int, tmp_path: Path) -> None:
    """The figures the course flows are known for come out of the shipped examples."""
    flow = load_flow(example_flow(name))
    run = Executor(data_dir=tmp_path).run(flow, to="splitter", base_dir=flows_dir())
    feeding = next(e.source for e in flow.edges if e.target == "splitter" and e.target_port == "documents")
    documents = run.results[feeding].outputs["records"]
    stats = compute_chunk_stats(documents, run.results["splitter"].outputs["chunks"])
    assert (stats.chunks, stats.records_cut, stats.chunks_at_record_start) == (chunks, cut, at_start)


def test_run_to_the_splitter_prints_its_chunks_as_the_final_output(capsys) -> None:
    assert main(["run", str(example_flow(NAIVE_FLOW)), "--to", "splitter"]) == 0
    out = capsys.readouterr().out
    assert "501 chunks" in out and "Output splitter.chunks:" in out and "501 items" in out
    first = out.split("Output splitter.chunks:")[1].splitlines()[2]
    assert first.startswith('  | [0] "Scenario TID","TestCase Description"')  # the header alone is chunk 0
