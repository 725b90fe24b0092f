"""A node that prints (Python print and a raw write to fd 1) must not corrupt `flowbuilder mcp`'s stdout."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from flowbuilder.formats.native import save_flow
from tests.serve.conftest import search_flow, subprocess_env

# Runs flowbuilder's CLI with chat.input made noisy: the test's stand-in for any chatty library.
NOISY_MAIN = """
import os, sys
from flowbuilder.nodes.chat import ChatInput
original = ChatInput.run
def noisy(self, inputs, ctx):
    print("NOISE FROM A NODE")
    os.write(1, b"NATIVE NOISE ON FD 1\\n")
    return original(self, inputs, ctx)
ChatInput.run = noisy
from flowbuilder.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _small_flow(folder: Path) -> Path:
    (folder / "cases.csv").write_text(
        "Scenario TID,TestCase Description\n"
        "LOGIN_001,Login with a valid email and password\n"
        "LOGIN_002,Login with two dots in a row in the email\n"
        "LOGIN_003,Login with an empty password\n",
        encoding="utf-8",
    )
    flow = search_flow("Small", "cases.csv", "stdio-clean", str(folder / "chroma"), k=2)
    path = folder / "small.json"
    save_flow(flow, path)
    return path


def test_prints_from_nodes_go_to_stderr_not_the_protocol(tmp_path: Path) -> None:
    flow = _small_flow(tmp_path)
    errlog = tmp_path / "stderr.txt"
    params = StdioServerParameters(
        command=sys.executable, args=["-c", NOISY_MAIN, "mcp", str(flow)], env=subprocess_env()
    )

    async def session_checks() -> list[str]:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                first = await session.call_tool("search", {"query": "two dots in the email"}, read_timeout_seconds=120)
                second = await session.call_tool("search", {"query": "empty password", "k": 1})
                assert not first.is_error and not second.is_error
                return [
                    first.structured_content["hits"][0]["record_id"],
                    second.structured_content["hits"][0]["record_id"],
                ]

    assert anyio.run(session_checks) == ["LOGIN_002", "LOGIN_003"]
    log = errlog.read_text()
    assert "NOISE FROM A NODE" in log and "NATIVE NOISE ON FD 1" in log
