"""``flowbuilder run FLOW --ray ADDRESS`` on a real two-node Ray cluster and a real Chroma server.

The same result as a local run (ids, texts, metadata; none twice; stale chunks removed), a worker killed while it
embeds, a cancel from the command line, progress across workers and the model built once per worker process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.conftest import Site, collection, rows_csv

pytestmark = pytest.mark.slow
BATCH = "15"


def _run_json(site: Site, flow: Path, *extra: str) -> dict[str, object]:
    done = site.cli("run", str(flow), "--to", "store", "--json", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _store_details(report: dict[str, object]) -> dict[str, object]:
    details = report["details"]
    assert isinstance(details, dict)
    return details["store"]


def test_same_result_as_a_local_run_and_stale_chunks_removed(site: Site) -> None:
    csv = rows_csv(site.folder, "same.csv", 90)
    local = site.store_flow("local.json", csv, "same-local")
    remote = site.store_flow("remote.json", csv, "same-ray")
    _run_json(site, local)
    done = site.cli("run", str(remote), "--to", "store", "--ray", site.address, "--ray-batch", BATCH)
    assert done.returncode == 0, done.stderr[-3000:]
    # progress: batches done of the total across the workers, a rate per worker node
    assert "batches on the Ray cluster (" in done.stderr and "rows/s" in done.stderr and "6/6" in done.stderr
    assert "+90 added" in done.stdout
    stored = collection(site.chroma_port, "same-ray")
    assert stored == collection(site.chroma_port, "same-local")
    assert len(stored) == 90  # ids are keys: none twice

    report = _run_json(site, remote, "--ray", site.address, "--ray-batch", BATCH)
    cluster = _store_details(report)["cluster"]
    assert isinstance(cluster, dict) and cluster["batches"] == 6
    workers = cluster["workers"]
    assert sum(w["batches"] for w in workers.values()) == 6
    # the embedder is built once per worker process, not once per batch
    assert sum(w["embedder_builds"] for w in workers.values()) <= sum(w["processes"] for w in workers.values())
    summary = next(node["summary"] for node in report["nodes"] if node["id"] == "store")  # type: ignore[attr-defined]
    assert summary.startswith("+0 added, \u22120 removed, 90 kept"), summary  # a re-run embeds nothing again

    # the CSV loses rows: the store keeps mirroring it (their chunks removed on the driver after the batches)
    rows_csv(site.folder, "same.csv", 60)
    done = site.cli("run", str(remote), "--to", "store", "--ray", site.address, "--ray-batch", BATCH)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\u221230 removed" in done.stdout
    _run_json(site, local)
    assert collection(site.chroma_port, "same-ray") == collection(site.chroma_port, "same-local")
    assert len(collection(site.chroma_port, "same-ray")) == 60


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


def _wait_for(condition: object, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()  # type: ignore[operator]
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


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
