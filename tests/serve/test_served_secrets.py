"""Keys sitting in the files a served flow indexes never leave through /search, the MCP search tool or the
chunk resources: they are masked with the importer's detectors (shape, field name, entropy). Issue 19."""

from __future__ import annotations

import json
import random
import string
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from flowbuilder.formats.native import save_flow
from tests.serve.conftest import search_flow, serving, subprocess_env, wait_healthy

pytestmark = pytest.mark.slow

_rng = random.Random(19)
ALNUM = string.ascii_letters + string.digits


def _random(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


# Shaped like each provider's keys (random, so never valid anywhere).
PLANTED = {
    "openai": "sk-proj-" + _random(48),
    "groq": "gsk_" + _random(52),
    "pinecone": "pcsk_" + _random(20) + "_" + _random(60),
    "xai": "xai-" + _random(80),
    "mistral": _random(32),  # no prefix: only entropy finds it
    "cohere": _random(40),
    "aws access key id": "AKIA" + _random(16, string.ascii_uppercase + string.digits),
    "aws secret": _random(40, ALNUM + "/+"),
    "generic": _random(36),
}
PASSWORD = "Winter2024!corp"  # low entropy: found by its field name only


def planted_flow(folder: Path) -> Path:
    rows = ["provider,note"]
    for provider, key in PLANTED.items():
        if provider == "generic":
            rows.append(f'{provider},"config line: api_key={key} (do not share)"')
        else:
            rows.append(f'{provider},"the {provider} key for production is {key} and rotates yearly"')
    rows.append(f'intranet,"login with password: {PASSWORD} on the wiki"')
    data = folder / "data"
    data.mkdir()
    (data / "keys.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    # the key as a record id too (a CSV whose first column is the key)
    (data / "ids.csv").write_text(f"key,provider\n{PLANTED['cohere']},cohere\n", encoding="utf-8")
    flow = search_flow("Planted keys", "data", "planted", "db", k=20)
    path = folder / "planted.json"
    save_flow(flow, path)
    return path


def leaks(text: str) -> list[str]:
    found = [name for name, key in PLANTED.items() if key in text]
    return found + (["password"] if PASSWORD in text else [])


QUERIES = ["production key", "api_key config line", "password wiki", "cohere"]


def _served_texts(flow: Path) -> list[str]:
    texts = []
    log = flow.parent / "serve-stderr.txt"
    with serving(flow, log) as (url, process):
        wait_healthy(process, url, {}, log)
        for query in QUERIES:
            response = httpx.get(url + "/search", params={"q": query, "k": 20}, timeout=900)
            assert response.status_code == 200, response.text
            texts.append(response.text)
    return texts


async def _mcp_texts(flow: Path) -> list[str]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "flowbuilder", "mcp", str(flow)], env=subprocess_env()
    )
    texts: list[str] = []
    with open("/dev/null", "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for query in QUERIES:
                result = await session.call_tool("search", {"query": query, "k": 20}, read_timeout_seconds=300)
                assert not result.is_error, result.content
                texts += [c.text for c in result.content] + [json.dumps(result.structured_content)]
            index_text = (await session.read_resource("flow://chunks")).contents[0].text
            texts.append(index_text)
            for entry in json.loads(index_text):
                texts.append((await session.read_resource(entry["uri"])).contents[0].text)
    return texts


def test_served_search_tools_and_resources_mask_planted_keys(tmp_path: Path) -> None:
    flow = planted_flow(tmp_path)
    http_texts = _served_texts(flow)
    mcp_texts = anyio.run(_mcp_texts, flow)
    every: list[Any] = http_texts + mcp_texts
    assert [leaks(text) for text in every] == [[] for _ in every]
    # not vacuous: the rows themselves are served, with the keys masked in place
    hits = json.loads(http_texts[0])["hits"]
    assert len(hits) == len(PLANTED) + 2
    served = " ".join(h["text"] for h in hits)
    assert served.count("****") >= len(PLANTED) + 1
    assert "rotates yearly" in served and "api_key=****" in served and "password: ****" in served
    chunk_sources = json.loads(mcp_texts[-3])  # the index: both files
    assert sorted(e["source"] for e in chunk_sources) == ["ids.csv", "keys.csv"]
