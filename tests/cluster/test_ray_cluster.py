"""``flowbuilder ... --ray ADDRESS`` on one real two-node Ray cluster (a head and a second node, one CPU each, on
127.0.0.1) and one real ``chroma run`` server, as users run it: the CLI is the driver, no mock of Ray.

Ingest: the same result as a local run (ids, texts, metadata; none twice; stale chunks removed), a worker killed
while it embeds, Ctrl-C, progress across workers, the model built once per worker process, an embedded store
refused in one line, no Ray import without the flag. Sweeps: ``compare --ray`` and ``eval --ray`` give what the
local commands give. Secrets: a key reaches the workers only as the run's credential; no Ray log holds it.

One module, so a parallel run (pytest-xdist, ``--dist loadfile``) starts one cluster, not one per file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.cluster.credentials import BoundResolver
from flowbuilder.trust.providers import CredentialSlot
from tests import servers
from tests.cluster.conftest import REPO, Site, collection, rows_csv
from tests.evaluation.small_flows import write_small_corpus
from tests.fakes.llm_server import FakeLLMServer
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


BATCH = "8"


def _run_json(site: Site, flow: Path, *extra: str) -> dict[str, object]:
    done = site.cli("run", str(flow), "--to", "store", "--json", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _store_details(report: dict[str, object]) -> dict[str, object]:
    details = report["details"]
    assert isinstance(details, dict)
    return details["store"]


def test_same_result_as_a_local_run_and_stale_chunks_removed(site: Site) -> None:
    csv = rows_csv(site.folder, "same.csv", 45)
    local = site.store_flow("local.json", csv, "same-local")
    remote = site.store_flow("remote.json", csv, "same-ray")
    _run_json(site, local)
    done = site.cli("run", str(remote), "--to", "store", "--ray", site.address, "--ray-batch", BATCH)
    assert done.returncode == 0, done.stderr[-3000:]
    # progress: batches done of the total across the workers, a rate per worker node
    assert "batches on the Ray cluster (" in done.stderr and "rows/s" in done.stderr and "6/6" in done.stderr
    assert "+45 added" in done.stdout
    stored = collection(site.chroma_port, "same-ray")
    assert stored == collection(site.chroma_port, "same-local")
    assert len(stored) == 45  # ids are keys: none twice

    report = _run_json(site, remote, "--ray", site.address, "--ray-batch", BATCH)
    cluster = _store_details(report)["cluster"]
    assert isinstance(cluster, dict) and cluster["batches"] == 6
    workers = cluster["workers"]
    assert sum(w["batches"] for w in workers.values()) == 6
    # the embedder is built once per worker process, not once per batch
    assert sum(w["embedder_builds"] for w in workers.values()) <= sum(w["processes"] for w in workers.values())
    summary = next(node["summary"] for node in report["nodes"] if node["id"] == "store")  # type: ignore[attr-defined]
    assert summary.startswith("+0 added, \u22120 removed, 45 kept"), summary  # a re-run embeds nothing again

    # the CSV loses rows: the store keeps mirroring it (their chunks removed on the driver after the batches)
    rows_csv(site.folder, "same.csv", 30)
    done = site.cli("run", str(remote), "--to", "store", "--ray", site.address, "--ray-batch", BATCH)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\u221215 removed" in done.stdout
    _run_json(site, local)
    assert collection(site.chroma_port, "same-ray") == collection(site.chroma_port, "same-local")
    assert len(collection(site.chroma_port, "same-ray")) == 30


def _ingest_pids() -> list[int]:
    """Ray worker processes running a Flowbuilder ingest batch right now (Ray titles a busy worker after its task)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if title.startswith(b"ray::flowbuilder:ingest:"):
            found.append(int(entry.name))
    return found


def _wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    return wait_until(condition, timeout, what)


def test_a_worker_killed_while_it_embeds_still_ends_with_the_same_ids(site: Site) -> None:
    csv = rows_csv(site.folder, "kill.csv", 60, marker="kill-test")  # texts the embedding cache has not seen
    remote = site.store_flow("kill.json", csv, "kill-ray")
    run = site.popen("run", str(remote), "--to", "store", "--ray", site.address, "--ray-batch", "10")
    try:
        pids = _wait_for(_ingest_pids, 240, "a worker to start an ingest batch")
        assert isinstance(pids, list)
        os.kill(pids[0], signal.SIGKILL)
        assert run.poll() is None, "the run ended before its worker could be killed"
        _out, err = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err[-3000:]
    stored = collection(site.chroma_port, "kill-ray")
    local = site.store_flow("kill-local.json", csv, "kill-local")
    _run_json(site, local)
    assert stored == collection(site.chroma_port, "kill-local")
    assert len(stored) == 60


def test_a_lost_head_is_one_line_and_a_rerun_resumes(site: Site) -> None:
    csv = rows_csv(site.folder, "lost.csv", 60, marker="lost-head-test")
    flow = site.store_flow("lost.json", csv, "lost-head")
    handle: list[Any] = []
    with servers.ray_cluster(Path(os.environ["FLOWBUILDER_DATA_DIR"]), nodes=1, handle=handle) as (address, _):
        run = site.popen("run", str(flow), "--to", "store", "--ray", address, "--ray-batch", "5")
        try:
            _wait_for(_ingest_pids, 240, "a worker to start an ingest batch")
            handle[0].remove_node(handle[0].head_node)  # the head and everything on it, gone
            out, _err = run.communicate(timeout=120)  # noticed within seconds, not after Ray's minute
        finally:
            if run.poll() is None:
                run.kill()
    assert run.returncode == 1 and "Traceback" not in _err
    # Usually our check of the head answers first: one FAILED node line, or (when Ray ends the process because the
    # raylet this driver is attached to died with the head) our one error line as its last word. Ray can also end
    # the process before any Python runs (a C++ exit): then only its own message is there. Not asserted: racy.
    said = [line for line in out.splitlines() if line.startswith("FAILED")]
    said += [line for line in _err.splitlines() if line.startswith("error: the Ray cluster")]
    assert all("mid-run" in line and "run again to resume" in line for line in said), out + _err
    written = len(collection(site.chroma_port, "lost-head"))
    assert written < 60
    done = site.cli("run", str(flow), "--to", "store", "--ray", site.address, "--ray-batch", "5")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"+{60 - written} added, \u22120 removed, {written} kept" in done.stdout  # only the rest is written
    assert len(collection(site.chroma_port, "lost-head")) == 60


def test_ctrl_c_cancels_the_clusters_work(site: Site) -> None:
    csv = rows_csv(site.folder, "cancel.csv", 200, marker="cancel-test")
    remote = site.store_flow("cancel.json", csv, "cancel-ray")
    run = site.popen("run", str(remote), "--to", "store", "--ray", site.address, "--ray-batch", "5")
    try:
        _wait_for(_ingest_pids, 240, "a worker to start an ingest batch")
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode != 0
    assert "cancelled" in out + err
    # every batch of the run is cancelled: no worker goes on embedding for it
    _wait_for(lambda: not _ingest_pids(), 60, "the cluster's ingest batches to stop")
    assert len(collection(site.chroma_port, "cancel-ray")) < 200


def test_an_embedded_store_is_refused_in_one_line(site: Site) -> None:
    done = site.cli("run", str(Path(__file__).resolve().parents[2] / "flows" / "row_labelled_csv_rag.json"),
                    "--ray", site.address)  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "node 'store' (vectorstore.chroma)" in lines[0] and "chroma run" in lines[0]
    assert "Qdrant server" in lines[0] and "Pinecone" in lines[0]


def test_without_the_flag_ray_is_never_imported() -> None:
    script = (
        "import sys\n"
        "from flowbuilder.cli import main\n"
        "code = main(['run', sys.argv[1], '--to', 'splitter'])\n"
        "print('ray' in sys.modules, code)\n"
    )
    flow = Path(__file__).resolve().parents[2] / "flows" / "row_labelled_csv_rag.json"
    done = subprocess.run([sys.executable, "-c", script, str(flow)], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "False 0", done.stdout[-2000:] + done.stderr[-2000:]


TIMES = ("ingest_seconds", "search_seconds", "seconds", "embedded", "added")
"""What may differ between two runs of the same comparison: how long it took, and what was already stored."""


def _server_flows(site: Site, folder: Path, port: int) -> Path:
    write_small_corpus(folder)
    for name in ("naive.json", "labelled.json"):
        flow = json.loads((folder / name).read_text(encoding="utf-8"))
        for node in flow["nodes"]:
            if node["type"] == "vectorstore.chroma":
                node["config"].update(server_host="127.0.0.1", server_port=port)
        (folder / name).write_text(json.dumps(flow), encoding="utf-8")
    return folder


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_times(item) for key, item in value.items() if key not in TIMES}
    if isinstance(value, list):
        return [_without_times(item) for item in value]
    return value


def test_compare_prints_the_same_leaderboard_with_and_without_ray(site: Site) -> None:
    folder = _server_flows(site, site.folder / "compare", site.chroma_port)
    args = ("compare", str(folder / "naive.json"), str(folder / "labelled.json"), "--questions",
            str(folder / "questions.jsonl"))  # fmt: skip
    on_ray = site.cli(*args, "--ray", site.address)  # first: the workers fill the server's collections
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    # B's ingest batches and A's questions ran on the cluster
    assert "[B] store: batches on the Ray cluster (" in on_ray.stderr
    assert "[A] retriever: searching on the Ray cluster 4/4" in on_ray.stderr
    local = site.cli(*args)
    assert local.returncode == 0, local.stderr[-3000:]

    def board(text: str) -> list[list[str]]:
        lines = text.split("Leaderboard")[1].split("\n\n")[0].splitlines()[1:]
        rows = [line.split("  ") for line in lines]
        header = [cell.strip() for cell in rows[0] if cell.strip()]
        ingest = header.index("ingest s")
        return [[c.strip() for c in row if c.strip()][:ingest] for row in rows[2:]] + [header]

    assert board(on_ray.stdout) == board(local.stdout)
    verdicts = [line for line in local.stdout.splitlines() if " vs " in line and ":" in line]
    assert verdicts and all(line in on_ray.stdout for line in verdicts)

    # the rest of the report too: every line but the leaderboard's (its ingest seconds) and what was embedded
    def rest(text: str) -> list[str]:
        lines = text.splitlines()
        return [line for line in lines if not line[:2].strip().isdigit() and "embedded this run" not in line]

    assert rest(on_ray.stdout) == rest(local.stdout)


def test_eval_gives_the_same_verdicts_with_and_without_ray(site: Site) -> None:
    folder = _server_flows(site, site.folder / "eval", site.chroma_port)
    flow = json.loads((REPO / "flows" / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
    for node in flow["nodes"]:
        if node["type"] == "vectorstore.chroma":
            node["config"].update(server_host="127.0.0.1", server_port=site.chroma_port, collection="eval-ray")
        elif node["type"] == "loader.file":
            node["config"]["path"] = "vwo30.csv"
    (folder / "answers.json").write_text(json.dumps(flow), encoding="utf-8")
    args = ("eval", str(folder / "answers.json"), "--questions", str(folder / "questions.jsonl"), "--json")
    on_ray = site.cli(*args, "--ray", site.address)
    local = site.cli(*args)
    assert on_ray.stdout and local.stdout, on_ray.stderr[-3000:] + local.stderr[-3000:]
    ray_report, local_report = json.loads(on_ray.stdout), json.loads(local.stdout)
    assert [r["verdict"] for r in ray_report["results"]] == [r["verdict"] for r in local_report["results"]]
    assert _without_times(ray_report) == _without_times(local_report)


KEY = "sk-proj-RayClusterSecret0123456789abcdefXYZ"


def test_a_key_reaches_the_workers_only_as_the_runs_credential_and_no_log_holds_it(site: Site) -> None:
    csv = rows_csv(site.folder, "secret.csv", 30, marker="secret-test")
    with FakeLLMServer(embedding_dim=8) as fake:
        flow = site.store_flow(
            "secret.json", csv, "secret-ray",
            embedder={"type": "embedder.openai", "config": {"base_url": fake.openai_base_url, "dimensions": 8}},
        )  # fmt: skip
        done = site.cli(
            "run", str(flow), "--to", "store", "--ray", site.address, "--ray-batch", "10",
            "--cred", f"openai.api_key={KEY}", "--allow-endpoint", f"openai={fake.openai_base_url}",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        embedded = [r for r in fake.requests if r.path.endswith("/embeddings")]
    assert embedded and all(r.authorization == f"Bearer {KEY}" for r in embedded)  # the workers had the key
    assert len(collection(site.chroma_port, "secret-ray")) == 30
    assert KEY not in done.stdout + done.stderr
    leaked, read = [], 0
    for path in site.session.rglob("*"):  # every log, event file and socket-side file Ray keeps for the cluster
        if path.is_file():
            try:
                read += 1
                if KEY.encode() in path.read_bytes():
                    leaked.append(str(path))
            except OSError:
                continue
    assert read > 10 and not leaked, (read, leaked)  # the workers' and raylets' logs were read


def test_a_worker_never_takes_a_key_from_its_own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-worker-own-key-0123456789abcdefghij")
    slot = CredentialSlot("api_key", "openai")
    resolver = BoundResolver({"embed": {"api_key": KEY}})
    assert resolver.resolve("embed", slot, None) == KEY
    assert resolver.resolve("other", slot, None) is None  # bound for 'embed' only; the environment is never read
    assert os.environ["OPENAI_API_KEY"] and resolver.environ == {}
    assert json.dumps(resolver.explicit) == "{}" and not Path(resolver.store.path).exists()
