"""A store fed from a folder stays in step with it: a re-run embeds only the files that changed, a deleted file's
chunks leave the collection, and the store says "1 file changed, 1 removed, 38 unchanged". On every store: embedded
Chroma, a real `chroma run` server, Pinecone (the real SDK against tests/fakes/pinecone_server.py) and embedded
Qdrant."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.executor import Executor, RunResult
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import approvals
from tests.fakes.pinecone_server import FakePinecone
from tests.nodes.test_chroma import chroma_server  # noqa: F401  (the module's real Chroma server)
from tests.nodes.test_store_sync import KEY, Backend, data_dir, pinecone_server  # noqa: F401  (module fixtures)

HANDBOOK = Path(__file__).resolve().parents[2] / "data" / "qa-handbook"


@pytest.fixture(params=["chroma", "chroma-server", "pinecone", "qdrant"])
def any_backend(request: pytest.FixtureRequest, data_dir: Path, tmp_path: Path) -> Backend:  # noqa: F811
    executor = Executor(data_dir=data_dir)
    if request.param == "chroma":
        return Backend("vectorstore.chroma", {"collection": "folder", "persist_directory": str(tmp_path)}, executor)
    if request.param == "chroma-server":
        port = request.getfixturevalue("chroma_server")
        config = {"collection": f"folder-{tmp_path.name}", "server_host": "127.0.0.1", "server_port": port}
        return Backend("vectorstore.chroma", config, executor)
    if request.param == "qdrant":
        config = {"collection": "folder", "path": str(tmp_path / "qdrant"), "search": "dense"}
        return Backend("vectorstore.qdrant", config, executor)
    fake: FakePinecone = request.getfixturevalue("pinecone_server")
    index = f"folder-{tmp_path.name[-20:]}".lower().replace("_", "-")
    fake.create_index(index, dimension=384)
    store = CredentialStore(tmp_path / "creds.json")
    resolver = CredentialResolver({"pinecone.api_key": KEY}, store=store, environ={}, approved=approvals(fake.url))
    return Backend("vectorstore.pinecone", {"host": fake.url}, Executor(resolver=resolver, data_dir=data_dir))


def folder_flow(backend: Backend, folder: Path, **loader: Any) -> Flow:
    return Flow(
        name="folder",
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(folder), "recursive": True, **loader}),
            NodeSpec(id="split", type="splitter.markdown", config={"chunk_size": 400, "chunk_overlap": 0}),
            NodeSpec(id="emb", type="embedder.local"),
            NodeSpec(id="store", type=backend.type_name, config=backend.config),
        ],
        edges=[
            Edge(source="load", source_port="records", target="split", target_port="documents"),
            Edge(source="split", source_port="chunks", target="store", target_port="documents"),
            Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
        ],
    )


def run(backend: Backend, flow: Flow) -> RunResult:
    result = backend.executor.run(flow)
    assert result.ok, [r.error for r in result.failed()]
    return result


def stored_sources(result: RunResult) -> dict[str, int]:
    store = result.results["store"].outputs["store"]
    hits = store.search("test", k=max(store.count(), 1))
    counts: dict[str, int] = {}
    for hit in hits:
        counts[hit.document.metadata["source"]] = counts.get(hit.document.metadata["source"], 0) + 1
    return counts


def test_added_changed_and_deleted_files(any_backend: Backend, tmp_path: Path) -> None:
    backend = any_backend
    folder = tmp_path / "team"
    (folder / "guides").mkdir(parents=True)
    shutil.copy(HANDBOOK / "bug-triage.docx", folder / "bug-triage.docx")
    shutil.copy(HANDBOOK / "test-data.html", folder / "guides" / "test-data.html")
    shutil.copy(HANDBOOK / "on-call.txt", folder / "on-call.txt")
    first = run(backend, folder_flow(backend, folder))
    assert first.results["store"].details["files"] == {"new": 3, "changed": 0, "removed": 0, "unchanged": 0}
    assert first.results["store"].summary.startswith("3 files changed (3 new), 0 removed, 0 unchanged; +")
    before = stored_sources(first)
    assert set(before) == {"bug-triage.docx", "guides/test-data.html", "on-call.txt"}

    (folder / "guides" / "test-data.html").unlink()
    text = (folder / "on-call.txt").read_text(encoding="utf-8")
    (folder / "on-call.txt").write_text(text.replace("within 45 minutes", "within 30 minutes"), encoding="utf-8")
    shutil.copy(HANDBOOK / "environments.html", folder / "environments.html")
    second = run(backend, folder_flow(backend, folder))
    store = second.results["store"]
    assert store.details["files"] == {"new": 1, "changed": 1, "removed": 1, "unchanged": 1}
    assert store.summary.startswith("2 files changed (1 new), 1 removed, 1 unchanged; +")
    after = stored_sources(second)
    assert set(after) == {"bug-triage.docx", "on-call.txt", "environments.html"}  # the deleted file's chunks left
    assert after["bug-triage.docx"] == before["bug-triage.docx"]
    assert store.details["removed"] == before["guides/test-data.html"] + 1  # its chunks and on-call's old one

    # leaving a file out with exclude is the same as deleting it, for the mirror
    third = run(backend, folder_flow(backend, folder, exclude=["*.html"]))
    assert third.results["store"].details["files"] == {"new": 0, "changed": 0, "removed": 1, "unchanged": 2}


def test_touching_one_file_of_forty_embeds_only_its_chunks(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    sources = sorted(HANDBOOK.iterdir())
    for copy in range(4):  # 40 files: each handbook page four times, told apart by a line of its own
        (folder / f"team{copy}").mkdir(parents=True)
        for source in sources:
            target = folder / f"team{copy}" / source.name
            if source.suffix in (".txt", ".html"):
                text = source.read_text(encoding="utf-8")
                target.write_text(text.replace("</body>", f"<p>Copy {copy}.</p></body>") + f"\nCopy {copy}.\n")
            else:
                shutil.copy(source, target)
    backend = Backend(
        "vectorstore.chroma",
        {"collection": "forty", "persist_directory": str(tmp_path / "chroma")},
        Executor(data_dir=tmp_path / "data"),
    )
    flow = folder_flow(backend, folder)
    first = run(backend, flow)
    assert first.results["load"].details["files"] == 40
    embedder = first.results["emb"].outputs["embedder"]
    embedded = embedder.model_texts
    assert embedded > 0

    unchanged = run(backend, flow)
    assert embedder.model_texts == embedded  # nothing new: no text reaches the model
    assert unchanged.results["store"].summary.startswith("0 files changed, 0 removed, 40 unchanged; +0 added")

    edited = folder / "team2" / "on-call.txt"
    old_chunks = {c.text for c in unchanged.results["split"].outputs["chunks"] if c.source == "team2/on-call.txt"}
    edited.write_text(edited.read_text(encoding="utf-8").replace("one extra day off", "two extra days off"))
    third = run(backend, flow)
    new_chunks = {c.text for c in third.results["split"].outputs["chunks"] if c.source == "team2/on-call.txt"}
    changed_texts = new_chunks - old_chunks
    assert len(changed_texts) == 1
    assert embedder.model_texts - embedded == len(changed_texts)  # only that file's changed chunk was embedded
    store = third.results["store"]
    assert store.details["files"] == {"new": 0, "changed": 1, "removed": 0, "unchanged": 39}
    assert store.summary.startswith("1 file changed, 0 removed, 39 unchanged; +1 added, \u22121 removed")


def test_a_streamed_folder_run_mirrors_the_folder_too(tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    for name in ("onboarding.pptx", "test-strategy.docx", "on-call.txt"):
        shutil.copy(HANDBOOK / name, folder / name)
    backend = Backend(
        "vectorstore.chroma",
        {"collection": "streamed", "persist_directory": str(tmp_path / "chroma")},
        Executor(data_dir=tmp_path / "data", stream="always"),
    )
    first = run(backend, folder_flow(backend, folder))
    assert "streamed" in first.results["load"].details
    assert first.results["store"].details["files"] == {"new": 3, "changed": 0, "removed": 0, "unchanged": 0}
    (folder / "onboarding.pptx").unlink()
    second = run(backend, folder_flow(backend, folder))
    assert second.results["store"].details["files"] == {"new": 0, "changed": 0, "removed": 1, "unchanged": 2}
    assert "onboarding.pptx" not in stored_sources(second)
