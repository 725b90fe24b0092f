"""The retrieval example flows: valid without keys, and the hybrid flow retrieves with every stage visible."""

from __future__ import annotations

from pathlib import Path

from flowbuilder.examples import flows_dir
from flowbuilder.executor import Executor
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

HYBRID = flows_dir() / "hybrid_csv_rag.json"
ADVANCED = flows_dir() / "advanced_rag_5000.json"
CSV = Path(__file__).resolve().parents[2] / "data" / "VWO_500_Test_Cases.csv"


def no_keys(tmp_path: Path) -> CredentialResolver:
    return CredentialResolver(store=CredentialStore(tmp_path / "none.json"), environ={})


def test_hybrid_flow_validates(tmp_path: Path) -> None:
    assert analyze(load_flow(HYBRID), resolver=no_keys(tmp_path)).issues == []


def test_advanced_flow_validates(tmp_path: Path) -> None:
    assert analyze(load_flow(ADVANCED), resolver=no_keys(tmp_path)).issues == []


def test_advanced_flow_ships_its_data_and_picks_columns() -> None:
    flow = load_flow(ADVANCED)
    data = flows_dir() / flow.node("loader").config["path"]
    assert data.is_file() and data.stat().st_size > 3_000_000  # the 5,000 cases ship with the project
    assert flow.node("store").type == "vectorstore.qdrant" and flow.node("store").config["prefetch"] == 20
    assert "Component" in flow.node("labeller").config["meta_columns"]


def test_hybrid_flow_runs_offline_to_retrieval_with_stages(tmp_path: Path) -> None:
    # the first 60 test cases keep the test quick; the wiring is the shipped flow's, run from the folder that
    # holds the slice (a file outside the flow's folder would need approval)
    lines = CSV.read_text(encoding="utf-8-sig").splitlines()
    (tmp_path / "cases.csv").write_text("\n".join(lines[:61]) + "\n", encoding="utf-8")
    flow = load_flow(HYBRID)
    flow.node("loader").config["path"] = str(tmp_path / "cases.csv")
    question = "Is the order in which the Tab key moves between sign-in fields checked?"
    run = Executor(data_dir=tmp_path / "fbdata").run(flow, inputs=question, to="retriever", base_dir=tmp_path)
    assert run.ok, [r.error for r in run.failed()]
    hits = run.results["retriever"].outputs["hits"]
    assert len(hits) == 5
    assert hits[0].document.metadata["record_id"] == "LOGIN-009"  # keyboard tab order
    assert all(h.document.text.startswith("Scenario TID: ") for h in hits)  # whole records, not views
    assert len({h.document.metadata["parent_id"] for h in hits}) == 5
    assert set(hits[0].legs) == {"dense", "keyword"} and hits[0].explain.startswith("1/")
    fusion = run.results["fusion"].details
    assert set(fusion["stages"]) == {"dense", "keyword"} and fusion["fused"][0]["record"] == "LOGIN-009"
    assert run.results["keyword"].details["indexed"] == 120  # 60 whole records + 60 descriptions mirrored


def test_advanced_flow_runs_offline_up_to_the_llm_steps(tmp_path: Path) -> None:
    """The first 40 of the 5,000 cases through labeller -> Qdrant embedded; without Ollama the rewrite searches
    the original question and the judge keeps the incoming order, each with a warning that says why."""
    from flowbuilder.nodes.vectorstores.qdrant import close_local_clients

    flow = load_flow(ADVANCED)
    source = flows_dir() / flow.node("loader").config["path"]
    lines = source.read_text(encoding="utf-8").splitlines()
    (tmp_path / "cases.csv").write_text("\n".join(lines[:41]) + "\n", encoding="utf-8")
    flow.node("loader").config["path"] = str(tmp_path / "cases.csv")
    flow.node("llm").config["base_url"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    try:
        run = Executor(data_dir=tmp_path / "fbdata").run(
            flow, inputs="How is data collection checked in SmartCode?", to="rerank", base_dir=tmp_path
        )
    finally:
        close_local_clients()
    assert run.results["store"].status == "ok" and run.results["store"].details["count"] == 40
    records = run.results["labeller"].outputs["records"]
    assert records[0].metadata["record_id"] == "VWO-1001" and records[0].metadata["Component"] == "SmartCode"
    assert records[0].text.startswith("VWO-1001: [SmartCode]")
    rewrite = run.results["rewrite"]
    assert rewrite.status == "warning" and "original question only" in rewrite.warning and "Ollama" in rewrite.warning
    legs = {leg for hit in rewrite.outputs["hits"] for leg in hit.legs}
    assert rewrite.outputs["hits"] and "q0" in legs and "q1" not in legs  # the original question alone
    assert {"dense", "sparse"} <= legs  # Qdrant's own hybrid legs are shown too
    rerank = run.results["rerank"]
    assert rerank.status == "warning" and "not reranked" in rerank.warning
    assert [h.id for h in rerank.outputs["hits"]] == [h.id for h in rewrite.outputs["hits"][:4]]
