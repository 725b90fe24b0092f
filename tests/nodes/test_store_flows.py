"""Store nodes inside flows: a reader waits for its writer, nothing green over nothing, placeholders off
the path, relative paths next to the flow file, and two runs filling a new persist directory at once."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flowbuilder.cli import main
from flowbuilder.data import Document
from flowbuilder.errors import FlowValidationError
from flowbuilder.executor import Executor, RunResult
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.graph import ImplicitDependency, analyze, changed_since, config_keys, implicit_dependencies
from flowbuilder.node import RunContext
from flowbuilder.nodes.vectorstores.chroma import ChromaConfig, ChromaNode, chroma_location
from flowbuilder.trust.places import resolve_path

ROOT = Path(__file__).resolve().parents[2]
READER, WRITER = "Chroma-CpMif", "Chroma-D7gwx"  # the course flow's ids: the reader sorts first
QUESTION = "What happens with two consecutive dots in the email address?"


def write_cases(folder: Path) -> Path:
    rows = [
        "id,description",
        "LOGIN_001,Login with a valid email and password opens the dashboard",
        "LOGIN_002,Two consecutive dots in the email address are rejected at login",
        "LOGIN_003,Password reset sends an email with a one-time link",
    ]
    path = folder / "cases.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def course_flow(persist: str = "./chroma_db", collection: str = "langflow_ai3x", csv: str = "cases.csv") -> Flow:
    """The LangFlow course's shape: an ingest branch into one Chroma node, a search branch from another
    Chroma node on the same collection, and no connection between the branches."""
    store = {"collection": collection, "persist_directory": persist, "k": 2}
    return Flow(
        name="course",
        nodes=[
            NodeSpec(id="File-XydKH", type="loader.file", config={"path": csv}),
            NodeSpec(id="SplitText-vKJXC", type="splitter.character", config={"separator": "\n", "chunk_overlap": 0}),
            NodeSpec(id="Emb-ingest", type="embedder.local"),
            NodeSpec(id=WRITER, type="vectorstore.chroma", config=store),
            NodeSpec(id="ChatInput-GwedZ", type="chat.input"),
            NodeSpec(id="Emb-search", type="embedder.local"),
            NodeSpec(id=READER, type="vectorstore.chroma", config=store),
            NodeSpec(id="Parser-rmtSy", type="parser.stringify"),
        ],
        edges=[
            Edge(source="File-XydKH", source_port="records", target="SplitText-vKJXC", target_port="documents"),
            Edge(source="SplitText-vKJXC", source_port="chunks", target=WRITER, target_port="documents"),
            Edge(source="Emb-ingest", source_port="embedder", target=WRITER, target_port="embedder"),
            Edge(source="ChatInput-GwedZ", source_port="message", target=READER, target_port="query"),
            Edge(source="Emb-search", source_port="embedder", target=READER, target_port="embedder"),
            Edge(source=READER, source_port="hits", target="Parser-rmtSy", target_port="items"),
        ],
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("flows-data")


def run(flow: Flow, folder: Path, data_dir: Path, **kwargs: Any) -> RunResult:
    return Executor(data_dir=data_dir).run(flow, inputs=QUESTION, base_dir=folder, **kwargs)


# -- a reader waits for its writer ------------------------------------------------------------------


def test_implicit_dependency_is_found_and_validate_lists_it(tmp_path: Path, capsys: Any) -> None:
    flow = course_flow()
    deps = implicit_dependencies(flow)
    assert deps == [ImplicitDependency(WRITER, READER, "same collection chroma:chroma_db:langflow_ai3x")]
    assert implicit_dependencies(course_flow(collection="other")) != []
    other = course_flow()
    other.nodes[6].config = {**other.nodes[6].config, "collection": "another"}
    assert implicit_dependencies(other) == []  # another collection: no dependency

    path = tmp_path / "course.json"
    save_flow(flow, path)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        f"runs first: '{WRITER}' before '{READER}' (same collection chroma:{tmp_path}/chroma_db:langflow_ai3x)" in out
    )


def test_first_run_of_the_course_pattern_returns_hits(tmp_path: Path, data_dir: Path) -> None:
    write_cases(tmp_path)
    result = run(course_flow(), tmp_path, data_dir)
    assert result.ok, [r.error for r in result.failed()]
    assert result.order.index(WRITER) < result.order.index(READER)
    hits = result.results[READER].outputs["hits"]
    assert hits and "consecutive dots" in hits[0].document.text
    assert result.results[READER].status == "ok" and not result.results[READER].warning
    assert (tmp_path / "chroma_db").is_dir()  # next to the flow file


def test_running_to_the_reader_runs_its_writer(tmp_path: Path, data_dir: Path) -> None:
    write_cases(tmp_path)
    result = run(course_flow(), tmp_path, data_dir, to="Parser-rmtSy")
    assert WRITER in result.order and "File-XydKH" in result.order
    assert result.results[READER].outputs["hits"]


# -- nothing green over nothing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "cause"),
    [("disable-loader", "was disabled"), ("missing-file", "failed"), ("disable-writer", "was disabled")],
)
def test_empty_collection_warns_with_the_reason(tmp_path: Path, data_dir: Path, change: str, cause: str) -> None:
    flow = course_flow(collection=f"empty-{change}", csv="missing.csv" if change == "missing-file" else "cases.csv")
    write_cases(tmp_path)
    if change != "missing-file":
        flow.find_node("File-XydKH" if change == "disable-loader" else WRITER).disabled = True  # type: ignore[union-attr]
    result = run(flow, tmp_path, data_dir)
    reader = result.results[READER]
    assert reader.status == "warning"
    assert reader.warning == f"collection empty-{change} is empty: its ingest branch {cause}"
    assert reader.outputs["hits"] == []
    if change != "disable-writer":
        assert result.results[WRITER].warning == f"collection empty-{change} is empty: its ingest branch {cause}"


def test_reader_without_a_writer_on_an_empty_collection_warns(tmp_path: Path, data_dir: Path) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="emb", type="embedder.local"),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "nothing-here"}),
            NodeSpec(id="ask", type="chat.input"),
            NodeSpec(id="ret", type="retriever.vector"),
        ],
        edges=[
            Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="store", source_port="store", target="ret", target_port="store"),
            Edge(source="ask", source_port="message", target="ret", target_port="query"),
        ],
    )
    result = run(flow, tmp_path, tmp_path / "data")
    assert result.ok  # a warning still counts as succeeded
    expected = "collection nothing-here is empty: nothing in this flow writes to it"
    assert result.results["store"].status == "warning" and result.results["store"].warning.startswith(expected)
    assert result.results["ret"].status == "warning" and result.results["ret"].warning.startswith(expected)
    assert result.results["ret"].summary == "0 hits, retriever ready (empty store)"


def test_zero_hits_from_a_filled_store_is_ok_and_says_why(tmp_path: Path, data_dir: Path) -> None:
    write_cases(tmp_path)
    flow = course_flow(collection="filled")
    flow.nodes.append(NodeSpec(id="ret", type="retriever.vector", config={"min_score": 0.99}))
    flow.edges += [
        Edge(source=WRITER, source_port="store", target="ret", target_port="store"),
        Edge(source="ChatInput-GwedZ", source_port="message", target="ret", target_port="query"),
    ]
    result = run(flow, tmp_path, data_dir)
    ret = result.results["ret"]
    assert ret.status == "ok" and not ret.warning
    assert ret.summary == "0 hits, retriever ready (the store holds 3 chunks; none scored 0.99 or more)"


def test_cli_run_prints_warnings(tmp_path: Path, data_dir: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(data_dir))
    flow = course_flow(collection="cli-warn")
    flow.find_node("File-XydKH").disabled = True  # type: ignore[union-attr]
    path = tmp_path / "flow.json"
    save_flow(flow, path)
    assert main(["run", str(path), "--input", QUESTION]) == 1  # the splitter after the disabled loader is skipped
    out = capsys.readouterr().out
    assert f"WARNING {READER}: collection cli-warn is empty: its ingest branch was disabled" in out


# -- placeholders off the path ----------------------------------------------------------------------


def placeholder(node_id: str, **config: Any) -> NodeSpec:
    return NodeSpec(
        id=node_id,
        type="placeholder.unsupported",
        config={"source_format": "langflow", "original_type": "AstraDB", **config},
    )


def test_unconnected_placeholder_is_skipped_with_a_warning(tmp_path: Path, capsys: Any) -> None:
    flow = Flow(
        nodes=[placeholder("AstraDB-1"), NodeSpec(id="a", type="util.passthrough")],
        edges=[],
    )
    graph = analyze(flow)
    assert graph.issues == [] and [w.code for w in graph.warnings] == ["unsupported-node"]
    result = Executor(data_dir=tmp_path).run(flow)
    assert result.ok and result.results["AstraDB-1"].status == "warning"
    assert "no connections, so runs skip it" in result.results["AstraDB-1"].warning
    path = tmp_path / "flow.json"
    save_flow(flow, path)
    assert main(["validate", str(path)]) == 0
    assert "warning: [unsupported-node] node 'AstraDB-1'" in capsys.readouterr().out


def test_placeholder_on_the_path_blocks_and_off_the_path_does_not(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[
            placeholder("AstraDB-1", output_names=["dataframe"]),
            NodeSpec(id="b", type="util.passthrough"),
            NodeSpec(id="c", type="chat.input", config={"text": "hi"}),
        ],
        edges=[Edge(source="AstraDB-1", source_port="dataframe", target="b", target_port="value")],
    )
    with pytest.raises(FlowValidationError, match="unsupported langflow node type 'AstraDB'"):
        Executor(data_dir=tmp_path).run(flow)
    result = Executor(data_dir=tmp_path).run(flow, to="c")  # the placeholder is not on the way to c
    assert result.ok and result.order == ["c"]


# -- relative paths ---------------------------------------------------------------------------------


def test_relative_paths_resolve_against_the_flow_folder(tmp_path: Path, data_dir: Path, monkeypatch: Any) -> None:
    flow_dir, elsewhere = tmp_path / "flows", tmp_path / "elsewhere"
    flow_dir.mkdir()
    elsewhere.mkdir()
    write_cases(flow_dir)
    path = flow_dir / "course.json"
    save_flow(course_flow(collection="relative"), path)
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(data_dir))
    assert main(["run", str(path), "--input", QUESTION]) == 0
    assert (flow_dir / "chroma_db").is_dir() and not (elsewhere / "chroma_db").exists()
    # one rule for every node: the helper, the loader and the store agree, existing or not
    assert resolve_path("./chroma_db", flow_dir) == flow_dir / "chroma_db"
    assert resolve_path("new/folder", flow_dir) == flow_dir / "new" / "folder"
    assert resolve_path("/abs/x", flow_dir) == Path("/abs/x")
    location, persist = chroma_location(ChromaConfig(persist_directory="./chroma_db"), flow_dir, data_dir)
    assert persist == flow_dir / "chroma_db" and location == str(flow_dir / "chroma_db")


# The course export, shipped with the tests (copied from the course corpus) so this never skips.
COURSE_EXPORT = ROOT / "tests" / "formats" / "corpus" / "langflow__AI_3x_Naive_RAG_Ollama_Groq.json"


def test_imported_langflow_chroma_db_lands_next_to_the_flow(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "imported" / "course.json"
    out.parent.mkdir()
    assert main(["import", str(COURSE_EXPORT), "-o", str(out), "--local"]) == 0
    from flowbuilder.formats.native import load_flow

    flow = load_flow(out)
    stores = [n for n in flow.nodes if n.type == "vectorstore.chroma"]
    assert stores and all(n.config.get("persist_directory") == "./chroma_db" for n in stores)
    for spec in stores:
        _, persist = chroma_location(ChromaConfig(**spec.config), out.parent, tmp_path)
        assert persist == out.parent / "chroma_db"
    assert [(d.writer, d.reader) for d in implicit_dependencies(flow)] == [("Chroma-D7gwx", "Chroma-CpMif")]


# -- two runs filling a new persist directory at once -----------------------------------------------


class HashEmbedder:
    """A deterministic 16-d embedder: these tests are about Chroma's files, not about vectors."""

    model_id = "test/hash-16"
    dimension = 16

    def _vec(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        v = np.frombuffer(digest[:16], dtype=np.uint8).astype(np.float32) + 1.0
        return [float(x) for x in v / np.linalg.norm(v)]

    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def ingest(persist: Path, name: str) -> int:
    docs = [Document(text=f"{name} chunk {i}", metadata={"source": f"{name}.csv"}) for i in range(50)]
    node = ChromaNode(ChromaConfig(collection="shared", persist_directory=str(persist)))
    ctx = RunContext("store", data_dir=persist.parent)
    node.run({"embedder": HashEmbedder(), "documents": [docs]}, ctx)
    return int(ctx.details["added"])


_WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tests.nodes.test_store_flows import ingest

    persist, name = Path(sys.argv[1]), sys.argv[2]
    print("ready", flush=True)  # chromadb is imported: the race can start at once
    sys.stdin.readline()  # the parent says "go" to both workers at once
    print(ingest(persist, name))
    """
)


def test_threads_fill_a_new_persist_directory_at_once(tmp_path: Path) -> None:
    """Runs in one process (the UI runs flows in threads): without the lock Chroma's first-time setup
    races ("Could not connect to tenant default_tenant", "table already exists")."""
    persist = tmp_path / "threads_store"
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def work(name: str) -> None:
        barrier.wait()
        try:
            outcomes.append(str(ingest(persist, name)))
        except Exception as exc:  # reported by the assertion below
            outcomes.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert outcomes == ["50"] * 4
    import chromadb

    assert chromadb.PersistentClient(path=str(persist)).get_collection("shared").count() == 200


def test_two_runs_fill_a_new_persist_directory_at_once(tmp_path: Path) -> None:
    persist = tmp_path / "new_store"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(persist), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name in ("first", "second")
    ]
    for proc in procs:  # a worker that dies first ends its output: "" and its error below
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.communicate()[1][-2000:]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outcomes = [proc.communicate(timeout=120) for proc in procs]
    for proc, (out, err) in zip(procs, outcomes, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert out.strip() == "50"
    import chromadb

    client = chromadb.PersistentClient(path=str(persist))
    assert client.get_collection("shared").count() == 100


_HOLDER = textwrap.dedent(
    """
    import sys
    from filelock import FileLock

    with FileLock(sys.argv[1]):
        print("held", flush=True)
        sys.stdin.read()  # held until the test ends this process: only a cancel can end the wait
    """
)


def test_a_store_held_by_another_process_is_waited_for_out_loud_and_the_wait_can_be_cancelled(
    tmp_path: Path,
) -> None:
    """Two processes on one data dir take turns; the waiting run says so (log and card) instead of sitting
    silent for minutes, and a cancel ends the wait without touching the store."""
    from flowbuilder.errors import RunCancelledError
    from flowbuilder.nodes.vectorstores.chroma import LOCK_NAME

    persist = tmp_path / "busy_store"
    persist.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(persist / LOCK_NAME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        events: list[tuple[str, dict[str, Any]]] = []
        cancel = threading.Event()

        def emit(kind: str, data: dict[str, Any]) -> None:
            events.append((kind, data))
            if kind == "progress" and len(events) >= 3:
                cancel.set()

        ctx = RunContext("store", data_dir=tmp_path, emit=emit, cancel_event=cancel)
        node = ChromaNode(ChromaConfig(collection="shared", persist_directory=str(persist)))
        docs = [Document(text=f"chunk {i}", metadata={"source": "a.csv"}) for i in range(5)]
        started = time.monotonic()
        with pytest.raises(RunCancelledError):
            node.run({"embedder": HashEmbedder(), "documents": [docs]}, ctx)
        assert time.monotonic() - started < 30  # the cancel ended the wait (the holder never lets go)
        logs = [d["message"] for k, d in events if k == "log"]
        assert logs == [f"Waiting for another run using the Chroma store at {persist} (cancel to stop waiting)."]
        waits = [d for k, d in events if k == "progress"]
        assert waits and all(d["total"] == 0 and "another run using this store" in d["message"] for d in waits)
        assert not (persist / "chroma.sqlite3").exists()  # nothing was written while it waited
    finally:
        holder.kill()
        holder.wait()
    # once the other process is gone, the store is free: the same run goes through
    assert ingest(persist, "after") == 50


# -- what changed since the last run (core API for the UI's marking) ---------------------------------


def test_changed_since_marks_the_edited_node_and_everything_downstream() -> None:
    flow = course_flow()
    before = config_keys(analyze(flow))
    flow.find_node("SplitText-vKJXC").config["chunk_size"] = 500  # type: ignore[union-attr]
    changed = changed_since(analyze(flow), before)
    # the reader depends on the writer through the shared collection, and the parser on the reader
    assert changed == {"SplitText-vKJXC", WRITER, READER, "Parser-rmtSy"}
    assert changed_since(analyze(flow), config_keys(analyze(flow))) == set()


def test_run_result_records_config_keys(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[NodeSpec(id="a", type="chat.input", config={"text": "hi"}), NodeSpec(id="b", type="util.passthrough")],
        edges=[Edge(source="a", source_port="message", target="b", target_port="value")],
    )
    run = Executor(data_dir=tmp_path).run(flow)
    flow.find_node("a").config["text"] = "hello"  # type: ignore[union-attr]
    assert changed_since(analyze(flow), run.config_keys) == {"a", "b"}


def test_search_tool_over_an_empty_store_warns(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="emb", type="embedder.local"),
            NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "tool-empty"}),
            NodeSpec(id="tool", type="retriever.tool"),
        ],
        edges=[
            Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
            Edge(source="store", source_port="store", target="tool", target_port="store"),
        ],
    )
    result = Executor(data_dir=tmp_path).run(flow)
    assert result.results["tool"].status == "warning"
    assert result.results["tool"].warning.startswith("collection tool-empty is empty: nothing in this flow writes")
