"""No traceback, ever, from a field: a short schema-driven campaign over every node type's Config, and one
regression test per crash class found so far (issue 19, Crashes). ``scripts/fuzz.py --schema`` runs 10k+."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.errors import FlowbuilderError
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.adapters import to_float, to_int
from flowbuilder.formats.convert import convert_data, export_flow
from flowbuilder.formats.limits import strict_dumps
from flowbuilder.formats.native import save_flow
from flowbuilder.graph import analyze
from flowbuilder.registry import default_registry

sys.path.insert(0, str(Path(__file__).parent))
from schema_fuzz import builder_load, campaign, prepare

CORPUS = Path(__file__).resolve().parents[1] / "formats" / "corpus"


def test_short_schema_campaign_finds_no_traceback_crash_hang_or_egress(tmp_path: Path) -> None:
    count = 6 * len(default_registry().names())  # every node type 6 times: about 260 cases
    result = campaign(count, tmp_path, seed=0)
    assert sum(result.counts.values()) == count
    shown = "\n".join(f"{label}: {o.kind} in {o.step}: {o.detail}\n  config {c}" for label, o, c in result.failures[:3])
    assert result.failures == [], result.table() + "\n" + shown
    # the campaign must reach the nodes: a good share of them run (ok or failed with a clear line)
    ran = sum(n for name, n in result.per_step.items() if name in ("ok", "failed", "warning"))
    assert ran >= count // 4, result.table()


def write(tmp_path: Path, *nodes: NodeSpec) -> Path:
    path = tmp_path / "flow.json"
    save_flow(Flow(name="crash classes", nodes=list(nodes)), path)
    return path


BAD_URLS = ["http://x:99999", "http://[::1", "http://x:abc"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_url_does_not_crash_the_builder_page(tmp_path: Path, url: str) -> None:
    from flowbuilder.ui.accounts import issue_text
    from flowbuilder.ui.session import AppConfig, EditorSession

    prepare(tmp_path)
    nodes = [
        NodeSpec(id="emb", type="embedder.ollama", config={"base_url": url}),
        NodeSpec(id="llm", type="llm.groq", config={"base_url": url}),
        NodeSpec(id="store", type="vectorstore.qdrant", config={"url": url}),
        NodeSpec(id="chroma", type="vectorstore.chroma", config={"server_host": url}),
    ]
    flow = Flow(name="bad urls", nodes=nodes)
    builder_load(flow, tmp_path)  # the same session, issues, canvas and form code the page uses
    session = EditorSession.create(flow, AppConfig(workspace=tmp_path), tmp_path / "case.json")
    texts = [issue_text(session, i) for i in session.state.issues(session.resolver) if i.code == "invalid-endpoint"]
    assert len(texts) == 4 and all("not a valid URL" in t or "takes a host name" in t for t in texts), texts


@pytest.mark.parametrize("fmt", ["n8n", "langflow"])
def test_huge_and_infinite_numbers_export(fmt: str) -> None:
    nodes = [
        NodeSpec(id="llm", type="llm.openai", config={"timeout": 1e308}),
        NodeSpec(id="emb", type="embedder.ollama", config={"timeout": 1e308}),
        NodeSpec(id="memory", type="memory.window", config={"window": "inf"}),
        NodeSpec(id="split", type="splitter.recursive", config={"chunk_size": 2**63}),
    ]
    data, _ = export_flow(Flow(name="edges", nodes=nodes), fmt)
    text = strict_dumps(data)  # no NaN or Infinity in what we write
    back, _ = convert_data(json.loads(text), fmt, f"back.{fmt}.json")
    assert sorted(n.type for n in back.nodes) == sorted(n.type for n in nodes)
    split = next(n for n in back.nodes if n.type == "splitter.recursive")
    assert split.config["chunk_size"] == 2**63  # a big integer is a JSON number: kept exactly
    floats = [v for n in back.nodes for v in n.config.values() if isinstance(v, float)]
    assert floats and all(math.isfinite(v) for v in floats), floats


def test_adapters_read_non_finite_numbers_as_missing() -> None:
    for value in ("inf", "-inf", "nan", float("inf"), 1e999, "1e999", "x", None, [], "9" * 400):
        assert to_int(value) is None, value
        assert to_float(value) is None, value
    assert to_int("12") == 12 and to_int(3.9) == 3 and to_int(2**70) == 2**70 and to_float("0.5") == 0.5


@pytest.mark.parametrize("value", ["inf", "Infinity", "-inf", "nan", "1e999"])
def test_a_langflow_chunk_size_of_inf_imports(tmp_path: Path, value: str) -> None:
    data = json.loads((CORPUS / "langflow__AI_3X_Naive_RAG.json").read_text(encoding="utf-8"))
    for node in data["data"]["nodes"]:
        template = node["data"]["node"].get("template", {})
        if "chunk_size" in template:
            template["chunk_size"]["value"] = value
    source = tmp_path / "inf.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    code = main(["import", str(source), "-o", str(tmp_path / "out.json")])
    assert code == 0
    flow = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    sizes = [n["config"].get("chunk_size") for n in flow["nodes"] if n["type"].startswith("splitter.")]
    assert sizes == [None]  # a non-finite size is read as missing: the splitter's default applies


PATH_FIELDS = [
    ("loader.file", "path"),
    ("vectorstore.chroma", "persist_directory"),
    ("vectorstore.qdrant", "path"),
    ("reranker.cross_encoder", "model_dir"),
    ("tool.mcp", "cwd"),
]


@pytest.mark.parametrize(("node_type", "field"), PATH_FIELDS)
def test_tilde_of_an_unknown_user_in_any_path_is_no_crash(tmp_path: Path, capsys, node_type: str, field: str) -> None:
    path = write(tmp_path, NodeSpec(id="n", type=node_type, config={field: "~nosuchuser/x/y.csv"}))
    # validate names the path that cannot be found; tool.mcp's cwd is only looked at when its server starts
    assert main(["validate", str(path)]) == (0 if node_type == "tool.mcp" else 1)
    assert main(["run", str(path), "--to", "n"]) == 1  # the node fails with a message, the CLI does not crash
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err and "RuntimeError" not in captured.out + captured.err
    graph = analyze(Flow(name="x", nodes=[NodeSpec(id="n", type=node_type, config={field: "~nosuchuser"})]))
    assert all("Could not determine home directory" not in i.message for i in graph.issues)


def test_every_node_type_is_in_the_campaign() -> None:
    from schema_fuzz import cases

    names = default_registry().names()
    assert {type_name for _, type_name, _ in cases(len(names))} == set(names)


UNUSABLE_PATHS = ["a" * 300, "x\x00y", "🙂" * 100, "rows.csv/inner"]


@pytest.mark.parametrize("value", UNUSABLE_PATHS)
@pytest.mark.parametrize(("node_type", "field"), [*PATH_FIELDS, ("input.file", "path")])
def test_an_unusable_path_is_one_line(tmp_path: Path, node_type: str, field: str, value: str) -> None:
    """Names too long for the file system, NUL bytes, a file where a folder belongs: the node fails with
    a clear line (the fuzzer found bare OSError/ValueError in run, some escaping the executor)."""
    prepare(tmp_path)
    flow = Flow(name="x", nodes=[NodeSpec(id="n", type=node_type, config={field: value})])
    analyze(flow, base_dir=tmp_path)
    from flowbuilder.executor import Executor

    try:
        run = Executor(data_dir=tmp_path / "data").run(flow, to="n", base_dir=tmp_path, inputs={"n": value})
    except FlowbuilderError:
        return
    error = run.results["n"].error or ""
    assert "OSError" not in error and "ValueError" not in error and "FileExistsError" not in error, error


@pytest.mark.parametrize(
    ("node_type", "field"), [("vectorstore.chroma", "persist_directory"), ("vectorstore.qdrant", "path")]
)
def test_a_persist_directory_that_is_a_file_is_one_line(tmp_path: Path, node_type: str, field: str) -> None:
    """An embedded store's folder that is a file (the schema fuzz found Qdrant's raw FileExistsError)."""
    prepare(tmp_path)
    flow = Flow(
        name="x",
        nodes=[
            NodeSpec(id="emb", type="embedder.wordllama"),
            NodeSpec(id="n", type=node_type, config={field: "rows.csv"}),
        ],
        edges=[Edge(source="emb", source_port="embedder", target="n", target_port="embedder")],
    )
    from flowbuilder.executor import Executor

    run = Executor(data_dir=tmp_path / "data").run(flow, to="n", base_dir=tmp_path, use_cache=False)
    error = run.results["n"].error or ""
    assert "is a file;" in error and "must be a folder" in error and "\n" not in error, error
    assert "FileExistsError" not in error and "Traceback" not in error
