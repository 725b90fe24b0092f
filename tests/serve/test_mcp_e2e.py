"""End to end with the SDK's own client: `flowbuilder mcp` over stdio and `flowbuilder serve` over HTTP."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.serve.conftest import DEMO_FLOW, QUESTION, Served, subprocess_env

pytestmark = pytest.mark.slow


def _check_search_result(result: Any, k: int) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert data["query"] == QUESTION and data["k"] == k
    hits = data["hits"]
    assert len(hits) == k
    assert hits[0]["record_id"] == "INVALID-011"
    assert hits[0]["source"] == "VWO_500_Test_Cases.csv"
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and 0.3 < scores[0] <= 1.0
    text = result.content[0].text
    assert "INVALID-011" in text and f"score {scores[0]:.4f}" in text
    return data


async def _stdio_session_checks() -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "flowbuilder", "mcp", str(DEMO_FLOW)], env=subprocess_env()
    )
    with open("/dev/null", "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == {"search", "ask"}
            assert set(tools["search"].input_schema["properties"]) == {"query", "k"}
            assert tools["search"].input_schema["properties"]["k"]["default"] == 5
            result = await session.call_tool("search", {"query": QUESTION, "k": 3}, read_timeout_seconds=300)
            data = _check_search_result(result, 3)

            bad = await session.call_tool("search", {"query": "  "})
            assert bad.is_error and "query is empty" in bad.content[0].text

            resources = {str(r.uri) for r in (await session.list_resources()).resources}
            assert {"flow://definition", "flow://chunks"} <= resources
            definition = json.loads((await session.read_resource("flow://definition")).contents[0].text)
            assert definition["name"] == "Row-labelled CSV RAG"
            assert all("credentials" not in node for node in definition["nodes"])
            index = json.loads((await session.read_resource("flow://chunks")).contents[0].text)
            assert index == [
                {"source": "VWO_500_Test_Cases.csv", "chunks": 500, "uri": "flow://chunks/VWO_500_Test_Cases.csv"}
            ]
            chunks = json.loads((await session.read_resource(index[0]["uri"])).contents[0].text)["chunks"]
            assert len(chunks) == 500
            invalid = next(c for c in chunks if c["record_id"] == "INVALID-011")
            assert invalid["start"] == 0 and invalid["end"] == len(invalid["text"])

            prompts = (await session.list_prompts()).prompts
            assert [(p.name, [a.name for a in p.arguments or []]) for p in prompts] == [
                ("prompt", ["context", "question"])
            ]
            rendered = await session.get_prompt("prompt", {"context": "CTX-42", "question": "Q-7?"})
            text = rendered.messages[0].content.text
            assert "Context:\nCTX-42" in text and "Question: Q-7?" in text
            return data


def test_stdio_server_search_resources_and_prompts(served: Served) -> None:
    # `served` first: the ingest is then already on disk and this process only re-reads it.
    stdio_data = anyio.run(_stdio_session_checks)
    http = httpx.get(served.url + "/search", params={"q": QUESTION, "k": 3}, headers=served.auth, timeout=60)
    assert http.status_code == 200
    assert http.json() == stdio_data  # /search answers with the search tool's structured content


async def _http_session_search(served: Served) -> Any:
    async with (
        httpx2.AsyncClient(headers=served.auth, timeout=60) as client,
        streamable_http_client(served.url + "/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert {t.name for t in (await session.list_tools()).tools} == {"search", "ask"}
        return await session.call_tool("search", {"query": QUESTION, "k": 5})


def test_streamable_http_search_matches_the_search_endpoint(served: Served) -> None:
    result = anyio.run(_http_session_search, served)
    data = _check_search_result(result, 5)
    rest = httpx.get(served.url + "/search", params={"q": QUESTION, "k": 5}, headers=served.auth, timeout=60)
    assert rest.json() == data
    assert list(rest.json()["hits"][0]) == [
        "rank",
        "score",
        "text",
        "source",
        "record_id",
        "id",
        "start",
        "end",
        "chunk_index",
        "row",
    ]


def test_http_guard_and_health(served: Served) -> None:
    health = httpx.get(served.url + "/health", headers=served.auth).json()
    assert health["ok"] is True and health["search_tools"] == [{"name": "search", "node": "retriever", "k": 5}]
    assert httpx.get(served.url + "/health").status_code == 401
    assert (
        httpx.get(served.url + "/search", params={"q": "x"}, headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    rebind = httpx.get(served.url + "/health", headers={**served.auth, "Host": "attacker.example"})
    assert rebind.status_code == 403
    cross = httpx.post(served.url + "/mcp", headers={**served.auth, "Origin": "http://attacker.example"}, json={})
    assert cross.status_code == 403
    bad_k = httpx.get(served.url + "/search", params={"q": "x", "k": "many"}, headers=served.auth)
    assert bad_k.status_code == 400 and "k must be a whole number" in bad_k.json()["error"]
    assert served.token not in served.log.read_text()


def test_ask_without_a_reachable_model_says_why(served: Served) -> None:
    response = httpx.post(served.url + "/ask", json={"question": QUESTION}, headers=served.auth, timeout=120)
    body = response.json()
    if body.get("ok"):  # an Ollama happens to run here: then the answer must come with sources
        assert body["answer"] and body["sources"]
        return
    assert response.status_code == 502
    assert body["answer"] is None and "llm" in body["error"]
    assert body["sources"][0]["record_id"] == "INVALID-011"  # what retrieval found is still reported
