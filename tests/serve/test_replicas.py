"""Two ``flowbuilder serve --replica`` processes over one real Chroma server, behind a round-robin load balancer.

The store is filled once (``flowbuilder run FLOW --to store``); each replica serves only the search and answer part,
and MCP is stateless, so the official MCP client talks to the pair through the balancer as to one server, every
request landing on the other replica than the one before (docs/decisions/0018-serving-replicas.md).
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests import servers
from tests.serve.conftest import subprocess_env

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
QUESTION = "How is an email with two dots in a row handled at login?"


class RoundRobin(ThreadingHTTPServer):
    """A load balancer stand-in: each request goes to the next replica in turn, the response comes back whole."""

    daemon_threads = True

    def __init__(self, ports: list[int]) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.ports, self.turn, self.lock, self.served = ports, 0, threading.Lock(), [0] * len(ports)

    def next_port(self) -> int:
        with self.lock:
            index = self.turn % len(self.ports)
            self.turn += 1
            self.served[index] += 1
            return self.ports[index]


class _Forward(BaseHTTPRequestHandler):
    server: RoundRobin

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        port = self.server.next_port()
        upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        headers["Host"] = f"127.0.0.1:{port}"  # the replica's NetGuard checks the Host it is bound to
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        reply = upstream.getresponse()
        data = reply.read()
        self.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_POST = do_DELETE = _forward

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _invalid_login_rows(folder: Path) -> Path:
    """The demo CSV's invalid-login test cases (the question's answer among them): a store filled in seconds."""
    lines = (REPO / "data" / "VWO_500_Test_Cases.csv").read_text(encoding="utf-8-sig").splitlines()
    path = folder / "invalid_login.csv"
    path.write_text("\n".join([lines[0], *(line for line in lines if line.startswith('"INVALID'))]) + "\n")
    return path


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    folder = tmp_path_factory.mktemp("replicas")
    with servers.chroma_server(folder / "chroma") as port:
        flow = json.loads((REPO / "flows" / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
        for node in flow["nodes"]:
            if node["type"] == "vectorstore.chroma":
                node["config"].update(server_host="127.0.0.1", server_port=port, collection="replicated")
            elif node["type"] == "loader.file":
                node["config"]["path"] = str(_invalid_login_rows(folder))
        path = folder / "served.json"
        path.write_text(json.dumps(flow), encoding="utf-8")
        cli = [sys.executable, "-m", "flowbuilder"]
        filled = subprocess.run([*cli, "run", str(path), "--to", "store"],
                                capture_output=True, text=True, env=subprocess_env(), timeout=900)  # fmt: skip
        assert filled.returncode == 0, filled.stderr[-3000:]
        procs = [
            subprocess.Popen(
                [*cli, "serve", str(path), "--replica", "--port", "0"],
                stderr=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                text=True,
                env=subprocess_env(),
            )
            for _ in range(2)
        ]
        try:
            urls, logs = [], []
            for proc in procs:
                assert proc.stderr is not None
                lines = []
                for line in proc.stderr:  # the replica says where it serves once it listens
                    lines.append(line)
                    found = re.search(r"on (http://127\.0\.0\.1:\d+)/mcp", line)
                    if found:
                        urls.append(found.group(1))
                        break
                logs.append("".join(lines))
            assert len(urls) == 2, logs
            assert all("> loader" not in log for log in logs)  # a replica ingests nothing
            balancer = RoundRobin([int(url.rsplit(":", 1)[1]) for url in urls])
            threading.Thread(target=balancer.serve_forever, daemon=True).start()
            yield f"http://127.0.0.1:{balancer.server_address[1]}", urls
            balancer.shutdown()
            assert min(balancer.served) > 0  # both replicas answered
        finally:
            for proc in procs:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


def test_both_replicas_answer_the_same(replicas: tuple[str, list[str]]) -> None:
    _balancer, urls = replicas
    answers = [httpx.get(url + "/search", params={"q": QUESTION, "k": 5}, timeout=120).json() for url in urls]
    assert answers[0] == answers[1]
    assert answers[0]["hits"][0]["record_id"] == "INVALID-011"


async def _through_the_balancer(url: str) -> Any:
    host = url.removeprefix("http://")
    async with (
        httpx2.AsyncClient(timeout=120, headers={"Host": host}) as client,
        streamable_http_client(url + "/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()  # on one replica...
        tools = await session.list_tools()  # ...the next request on the other: no session to lose
        result = await session.call_tool("search", {"query": QUESTION, "k": 3})
        return tools, result


def test_an_mcp_client_talks_to_the_pair_through_a_round_robin_balancer(replicas: tuple[str, list[str]]) -> None:
    balancer, urls = replicas
    tools, result = anyio.run(_through_the_balancer, balancer)
    assert "search" in {tool.name for tool in tools.tools}
    assert not result.is_error, result.content
    direct = httpx.get(urls[1] + "/search", params={"q": QUESTION, "k": 3}, timeout=120).json()
    assert result.structured_content == direct


def test_a_replica_over_an_embedded_store_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "flowbuilder", "serve", str(REPO / "flows" / "row_labelled_csv_rag.json"), "--replica"],
        capture_output=True, text=True, env=subprocess_env(), timeout=300,
    )  # fmt: skip
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--replica" in lines[0] and "chroma run" in lines[0], done.stderr
