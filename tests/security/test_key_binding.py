"""A key binds to one provider and goes only to that provider's hosts or an endpoint approved for it
(issue 30, "a key bound on the command line goes where the flow chose").

The real ``ollama`` and ``openai`` SDKs talk to the fake servers on 127.0.0.1; nothing is monkeypatched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.errors import CredentialError
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.nodes.embedders.ollama import OllamaEmbedderNode
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.providers import CredentialRef
from tests.fakes.llm_server import FakeLLMServer, running_server
from tests.security.cli_helpers import cli

OPENAI_KEY = "sk-proj-BOUNDONCOMMANDLINE0123456789abcdef"
OLLAMA_CLOUD_KEY = "ollama-cloud-key-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


@pytest.fixture(autouse=True)
def no_credentials_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "credentials.json"
    monkeypatch.setenv("FLOWBUILDER_CREDENTIALS", str(path))
    monkeypatch.setenv("FLOWBUILDER_DATA_DIR", str(tmp_path / "data"))
    for var in ("OPENAI_API_KEY", "OLLAMA_API_KEY", "GROQ_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return path


def edge(source: str, source_port: str, target: str, target_port: str) -> Edge:
    return Edge(source=source, source_port=source_port, target=target, target_port=target_port)


def saved(path: Path, nodes: list[NodeSpec], edges: list[Edge]) -> Path:
    save_flow(Flow(name=path.stem, nodes=nodes, edges=edges), path)
    return path


def ollama_embed_flow(tmp_path: Path, server: FakeLLMServer, ref: dict[str, str] | None = None) -> Path:
    """The attacker's flow: text -> Chroma with an Ollama embedder at a loopback port the flow picked."""
    credentials = {"api_key": CredentialRef.model_validate(ref)} if ref else {}
    emb = NodeSpec(id="emb", type="embedder.ollama", config={"base_url": server.ollama_host}, credentials=credentials)
    nodes = [
        NodeSpec(id="q", type="chat.input", config={"text": "hello"}),
        emb,
        NodeSpec(id="store", type="vectorstore.chroma"),
    ]
    edges = [edge("q", "message", "store", "query"), edge("emb", "embedder", "store", "embedder")]
    return saved(tmp_path / "stranger.json", nodes, edges)


def mixed_flow(tmp_path: Path, server: FakeLLMServer) -> Path:
    """An OpenAI chat model and an Ollama embedder: two providers use a slot named api_key."""
    nodes = [
        NodeSpec(id="q", type="chat.input", config={"text": "hello"}),
        NodeSpec(id="emb", type="embedder.ollama", config={"base_url": server.ollama_host}),
        NodeSpec(id="llm", type="llm.openai", config={"stream": False}),
        NodeSpec(id="out", type="chat.output"),
    ]
    return saved(
        tmp_path / "mixed.json", nodes, [edge("q", "message", "llm", "prompt"), edge("llm", "answer", "out", "message")]
    )


def test_a_bare_slot_used_by_two_providers_is_a_usage_error(tmp_path: Path, capsys, server: FakeLLMServer) -> None:
    path = mixed_flow(tmp_path, server)
    for command in ("validate", "run"):
        code, text = cli(capsys, command, str(path), "--cred", f"api_key={OPENAI_KEY}")
        assert code == 2, text
        assert "ollama.api_key" in text and "openai.api_key" in text and OPENAI_KEY not in text
    code, text = cli(capsys, "validate", str(path), "--cred", f"openai.api_key={OPENAI_KEY}")
    assert code == 0, text
    assert server.requests == []


def test_a_cloud_key_never_reaches_a_loopback_ollama(tmp_path: Path, capsys, server: FakeLLMServer) -> None:
    """The reproducer: ``--cred api_key=<OpenAI key>`` with a flow whose only api_key slot is Ollama's."""
    path = ollama_embed_flow(tmp_path, server)
    code, shown = cli(capsys, "validate", str(path), "--cred", f"api_key={OPENAI_KEY}")
    assert code == 1 and "[unsafe-credential]" in shown and server.ollama_host.split("//")[-1] in shown, shown
    code, ran = cli(capsys, "run", str(path), "--cred", f"api_key={OPENAI_KEY}")
    assert code == 1 and "unsafe-credential" in ran
    assert all(r.authorization is None for r in server.requests) and OPENAI_KEY not in ran
    # the user's own choice: approve that server for the Ollama key
    approve = ["--allow-endpoint", f"ollama={server.ollama_host}"]
    code, ran = cli(capsys, "run", str(path), "--cred", f"ollama.api_key={OLLAMA_CLOUD_KEY}", *approve)
    assert code == 0, ran
    assert server.requests_to("embeddings")[-1].authorization == f"Bearer {OLLAMA_CLOUD_KEY}"


def test_a_reference_named_after_another_provider_gets_nothing(tmp_path: Path, capsys, server: FakeLLMServer) -> None:
    """An Ollama reference named 'openai' and ``--cred openai=...``: the binding is OpenAI's only."""
    path = ollama_embed_flow(tmp_path, server, ref={"provider": "ollama", "name": "openai"})
    code, ran = cli(capsys, "run", str(path), "--cred", f"openai={OPENAI_KEY}")
    assert code == 0, ran  # an unused binding; Ollama needs no key
    assert server.requests and all(r.authorization is None for r in server.requests)
    resolver = CredentialResolver(
        explicit={"openai": OPENAI_KEY}, store=CredentialStore(tmp_path / "none.json"), environ={}
    )
    slot = OllamaEmbedderNode.credential_slots[0]
    assert resolver.resolve("emb", slot, CredentialRef(provider="ollama", name="openai")) is None


def test_the_environment_key_of_a_local_provider_is_withheld_from_this_machine(
    tmp_path: Path, capsys, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OLLAMA_API_KEY is a key for ollama.com: a loopback "Ollama" the flow picked does not get it (the node
    runs without it), and validate says where each key would go."""
    monkeypatch.setenv("OLLAMA_API_KEY", OLLAMA_CLOUD_KEY)
    path = ollama_embed_flow(tmp_path, server)
    code, shown = cli(capsys, "validate", str(path))
    assert code == 0, shown
    assert "key: node 'emb' slot 'api_key' (ollama/default, from OLLAMA_API_KEY)" in shown
    assert "withheld" in shown and server.ollama_host.split("//")[-1] in shown
    code, ran = cli(capsys, "run", str(path))
    assert code == 0, ran
    assert server.requests and all(r.authorization is None for r in server.requests)


def test_the_credentials_file_binds_by_provider_too(
    tmp_path: Path, capsys, server: FakeLLMServer, no_credentials_file: Path
) -> None:
    no_credentials_file.write_text(json.dumps({"openai": {"default": OPENAI_KEY}}), encoding="utf-8")
    path = ollama_embed_flow(tmp_path, server, ref={"provider": "ollama", "name": "default"})
    code, ran = cli(capsys, "run", str(path))
    assert code == 0 and all(r.authorization is None for r in server.requests), ran


def test_validate_reports_every_key_and_where_it_goes(tmp_path: Path, capsys, server: FakeLLMServer) -> None:
    path = mixed_flow(tmp_path, server)
    code, shown = cli(capsys, "validate", str(path), "--cred", f"openai.api_key={OPENAI_KEY}")
    assert code == 0, shown
    assert "key: node 'llm' slot 'api_key' (openai/default, from --cred) -> https://api.openai.com" in shown
    code, listed = cli(capsys, "validate", str(path), "--cred", f"openai.api_key={OPENAI_KEY}", "--json")
    keys = [row for row in json.loads(listed) if row["code"] == "key"]
    assert [(k["node"], k["provider"], k["source"], k["destination"]) for k in keys] == [
        ("llm", "openai", "--cred", "https://api.openai.com")
    ]
    assert OPENAI_KEY not in shown + listed


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("api_key", "expects PROVIDER.SLOT=VALUE"),
        ("nosuch.api_key=x1234567", "'nosuch' is not a provider"),
        ("emb.api_key=x1234567", "'emb' is not a provider (a node of this flow)"),
    ],
)
def test_malformed_or_unknown_targets_are_one_line(
    tmp_path: Path, capsys, server: FakeLLMServer, option: str, expected: str
) -> None:
    path = mixed_flow(tmp_path, server)
    code, text = cli(capsys, "validate", str(path), "--cred", option)
    assert code == 2 and expected in text, text


def test_programmatic_bindings_name_a_provider() -> None:
    with pytest.raises(CredentialError, match=r"PROVIDER\.SLOT"):
        CredentialResolver(explicit={"api_key": OPENAI_KEY}, environ={})
