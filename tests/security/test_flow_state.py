"""State in the data dir belongs to the flow that wrote it (issue 30, "another flow's data").

A stranger's flow with no loader and no approval used to open the default Chroma collection another flow had
filled from a folder the user approved for that flow only, and a ``memory.window`` opened another flow's chat
session. These reproducers keep both refused or harmless, and show how a user shares a store on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cli import main
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from tests.fakes.llm_server import FakeLLMServer, running_server
from tests.security.cli_helpers import cli

SECRET_ROW = "the vault code is 7391"


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(data))
    monkeypatch.setenv("FLOWBUILDER_CREDENTIALS", str(tmp_path / "credentials.json"))
    return data


def edge(source: str, source_port: str, target: str, target_port: str) -> Edge:
    return Edge(source=source, source_port=source_port, target=target, target_port=target_port)


def store_node(**config: Any) -> NodeSpec:
    return NodeSpec(id="store", type="vectorstore.chroma", config=config)


def writer_flow(path: Path, source: Path, meta: dict[str, Any] | None = None, **store: Any) -> Path:
    """loader (an approved private file) -> splitter -> Chroma."""
    flow = Flow(
        name="victim",
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": str(source)}),
            NodeSpec(id="split", type="splitter.record"),
            NodeSpec(id="emb", type="embedder.wordllama", config={"dim": 64}),
            store_node(**store),
        ],
        edges=[
            edge("load", "records", "split", "documents"),
            edge("split", "chunks", "store", "documents"),
            edge("emb", "embedder", "store", "embedder"),
        ],
        meta=meta or {},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    save_flow(flow, path)
    return path


def reader_flow(path: Path, meta: dict[str, Any] | None = None, **store: Any) -> Path:
    """No loader: a chat input searching a collection."""
    flow = Flow(
        name="stranger",
        nodes=[
            NodeSpec(id="q", type="chat.input", config={"text": "vault code"}),
            NodeSpec(id="emb", type="embedder.wordllama", config={"dim": 64}),
            store_node(**store),
        ],
        edges=[edge("q", "message", "store", "query"), edge("emb", "embedder", "store", "embedder")],
        meta=meta or {},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    save_flow(flow, path)
    return path


@pytest.fixture
def private(tmp_path: Path) -> Path:
    folder = tmp_path / "private"
    folder.mkdir()
    (folder / "notes.csv").write_text(f"id,text\nn1,{SECRET_ROW}\n", encoding="utf-8")
    return folder


def ingest(capsys: pytest.CaptureFixture[str], flow: Path, private: Path) -> None:
    code, ran = cli(capsys, "run", str(flow), "--allow-path", str(private))
    assert code == 0 and "+1 added" in ran, ran


def test_a_flow_without_a_loader_does_not_see_another_flows_default_collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private: Path
) -> None:
    ingest(capsys, writer_flow(tmp_path / "victim" / "flow.json", private / "notes.csv"), private)
    stranger = reader_flow(tmp_path / "downloads" / "flow.json")
    code, ran = cli(capsys, "run", str(stranger))
    assert code == 0 and SECRET_ROW not in ran  # it runs: over its own, empty, collection
    assert "is empty: nothing in this flow writes to it" in ran  # its own (empty) collection, said so
    # the same file name in another folder, or the victim's own folder, is still another flow
    for place in (tmp_path / "elsewhere" / "flow.json", tmp_path / "victim" / "copy.json"):
        code, ran = cli(capsys, "run", str(reader_flow(place)))
        assert code == 0 and SECRET_ROW not in ran


def test_naming_another_flows_store_folder_is_untrusted_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private: Path, own_data_dir: Path
) -> None:
    victim = writer_flow(tmp_path / "victim" / "flow.json", private / "notes.csv")
    ingest(capsys, victim, private)
    folders = sorted(p for p in (own_data_dir / "flows").glob("*/chroma"))
    assert len(folders) == 1, folders  # the victim's own store folder in the data dir
    stranger = reader_flow(tmp_path / "stranger" / "flow.json", persist_directory=str(folders[0]))
    code, shown = cli(capsys, "validate", str(stranger), "--no-credentials")
    assert code == 1 and "[untrusted-store]" in shown, shown
    assert "'flowbuilder'" in shown and str(victim.resolve()) in shown  # the collection and who wrote it
    code, ran = cli(capsys, "run", str(stranger))
    assert code == 1 and "[untrusted-store]" in ran and SECRET_ROW not in ran


def test_copying_the_flow_id_claims_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], private: Path) -> None:
    meta = {"flow_id": "0f3c2b9a5e7d4c1f8a6b2d4e6f8a0b1c"}
    ingest(capsys, writer_flow(tmp_path / "victim" / "flow.json", private / "notes.csv", meta=meta), private)
    code, ran = cli(capsys, "run", str(reader_flow(tmp_path / "stranger" / "flow.json", meta=meta)))
    assert code == 0 and SECRET_ROW not in ran


def test_an_imported_file_saved_over_a_flow_does_not_inherit_its_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private: Path
) -> None:
    """A stranger's flow imported in the builder (which saves it over the user's file of the same name) gets a
    new flow id, so a new scope, whatever id its file carried."""
    from flowbuilder.ui.formats_bridge import import_data

    victim = writer_flow(tmp_path / "work" / "rag.json", private / "notes.csv", meta={"flow_id": "a" * 32})
    ingest(capsys, victim, private)
    stranger = reader_flow(tmp_path / "downloads" / "rag.json", meta={"flow_id": "a" * 32})
    imported, _ = import_data(json.loads(stranger.read_text(encoding="utf-8")), "rag.json")
    assert imported.meta["flow_id"] != "a" * 32
    save_flow(imported, victim)
    code, ran = cli(capsys, "run", str(victim))
    assert code == 0 and SECRET_ROW not in ran


def test_sharing_a_store_on_purpose(tmp_path: Path, capsys: pytest.CaptureFixture[str], private: Path) -> None:
    """The documented way: the writer keeps the store in a folder both flows may read; the reader only reads
    (no documents connected) and the user approves that collection for it."""
    project = tmp_path / "project"
    writer = writer_flow(project / "ingest.json", private / "notes.csv", persist_directory="./stores")
    ingest(capsys, writer, private)
    reader = reader_flow(project / "ask.json", persist_directory="./stores")
    code, shown = cli(capsys, "validate", str(reader), "--no-credentials")
    assert code == 1 and "[untrusted-store]" in shown and str(writer.resolve()) in shown
    address = f"chroma:{(project / 'stores').resolve()}:flowbuilder"
    assert f"--allow-store {address}" in shown
    code, ran = cli(capsys, "run", str(reader), "--allow-store", address)
    assert code == 0 and SECRET_ROW in ran, ran
    # approved in the credentials file for that reader flow: lasting
    creds = tmp_path / "credentials.json"
    creds.write_text(json.dumps({"approved_stores": {address: [str(reader.resolve())]}}), encoding="utf-8")
    code, ran = cli(capsys, "run", str(reader))
    assert code == 0 and SECRET_ROW in ran, ran
    # the approval covers reading only: a flow that would write the shared collection is refused
    other_writer = writer_flow(project / "second.json", private / "notes.csv", persist_directory="./stores")
    code, ran = cli(capsys, "run", str(other_writer), "--allow-path", str(private), "--allow-store", address)
    assert code == 1 and "[untrusted-store]" in ran and "writes only its own collections" in ran


def test_a_collection_nobody_recorded_is_not_read_without_approval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private: Path, own_data_dir: Path
) -> None:
    """Stores from before writers were recorded (the old shared <data dir>/chroma) stay where they are; a flow
    reads one only once the user approves it, and nothing is deleted."""
    old = writer_flow(
        tmp_path / "old" / "flow.json", private / "notes.csv", persist_directory=str(own_data_dir / "chroma")
    )
    ingest(capsys, old, private)
    (own_data_dir / "ledger.sqlite").unlink()  # as if written by an older Flowbuilder
    stranger = reader_flow(tmp_path / "stranger" / "flow.json", persist_directory=str(own_data_dir / "chroma"))
    code, ran = cli(capsys, "run", str(stranger))
    assert code == 1 and "untrusted-store:" in ran and SECRET_ROW not in ran, ran
    assert "no flow is recorded as its writer" in ran
    address = f"chroma:{(own_data_dir / 'chroma').resolve()}:flowbuilder"
    code, ran = cli(capsys, "run", str(stranger), "--allow-store", address)
    assert code == 0 and SECRET_ROW in ran


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server()


def memory_flow(path: Path, server: FakeLLMServer) -> Path:
    """chat -> agent (an Ollama model on this machine) with a persisted window memory."""
    flow = Flow(
        name="chat",
        nodes=[
            NodeSpec(id="q", type="chat.input"),
            NodeSpec(id="memory", type="memory.window", config={"persist": True}),
            NodeSpec(id="model", type="llm.ollama", config={"base_url": server.ollama_host, "stream": False}),
            NodeSpec(id="agent", type="agent.tools"),
            NodeSpec(id="out", type="chat.output"),
        ],
        edges=[
            edge("q", "message", "agent", "message"),
            edge("memory", "memory", "agent", "memory"),
            edge("model", "model", "agent", "model"),
            edge("agent", "answer", "out", "message"),
        ],
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    save_flow(flow, path)
    return path


def test_chat_memory_is_per_flow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own_data_dir: Path, server: FakeLLMServer
) -> None:
    """The reproducer: a stranger's memory node opened the victim's "cli" session and sent it to a model."""
    server.reply("noted")
    code, ran = cli(capsys, "run", str(memory_flow(tmp_path / "victim" / "chat.json", server)), "--input", SECRET_ROW)
    assert code == 0, ran
    stored = list((own_data_dir / "flows").glob("*/memory/cli.json"))
    assert len(stored) == 1 and SECRET_ROW in stored[0].read_text(encoding="utf-8")
    server.reply("nothing to recall")
    stranger = memory_flow(tmp_path / "stranger" / "chat.json", server)
    code = main(["run", str(stranger), "--input", "what did I say?", "--json"])
    ran = capsys.readouterr().out
    assert code == 0, ran
    details = json.loads(ran)["details"]
    assert details["memory"]["stored_exchanges"] == 0
    assert SECRET_ROW not in ran and SECRET_ROW not in json.dumps(server.requests[-1].body)
