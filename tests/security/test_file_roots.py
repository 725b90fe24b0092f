"""A flow from a stranger reads files only under its own folder, the workspace, the sample data and folders the
user approved; the credentials file, the data dir, hidden folders of ~ and /etc are never readable (issue 19)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flowbuilder.errors import ServeError
from flowbuilder.examples import data_dir, example_flow
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.places import default_credentials_path, default_data_dir
from tests.security.cli_helpers import cli, loader_flow

KEY = "sk-proj-FILEROOTSPLANTEDKEY0123456789abcdef"
ROW = "id,text\nr1,the secret row\n"


def refused(capsys: pytest.CaptureFixture[str], flow: Path, resolved: Path, *extra: str) -> str:
    """validate and run both refuse, naming the resolved path; returns validate's output."""
    code, shown = cli(capsys, "validate", str(flow), "--no-credentials", *extra)
    assert code == 1, shown
    assert "[untrusted-path]" in shown and str(resolved) in shown
    code, ran = cli(capsys, "run", str(flow), *extra)
    assert code == 1 and "[untrusted-path]" in ran, ran
    assert "the secret row" not in ran and KEY not in ran
    return shown


@pytest.fixture
def credentials_file() -> Path:
    path = default_credentials_path()  # the test sandbox's FLOWBUILDER_CREDENTIALS
    CredentialStore(path).set("openai", "default", KEY)
    yield path
    path.unlink(missing_ok=True)


def test_the_credentials_file_is_never_readable(tmp_path, capsys, credentials_file: Path) -> None:
    flow = loader_flow(tmp_path / "flow", str(credentials_file))
    shown = refused(capsys, flow, credentials_file.resolve())
    assert "credentials file" in shown and "not even with approval" in shown and "--allow-path" not in shown
    # neither --allow-path nor the credentials file's own approved_paths lets it through
    refused(capsys, flow, credentials_file.resolve(), "--allow-path", str(credentials_file.parent))
    data = json.loads(credentials_file.read_text(encoding="utf-8"))
    credentials_file.write_text(json.dumps({**data, "approved_paths": [str(credentials_file.parent)]}))
    refused(capsys, flow, credentials_file.resolve())
    # the file next to the flow, reached through a symlink, is the same file
    (tmp_path / "flow" / "keys.json").symlink_to(credentials_file)
    refused(capsys, loader_flow(tmp_path / "flow", "keys.json", "linked.json"), credentials_file.resolve())


def test_a_symlink_to_a_file_outside_the_roots(tmp_path, capsys) -> None:
    outside = tmp_path / "elsewhere" / "private.csv"
    outside.parent.mkdir()
    outside.write_text(ROW, encoding="utf-8")
    folder = tmp_path / "flow"
    folder.mkdir()
    (folder / "data.csv").symlink_to(outside)
    flow = loader_flow(folder, "data.csv")
    shown = refused(capsys, flow, outside)
    assert f"--allow-path {outside.parent}" in shown
    code, listed = cli(capsys, "validate", str(flow), "--no-credentials", "--json")
    row = json.loads(listed)[0]
    assert (code, row["code"], row["path"], row["folder"]) == (1, "untrusted-path", str(outside), str(outside.parent))
    code, ran = cli(capsys, "run", str(flow), "--allow-path", str(outside.parent))
    assert code == 0 and "the secret row" in ran


def test_dot_dot_traversal(tmp_path, capsys) -> None:
    outside = tmp_path / "private.csv"
    outside.write_text(ROW, encoding="utf-8")
    flow = loader_flow(tmp_path / "project" / "flows", "../../private.csv")
    refused(capsys, flow, outside)
    code, ran = cli(capsys, "run", str(flow), "--allow-path", str(tmp_path))
    assert code == 0 and "the secret row" in ran
    code, shown = cli(capsys, "validate", str(flow), "--no-credentials", "--allow-path", str(tmp_path))
    assert code == 0, shown


@pytest.mark.parametrize("path", ["/etc/passwd", "/etc/hostname.csv", "/proc/self/environ", "/sys/kernel/x.txt"])
def test_system_folders_are_never_readable(tmp_path, capsys, path: str) -> None:
    flow = loader_flow(tmp_path, path)
    shown = refused(capsys, flow, Path(os.path.realpath(path)), "--allow-path", "/")
    assert "not even with approval" in shown


def test_hidden_folders_of_home_and_the_data_dir(tmp_path, capsys, monkeypatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa.txt").write_text("-----BEGIN OPENSSH PRIVATE KEY-----", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    flow = loader_flow(home / "projects", "~/.ssh/id_rsa.txt")
    shown = refused(capsys, flow, home / ".ssh" / "id_rsa.txt", "--allow-path", str(home))
    assert "~/.ssh" in shown
    # a symlink named like data, pointing into the data dir's internals (chroma, caches)
    internals = default_data_dir() / "chroma" / "chroma.sqlite3.csv"
    internals.parent.mkdir(parents=True, exist_ok=True)
    internals.write_text(ROW, encoding="utf-8")
    (home / "projects" / "data.csv").symlink_to(internals)
    shown = refused(capsys, loader_flow(home / "projects", "data.csv", "dd.json"), internals.resolve())
    assert "data dir" in shown


def test_an_unknown_user_in_a_path_is_a_clear_error(tmp_path, capsys) -> None:
    flow = loader_flow(tmp_path, "~nosuchuser-fb/data.csv")
    code, shown = cli(capsys, "validate", str(flow), "--no-credentials")
    assert code == 1 and "no user 'nosuchuser-fb'" in shown
    code, ran = cli(capsys, "run", str(flow))
    assert code == 1 and "no user 'nosuchuser-fb'" in ran
    code, ran = cli(
        capsys,
        "run",
        str(loader_flow(tmp_path, str(data_dir() / "docs"), "ok.json")),
        "--allow-path",
        "~nosuchuser-fb/x",
    )
    assert code != 0 and "no user 'nosuchuser-fb'" in ran


def test_every_path_field_is_checked(tmp_path) -> None:
    outside = tmp_path / "outside"
    nodes = [
        NodeSpec(id="file", type="input.file", config={"path": str(outside / "a.csv")}),
        NodeSpec(id="rerank", type="reranker.cross_encoder", config={"model_dir": str(outside / "model")}),
        NodeSpec(id="chroma", type="vectorstore.chroma", config={"persist_directory": str(outside / "db")}),
        NodeSpec(id="qdrant", type="vectorstore.qdrant", config={"path": str(outside / "q")}),
        NodeSpec(id="ok", type="vectorstore.chroma", config={"persist_directory": "./chroma_db"}),
        NodeSpec(id="default", type="vectorstore.qdrant", config={}),
    ]
    graph = analyze(Flow(name="f", nodes=nodes), base_dir=tmp_path / "flow")
    untrusted = {i.node_id: i.detail for i in graph.issues if i.code == "untrusted-path"}
    assert set(untrusted) == {"file", "rerank", "chroma", "qdrant"}
    assert untrusted["chroma"]["path"] == str(outside / "db") and untrusted["chroma"]["folder"] == str(outside / "db")
    assert untrusted["file"]["folder"] == str(outside)  # a file's folder is what an approval covers
    resolver = CredentialResolver(store=CredentialStore(tmp_path / "none.json"), paths=[outside])
    graph = analyze(Flow(name="f", nodes=nodes), resolver=resolver, base_dir=tmp_path / "flow")
    assert not [i for i in graph.issues if i.code == "untrusted-path"]


def test_a_path_arriving_on_a_port_is_checked_when_the_node_runs(tmp_path) -> None:
    """A served flow wiring the chat input into the loader's path must not read what a client names."""
    outside = tmp_path / "private.csv"
    outside.write_text(ROW, encoding="utf-8")
    flow = Flow(
        name="asks for a file",
        nodes=[NodeSpec(id="chat", type="chat.input"), NodeSpec(id="load", type="loader.file")],
        edges=[Edge(source="chat", source_port="message", target="load", target_port="path")],
    )
    executor = Executor(resolver=CredentialResolver(store=CredentialStore(tmp_path / "none.json")))
    run = executor.run(flow, inputs=str(outside), base_dir=tmp_path / "flow")
    result = run.results["load"]
    assert result.status == "failed" and "outside the folders this flow may read" in str(result.error)
    # the same file given by the user as the run's input is the user's choice
    file_flow = Flow(name="f", nodes=[NodeSpec(id="load", type="loader.file", config={"path": "x.csv"})])
    run = executor.run(file_flow, inputs={"load": str(outside)}, base_dir=tmp_path / "flow")
    assert run.results["load"].succeeded and run.results["load"].outputs["records"][0].text == "r1,the secret row"


def test_a_folder_loader_refuses_a_symlink_inside_it(tmp_path, capsys) -> None:
    outside = tmp_path / "secret.csv"
    outside.write_text(ROW, encoding="utf-8")
    docs = tmp_path / "flow" / "docs"
    docs.mkdir(parents=True)
    (docs / "a.csv").write_text("id,text\nok,fine\n", encoding="utf-8")
    (docs / "b.csv").symlink_to(outside)
    code, ran = cli(capsys, "run", str(loader_flow(tmp_path / "flow", "docs")))
    assert code == 1 and str(outside) in ran and "the secret row" not in ran


def test_approved_paths_in_the_credentials_file(tmp_path, capsys, credentials_file: Path) -> None:
    outside = tmp_path / "shared" / "team.csv"
    outside.parent.mkdir()
    outside.write_text(ROW, encoding="utf-8")
    flow = loader_flow(tmp_path / "flow", str(outside))
    refused(capsys, flow, outside)
    data = json.loads(credentials_file.read_text(encoding="utf-8"))
    approved = ["~nosuchuser-fb/x", str(outside.parent)]  # an entry naming no folder approves nothing
    credentials_file.write_text(json.dumps({**data, "approved_paths": approved}), encoding="utf-8")
    code, ran = cli(capsys, "run", str(flow))
    assert code == 0 and "the secret row" in ran
    CredentialStore(credentials_file).set("groq", "default", "gsk_x" * 5)  # writing keeps the approvals
    assert CredentialStore(credentials_file).approved_paths() == approved


def test_serve_refuses_until_approved(tmp_path) -> None:
    from flowbuilder.serving.service import FlowService

    outside = tmp_path / "private.csv"
    outside.write_text(ROW, encoding="utf-8")
    flow = loader_flow(tmp_path / "flow", str(outside))
    with pytest.raises(ServeError, match="untrusted-path"):
        FlowService(flow, resolver=CredentialResolver(store=CredentialStore(tmp_path / "none.json")))
    FlowService(flow, resolver=CredentialResolver(store=CredentialStore(tmp_path / "none.json"), paths=[tmp_path]))


def test_example_flows_read_the_sample_data_from_anywhere(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the working directory is not what lets them read data/
    code, shown = cli(capsys, "validate", str(example_flow()), "--no-credentials")
    assert code == 0, shown
