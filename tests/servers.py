"""Real servers the tests start on 127.0.0.1: a Chroma server (``chroma run``) and a two-node Ray cluster."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.ports import reserve_port
from tests.waiting import wait_until


def free_port() -> int:
    """A loopback port no other test process on the machine takes (:func:`tests.ports.reserve_port`)."""
    return reserve_port()


@contextlib.contextmanager
def chroma_server(path: Path) -> Iterator[int]:
    """A ``chroma run`` server keeping its data in ``path``; yields its port once it answers its heartbeat."""
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [chroma, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:

        def beating() -> bool:
            assert proc.poll() is None, f"chroma run did not start (exit code {proc.poll()})"
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=5) as response:
                return bool(response.status == 200)

        wait_until(beating, 180, "chroma run to answer its heartbeat")  # a cold start on a loaded machine
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


RAY_LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""Keeps every Ray process on 127.0.0.1 (Ray otherwise swaps loopback for the machine's own address)."""
OBJECT_STORE_BYTES = 80_000_000
"""Per node: the batches in flight are a few hundred kB each; /dev/shm is not the limit, the 24 GiB shared are."""


@contextlib.contextmanager
def ray_cluster(worker_data: Path, nodes: int = 2, handle: list[Any] | None = None) -> Iterator[tuple[str, Path]]:
    """A Ray cluster on this machine: a head and ``nodes - 1`` more, one CPU each, no dashboard; its workers keep
    their embedding cache in ``worker_data``. Yields the address (``127.0.0.1:PORT``) and the session folder (where
    Ray keeps its logs); ``handle`` receives the ``ray.cluster_utils.Cluster`` (a test that kills the head)."""
    saved = {key: os.environ.get(key) for key in (*RAY_LOOPBACK, "FLOWBUILDER_DATA_DIR")}
    os.environ.update(RAY_LOOPBACK)
    os.environ["FLOWBUILDER_DATA_DIR"] = str(worker_data)  # the nodes' workers inherit it
    from ray.cluster_utils import Cluster

    args = {"num_cpus": 1, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, connect=False, head_node_args=args)
    if handle is not None:
        handle.append(cluster)
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        for key, value in saved.items():  # the tests' own processes keep their sandbox data dir
            if key == "FLOWBUILDER_DATA_DIR" and value is not None:
                os.environ[key] = value
        yield cluster.address, Path(cluster.head_node.get_session_dir_path())
    finally:
        cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
