"""One real Ray cluster (a head and a second node, one CPU each, on 127.0.0.1) and one real ``chroma run`` server
for every test of this folder. No mocks of Ray: the tests run ``flowbuilder ... --ray ADDRESS`` as users do."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import servers

os.environ.update(servers.RAY_LOOPBACK)  # before Ray is imported: it reads this once, at import
pytest.importorskip("ray", reason="the cluster extra (pip install -e .[cluster]) is not installed")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Site:
    """The cluster's address, the Chroma server's port and a folder for flows."""

    address: str
    chroma_port: int
    folder: Path
    session: Path
    """The cluster's session folder: Ray's logs of every process of the cluster."""

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """``python -m flowbuilder ARGS`` in a fresh process (the driver), on loopback like the cluster."""
        return subprocess.run(
            [sys.executable, "-m", "flowbuilder", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=cli_env(),
            cwd=self.folder,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "flowbuilder", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
            cwd=self.folder,
        )

    def store_flow(self, name: str, csv: Path, collection: str, *, embedder: dict[str, Any] | None = None) -> Path:
        """The demo's row-labelled flow reading ``csv`` into ``collection`` on the Chroma server."""
        flow = json.loads((REPO / "flows" / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
        for node in flow["nodes"]:
            if node["type"] == "vectorstore.chroma":
                node["config"].update(server_host="127.0.0.1", server_port=self.chroma_port, collection=collection)
            elif node["type"] == "loader.file":
                node["config"]["path"] = str(csv)
            elif node["type"] == "embedder.local" and embedder is not None:
                node.update(embedder)
        path = self.folder / name
        path.write_text(json.dumps(flow), encoding="utf-8")
        return path


def cli_env() -> dict[str, str]:
    return {**os.environ, **servers.RAY_LOOPBACK, "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("ray-site")
    # the workers share the tests' embedding cache: a local run's vectors are not embedded again on the cluster
    shared = Path(os.environ["FLOWBUILDER_DATA_DIR"])
    with servers.chroma_server(root / "chroma") as port, servers.ray_cluster(shared) as (address, session):
        yield Site(address, port, root, session)


def rows_csv(folder: Path, name: str, rows: int, marker: str = "") -> Path:
    """The first ``rows`` rows of the VWO CSV; ``marker`` put before each description makes every text new to the
    embedding cache (so the workers really embed)."""
    with (REPO / "data" / "VWO_500_Test_Cases.csv").open(encoding="utf-8-sig", newline="") as handle:
        table = list(csv.reader(handle))
    body = table[1 : rows + 1]
    if marker:
        body = [[row[0], f"{marker} {row[1]}", *row[2:]] for row in body]
    path = folder / name
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([table[0], *body])
    return path


def collection(port: int, name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{id: (text, metadata)}`` of a collection on the Chroma server."""
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    got = client.get_collection(name).get(include=["documents", "metadatas"])
    return {i: (d, dict(m or {})) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)}
