"""Every node that talks to the network goes only where the user allowed, key or not (issue 19, Hosts).

The real SDKs (ollama, openai, mcp) talk to the fake servers on 127.0.0.1; nothing is monkeypatched.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.errors import EndpointError, FlowValidationError
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.nodes.embedders.ollama import OllamaEmbedder
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from flowbuilder.trust.egress import parse_endpoint
from flowbuilder.trust.netguard import is_loopback
from tests.fakes.llm_server import FakeLLMServer, running_server

ENV_KEY = "ollama-env-key-NEVER-SENT-1234567890"
CLOUD_KEY = "sk-proj-loopbackKEY0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from running_server(embedding_dim=8)


def write(tmp_path: Path, *nodes: NodeSpec, edges: list[Edge] | None = None) -> Path:
    path = tmp_path / "stranger.json"
    save_flow(Flow(name="stranger", nodes=list(nodes), edges=edges or []), path)
    return path


def chat_flow(tmp_path: Path, node: NodeSpec) -> Path:
    return write(
        tmp_path,
        NodeSpec(id="in", type="chat.input"),
        node,
        NodeSpec(id="out", type="chat.output"),
        edges=[
            Edge(source="in", source_port="message", target=node.id, target_port="prompt"),
            Edge(source=node.id, source_port="answer", target="out", target_port="message"),
        ],
    )


def resolver(tmp_path: Path, **kwargs: object) -> CredentialResolver:
    return CredentialResolver(store=CredentialStore(tmp_path / "creds.json"), environ={}, **kwargs)  # type: ignore[arg-type]


# --- the ollama library never sends OLLAMA_API_KEY behind the resolver's back -----------------------


def test_the_ollama_embedder_does_not_send_the_environment_key(server: FakeLLMServer, monkeypatch) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", ENV_KEY)
    embedder = OllamaEmbedder(model="nomic-embed-text", base_url=server.ollama_host)
    assert len(embedder.embed_documents(["hello"])[0]) == 8
    assert [r.authorization for r in server.requests_to("embeddings")] == [None]
    bound = OllamaEmbedder(model="nomic-embed-text", base_url=server.ollama_host, api_key="bound-key-123456")
    bound.embed_documents(["again"])
    assert server.requests_to("embeddings")[-1].authorization == "Bearer bound-key-123456"


def test_llm_ollama_sends_only_the_bound_key(server: FakeLLMServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", ENV_KEY)
    node = NodeSpec(id="llm", type="llm.ollama", config={"base_url": server.ollama_host, "stream": False})
    path = chat_flow(tmp_path, node)
    server.reply("hi")
    # the resolver reads OLLAMA_API_KEY for the slot itself (the provider's standard variable), so an
    # environment without it shows that nothing else adds one
    monkeypatch.delenv("OLLAMA_API_KEY")
    run = Executor(resolver=resolver(tmp_path), data_dir=tmp_path).run(
        Flow.model_validate_json(path.read_text()), inputs="q"
    )
    assert run.ok, [r.error for r in run.failed()]
    assert server.requests_to("chat")[-1].authorization is None
    server.reply("hi")
    # a key bound for Ollama goes to a server on this machine only once the user approved that server
    bound = resolver(tmp_path, explicit={"ollama.api_key": "bound-key-123456"})
    with pytest.raises(FlowValidationError, match=r"unsafe-credential.*a server on this machine"):
        Executor(resolver=bound, data_dir=tmp_path).run(Flow.model_validate_json(path.read_text()), inputs="q")
    assert len(server.requests_to("chat")) == 1
    bound.approve("ollama", server.ollama_host)
    run = Executor(resolver=bound, data_dir=tmp_path).run(Flow.model_validate_json(path.read_text()), inputs="q")
    assert run.ok and server.requests_to("chat")[-1].authorization == "Bearer bound-key-123456"


def test_embedder_ollama_has_a_credential_slot() -> None:
    from flowbuilder.registry import default_registry

    slots = default_registry().get("embedder.ollama").credential_slots
    assert [(s.name, s.provider, s.required) for s in slots] == [("api_key", "ollama", False)]


# --- a destination the flow chose needs approval, key or not ------------------------------------------


def test_ollama_at_a_stranger_host_is_flagged_and_refused_without_a_key(tmp_path: Path, capsys) -> None:
    node = NodeSpec(id="emb", type="embedder.ollama", config={"base_url": "http://attacker.example:11434"})
    path = write(tmp_path, node)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[untrusted-endpoint] node 'emb'" in out and "http://attacker.example:11434" in out
    assert "--allow-endpoint ollama/default=http://attacker.example:11434" in out
    assert main(["run", str(path), "--to", "emb"]) == 1
    assert "untrusted-endpoint" in capsys.readouterr().err
    args = ["--allow-endpoint", "ollama=http://attacker.example:11434"]
    assert main(["validate", str(path), *args]) == 0
    # the credentials file's approvals count too
    store = CredentialStore()
    store.approve_endpoint("ollama", "default", "http://attacker.example:11434/api")
    assert main(["validate", str(path)]) == 0
    store.path.unlink()


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:11434", "http://localhost:11434", "http://[::1]:11434", "127.0.0.1:11434"],
)
def test_local_by_nature_providers_may_use_this_machine(tmp_path: Path, capsys, url: str) -> None:
    path = write(tmp_path, NodeSpec(id="emb", type="embedder.ollama", config={"base_url": url}))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().out


def test_star_localhost_counts_only_when_it_resolves_to_loopback(tmp_path: Path, capsys) -> None:
    name = "sneaky-flowbuilder-test.localhost"
    try:
        resolved = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except OSError:
        resolved = set()
    if resolved:
        pytest.skip(f"{name} resolves here ({resolved}); the point is a name that does not")
    assert is_loopback("localhost") and not is_loopback(name)
    path = write(tmp_path, NodeSpec(id="emb", type="embedder.ollama", config={"base_url": f"http://{name}:11434"}))
    assert main(["validate", str(path)]) == 1
    assert "untrusted-endpoint" in capsys.readouterr().out


def test_a_cloud_key_goes_to_this_machine_only_once_approved(server: FakeLLMServer, tmp_path: Path, capsys) -> None:
    node = NodeSpec(id="llm", type="llm.openai", config={"base_url": server.openai_base_url, "stream": False})
    path = chat_flow(tmp_path, node)
    assert main(["run", str(path), "--input", "q", "--cred", f"openai={CLOUD_KEY}"]) == 1
    captured = capsys.readouterr()
    assert "unsafe-credential" in captured.err and "a server on this machine" in captured.err
    assert server.requests == [] and CLOUD_KEY not in captured.out + captured.err
    server.reply("approved answer")
    approve = ["--allow-endpoint", f"openai={server.url}"]
    assert main(["run", str(path), "--input", "q", "--cred", f"openai={CLOUD_KEY}", *approve]) == 0
    assert "approved answer" in capsys.readouterr().out
    assert server.requests_to("chat")[-1].authorization == f"Bearer {CLOUD_KEY}"


def test_tool_mcp_over_http_is_flagged_and_calls_nothing(server: FakeLLMServer, tmp_path: Path, capsys) -> None:
    url = f"{server.url}/admin/delete?all=1"
    node = NodeSpec(id="tools", type="tool.mcp", config={"transport": "http", "url": url})
    path = write(tmp_path, node)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[untrusted-endpoint] node 'tools'" in out and "/admin/delete?all=1" in out
    assert main(["run", str(path), "--to", "tools"]) == 1
    capsys.readouterr()
    assert server.requests == []  # refused before any request
    assert main(["validate", str(path), "--allow-endpoint", f"mcp={server.url}"]) == 0


def test_stores_and_rerankers_are_checked_too(tmp_path: Path, capsys) -> None:
    nodes = [
        NodeSpec(id="chroma", type="vectorstore.chroma", config={"server_host": "db.attacker.example"}),
        NodeSpec(id="qdrant", type="vectorstore.qdrant", config={"url": "http://qdrant.attacker.example:6333"}),
        NodeSpec(id="cohere", type="reranker.cohere", config={"base_url": "https://cohere.attacker.example"}),
    ]
    path = write(tmp_path, *nodes)
    assert main(["validate", str(path), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    flagged = {r["node"] for r in rows if r["code"] in ("untrusted-endpoint", "unsafe-credential")}
    assert flagged == {"chroma", "qdrant", "cohere"}


# --- malformed URLs are one clear line everywhere --------------------------------------------------------


BAD_URLS = ["http://x:99999", "http://[::1", "http://x:abc", "ftp://x", "http://", "http://a b", "http://x\x1b[2K"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_url_is_an_issue_not_a_crash(tmp_path: Path, capsys, url: str) -> None:
    with pytest.raises(EndpointError):
        parse_endpoint(url)
    nodes = [
        NodeSpec(id="emb", type="embedder.ollama", config={"base_url": url}),
        NodeSpec(id="llm", type="llm.openai", config={"base_url": url}),
        NodeSpec(id="mcp", type="tool.mcp", config={"transport": "http", "url": url}),
        NodeSpec(id="pc", type="vectorstore.pinecone", config={"host": url}),
    ]
    path = write(tmp_path, *nodes)
    assert main(["validate", str(path), "--cred", f"openai={CLOUD_KEY}"]) == 1
    out = capsys.readouterr().out
    assert out.count("[invalid-endpoint]") == 4 and "Traceback" not in out and "\x1b" not in out
    assert main(["run", str(path), "--to", "emb"]) == 1
    err = capsys.readouterr().err
    assert "invalid-endpoint" in err and "Traceback" not in err


@pytest.mark.parametrize("url", ["http://x:99999", "http://[::1", "http://x:abc"])
def test_a_malformed_allow_endpoint_is_one_line(tmp_path: Path, capsys, url: str) -> None:
    path = write(tmp_path, NodeSpec(id="emb", type="embedder.ollama"))
    assert main(["validate", str(path), "--allow-endpoint", f"ollama={url}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a valid URL" in err and err.count("\n") == 1


def test_a_server_reply_is_shown_as_a_short_escaped_excerpt(server: FakeLLMServer, tmp_path: Path) -> None:
    reply = "\x1b[2K\rvalid " + "A" * 5000
    server.fail("chat", 500, message=reply)
    node = NodeSpec(id="llm", type="llm.ollama", config={"base_url": server.ollama_host, "stream": False})
    path = chat_flow(tmp_path, node)
    run = Executor(resolver=resolver(tmp_path), data_dir=tmp_path).run(
        Flow.model_validate_json(path.read_text()), inputs="q"
    )
    error = run.results["llm"].error or ""
    assert "answered HTTP 500" in error
    assert "\x1b" not in error and "\r" not in error and "\\u001b" in error
    assert len(error) < 600
