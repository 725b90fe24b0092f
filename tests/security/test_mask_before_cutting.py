"""Served text is masked on the source text before it is split (issue 30, "served masking is bypassed").

With ``splitter.fixed`` at 10 characters, ``/search?k=100`` and ``flow://chunks`` used to return the pieces
of a key with their offsets, and a client joined them back. Now a served run masks each source document as
it is read, keeping its length (so offsets and record spans stay true), and no chunk size, overlap or offset
brings a secret back. The served text keeps what is no secret: test-case ids, prose, short hashes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.serving.service import FlowService
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.secrets import mask_secrets

UNUSED_FILE_KEY = "correct horse battery staple 42"  # in the credentials file; no node of the flow uses it
SECRETS = {
    "openai key": "sk-proj-Zq8vN2mXc4Lp7Rt1Yw9Kb3Hd6Fj0Gs5A",
    "azure 32-hex": "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "postgres password": "Summer2024!",
    "mongodb password": "Pa55w0rdXyz",
    "db_pass": "hunter2hunter",
    "pwd": "Tr0ub4dor&3",
    "base64 token": "dGhpcyBpcyBhIHNlY3JldCB0b2tlbiB2YWx1ZQ==",
    "credentials file": UNUSED_FILE_KEY,
}
KEPT = ["LOGIN_001", "TC-1042", "Verify the password field hides what is typed", "build 3f2a9c1 passed"]
SOURCE = f"""LOGIN_001: Verify the password field hides what is typed.
TC-1042 checks the release notes: build 3f2a9c1 passed on staging.
OPENAI_API_KEY is {SECRETS["openai key"]} for the bot.
The Azure key is {SECRETS["azure 32-hex"]} (subscription westeurope).
DATABASE_URL=postgres://admin:{SECRETS["postgres password"]}@db.internal:5432/app
MONGO=mongodb+srv://svc:{SECRETS["mongodb password"]}@cluster0.example.net/prod
db_pass = {SECRETS["db_pass"]}
pwd: {SECRETS["pwd"]}
auth token {SECRETS["base64 token"]}
the passphrase on the sticky note: {UNUSED_FILE_KEY}
LOGIN_002: Verify that a locked account shows the lock message.
"""


@pytest.fixture
def resolver(tmp_path: Path) -> CredentialResolver:
    store = CredentialStore(tmp_path / "credentials.json")
    store.set("cohere", "team", UNUSED_FILE_KEY)
    return CredentialResolver(store=store, environ={})


def chunk_flow(size: int, overlap: int) -> Flow:
    return Flow(
        name="notes",
        nodes=[
            NodeSpec(id="load", type="loader.file", config={"path": "notes.txt"}),
            NodeSpec(id="split", type="splitter.fixed", config={"chunk_size": size, "chunk_overlap": overlap}),
        ],
        edges=[Edge(source="load", source_port="records", target="split", target_port="documents")],
    )


def reassemble(pieces: list[dict[str, Any]]) -> str:
    """What a client gets by laying every piece at its offsets."""
    text: dict[int, str] = {}
    for piece in pieces:
        for index, char in enumerate(piece["text"]):
            text[int(piece["start"]) + index] = char
    return "".join(text.get(i, "\0") for i in range(max(text) + 1)) if text else ""


def leaked(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text]


def test_the_detectors_find_each_secret_in_the_whole_source(resolver: CredentialResolver) -> None:
    resolver.register_known_secrets()
    masked = mask_secrets(SOURCE)
    assert leaked(masked) == []
    assert all(kept in masked for kept in KEPT)


@pytest.mark.parametrize("size", range(5, 51))
def test_no_cut_brings_a_secret_back(tmp_path: Path, resolver: CredentialResolver, size: int) -> None:
    (tmp_path / "notes.txt").write_text(SOURCE, encoding="utf-8")
    executor = Executor(resolver=resolver, data_dir=tmp_path / "data", served=True)
    for overlap in sorted({0, 1, size // 3, size // 2, size - 1}):
        run = executor.run(chunk_flow(size, overlap), base_dir=tmp_path, to="split")
        chunks = run.results["split"].outputs["chunks"]
        pieces = [{"text": c.text, "start": c.metadata["start"]} for c in chunks]
        whole = reassemble(pieces)
        assert len(whole) == len(SOURCE)  # masking keeps the length: offsets still point at the source
        assert leaked(whole) == [] and leaked("".join(p["text"] for p in pieces)) == [], (size, overlap)
        assert all(kept in whole for kept in KEPT), (size, overlap)


def served_flow(folder: Path, size: int, overlap: int) -> Path:
    (folder / "notes.txt").write_text(SOURCE, encoding="utf-8")
    flow = chunk_flow(size, overlap)
    flow.nodes += [
        NodeSpec(id="emb", type="embedder.wordllama", config={"dim": 64}),
        NodeSpec(id="store", type="vectorstore.chroma", config={"collection": f"notes-{size}-{overlap}"}),
        NodeSpec(id="q", type="chat.input"),
        NodeSpec(id="retriever", type="retriever.vector", config={"k": 4}),
    ]
    flow.edges += [
        Edge(source="split", source_port="chunks", target="store", target_port="documents"),
        Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
        Edge(source="store", source_port="store", target="retriever", target_port="store"),
        Edge(source="q", source_port="message", target="retriever", target_port="query"),
    ]
    path = folder / "notes.json"
    save_flow(flow, path)
    return path


@pytest.mark.parametrize(("size", "overlap"), [(10, 0), (7, 3)])
def test_search_and_chunk_resources_never_serve_the_pieces(
    tmp_path: Path, resolver: CredentialResolver, size: int, overlap: int
) -> None:
    """The reproducer: k=100 over 10-character chunks, joined back by their offsets."""
    service = FlowService(served_flow(tmp_path, size, overlap), resolver=resolver, data_dir=tmp_path / "data")
    hits = service.search("key password token", k=100).to_json()["hits"]
    chunks = service.chunks()["notes.txt"]
    assert len(chunks) > 60 and len(hits) == min(100, len(chunks))  # every piece, as the attack asked
    served = json.dumps(hits) + json.dumps(chunks)
    whole = reassemble(chunks)
    assert leaked(whole) == [] and leaked(served) == []
    assert all(kept in whole for kept in KEPT)
