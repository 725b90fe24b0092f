"""Keys on a cluster: they reach the workers only as the run's bound credentials, and Ray's logs never hold them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flowbuilder.cluster.credentials import BoundResolver
from flowbuilder.credentials import CredentialSlot
from tests.cluster.conftest import Site, collection, rows_csv
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.slow
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
            "--cred", f"embedder.api_key={KEY}", "--allow-endpoint", f"openai={fake.openai_base_url}",
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
