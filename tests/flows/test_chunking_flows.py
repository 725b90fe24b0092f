"""flows/chunking: one flow per chunking strategy over data/docs, same embedder, store and k; each one
validates with no key and runs offline up to its retriever on the real embedder and Chroma."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.executor import Executor
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore

FOLDER = Path(__file__).resolve().parents[2] / "flows" / "chunking"
STRATEGIES = ["fixed300", "fixed300_overlap", "recursive", "sentence", "semantic", "markdown", "parent_child"]
QUESTION = "How long can a brand-new workspace try the paid features for free?"


def test_one_flow_per_strategy_sharing_embedder_store_and_k() -> None:
    assert sorted(p.stem for p in FOLDER.glob("*.json")) == sorted(STRATEGIES)
    shapes = set()
    collections = set()
    for name in STRATEGIES:
        flow = load_flow(FOLDER / f"{name}.json")
        nodes = {n.id: n for n in flow.nodes}
        assert nodes["loader"].config["path"] == "../../data/docs"
        assert nodes["splitter"].type.startswith("splitter.")
        final_k = nodes["parents"].config["keep"] if "parents" in nodes else nodes["retriever"].config["k"]
        shapes.add((nodes["embedder"].type, nodes["store"].type, nodes["store"].config["k"], final_k))
        collections.add(nodes["store"].config["collection"])
    assert shapes == {("embedder.local", "vectorstore.chroma", 5, 5)}
    assert len(collections) == len(STRATEGIES)  # no flow searches another flow's chunks


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    return Executor(data_dir=tmp_path_factory.mktemp("chunking-data"))


@pytest.mark.slow
@pytest.mark.parametrize("name", STRATEGIES)
def test_flow_validates_and_runs_offline(name: str, executor: Executor, tmp_path: Path) -> None:
    flow = load_flow(FOLDER / f"{name}.json")
    resolver = CredentialResolver(store=CredentialStore(tmp_path / "none.json"), environ={})
    assert analyze(flow, resolver=resolver).issues == []
    final = "parents" if name == "parent_child" else "retriever"
    run = executor.run(flow, inputs=QUESTION, to=final, base_dir=FOLDER)
    assert run.ok, [r.error for r in run.failed()]
    chunks = run.results["splitter"].outputs["chunks"]
    assert {c.metadata["source"] for c in chunks} == {
        p.name for p in (FOLDER.parents[1] / "data" / "docs").glob("*.md")
    }
    hits = run.results[final].outputs["hits"]
    assert len(hits) == 5
    assert any(h.document.metadata["record_id"] == "plans-and-billing.md" for h in hits[:3]), [
        h.document.metadata["record_id"] for h in hits
    ]
    if name == "parent_child":  # children were searched, their sections (heading path on top) come back
        children = run.results["retriever"].outputs["hits"]
        assert len(children) == 20 and all(h.document.metadata["view"] == "child" for h in children)
        parent_ids = [h.document.metadata["parent_id"] for h in hits]
        assert len(set(parent_ids)) == 5
        for hit in hits:
            assert hit.document.text.startswith("# ") and hit.document.metadata["matched_text"] in hit.document.text
