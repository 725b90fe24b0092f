"""The command line: exit codes, one-line errors, tables and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.examples import flows_dir
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from tests.ports import reserve_port
from tests.waiting import wait_until


@pytest.fixture
def passthrough_flow(tmp_path: Path) -> Path:
    flow = Flow(
        name="tiny",
        nodes=[NodeSpec(id="a", type="util.passthrough"), NodeSpec(id="b", type="util.passthrough")],
        edges=[Edge(source="a", source_port="value", target="b", target_port="value")],
    )
    path = tmp_path / "tiny.json"
    save_flow(flow, path)
    return path


def test_validate_ok(passthrough_flow: Path, capsys) -> None:
    assert main(["validate", str(passthrough_flow)]) == 0
    assert "valid (2 nodes, 1 connections)" in capsys.readouterr().out


def test_validate_lists_every_issue_and_exits_1(tmp_path: Path, capsys) -> None:
    flow = Flow(
        nodes=[NodeSpec(id="x", type="splitter.recursiv"), NodeSpec(id="y", type="util.passthrough", config={"no": 1})]
    )
    path = tmp_path / "bad.json"
    save_flow(flow, path)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "2 problem(s)" in out and "unknown-type" in out and "invalid-config" in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("{oops", "is not valid JSON"),
        ('{"nodes": [], "connections": {}}', "flowbuilder import"),
    ],
)
def test_bad_files_exit_2_with_one_line(tmp_path: Path, capsys, content, expected) -> None:
    path = tmp_path / "f.json"
    if content is not None:
        path.write_text(content)
    for command in ("validate", "run"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err and expected in err and "Traceback" not in err


def test_run_prints_table_and_json(passthrough_flow: Path, capsys) -> None:
    assert main(["run", str(passthrough_flow)]) == 0
    out = capsys.readouterr().out
    assert "node" in out and "status" in out and "util.passthrough" in out
    assert main(["run", str(passthrough_flow), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [n["id"] for n in data["nodes"]] == ["a", "b"] and data["ok"] is True
    assert {"status", "seconds", "summary"} <= set(data["nodes"][0])


def test_run_to_unknown_node_is_invalid(passthrough_flow: Path, capsys) -> None:
    assert main(["run", str(passthrough_flow), "--to", "zzz"]) == 1
    assert "--to names no node" in capsys.readouterr().err


def test_nodes_lists_the_registry(capsys) -> None:
    assert main(["nodes"]) == 0
    assert "util.passthrough" in capsys.readouterr().out
    assert main(["nodes", "--json"]) == 0
    assert any(n["type"] == "input.file" for n in json.loads(capsys.readouterr().out))


def test_usage_errors_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run"])
    assert info.value.code == 2


def test_python_dash_m_and_console_script(tmp_path: Path) -> None:
    env = {**os.environ, "FLOWBUILDER_DATA_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "flowbuilder", "validate", str(flows_dir() / "missing.json")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 2 and "no such file" in out.stderr and "Traceback" not in out.stderr


def test_ui_refuses_a_bad_flow_and_a_busy_port(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["ui", str(bad)]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["ui", "--port", str(port), "--workspace", str(tmp_path / "ws")]) == 2
    assert "already in use" in capsys.readouterr().err


def websocket_status(port: int, origin: str) -> int:
    """The status of a websocket handshake with the builder's socket.io endpoint from a page of ``origin``."""
    import base64
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", "/_nicegui_ws/socket.io/?EIO=4&transport=websocket")
        for name, value in {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
            "Sec-WebSocket-Version": "13",
            "Origin": origin,
        }.items():
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def test_ui_serves_the_demo_on_loopback(tmp_path: Path) -> None:
    """`flowbuilder ui` starts, binds 127.0.0.1 only and serves the demo flow's page."""
    import http.client
    import socket
    import urllib.error
    import urllib.request

    port = reserve_port()
    # NiceGUI changes behaviour under pytest (PYTEST_CURRENT_TEST); the server must run as users run it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["FLOWBUILDER_DATA_DIR"] = str(tmp_path / "data")
    server = subprocess.Popen(
        [sys.executable, "-m", "flowbuilder", "ui", "--port", str(port), "--workspace", str(tmp_path / "ws")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def page() -> str:
            assert server.poll() is None, f"flowbuilder ui exited with {server.poll()}"
            # a first page can take seconds on a loaded machine: a short timeout only makes it start over
            return str(urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read().decode())

        assert "Flowbuilder" in wait_until(page, 180, "the builder's page")
        # DNS rebinding: a page on another name that resolves here is refused.
        rebind = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(rebind, timeout=5)
        assert refused.value.code == 403
        # Another port on this machine is another site (issue 30: Origin on scheme, host and port), and no page
        # may frame the builder.
        other_port = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Origin": "http://localhost:3000"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(other_port, timeout=30)
        assert refused.value.code == 403
        own = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Origin": f"http://127.0.0.1:{port}"})
        with urllib.request.urlopen(own, timeout=30) as response:
            assert response.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
        # The page's websocket (which starts the background ingest, not the GET) is refused to another site.
        assert websocket_status(port, "http://localhost:3000") == 403
        assert websocket_status(port, f"http://127.0.0.1:{port}") == 101
        # The upload limit is the server's, not only the browser's.
        upload = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        upload.putrequest("POST", "/_nicegui/upload")
        upload.putheader("Content-Length", str(200 * 1024 * 1024))  # refused before a byte of it is read
        upload.endheaders()
        assert upload.getresponse().status == 413
        upload.close()
        with socket.socket() as other:  # not reachable on another interface of this machine
            other.settimeout(1)
            host_ip = socket.gethostbyname(socket.gethostname())
            if not host_ip.startswith("127."):
                assert other.connect_ex((host_ip, port)) != 0
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_ui_on_another_host_needs_a_token(tmp_path: Path, capsys) -> None:
    assert main(["ui", "--host", "0.0.0.0", "--port", "1", "--workspace", str(tmp_path / "ws")]) == 1
    err = capsys.readouterr().err
    assert "without a token" in err and len(err.strip().splitlines()) == 1


def test_validate_shows_the_first_fifty_problems(tmp_path: Path, capsys) -> None:
    flow = Flow(nodes=[NodeSpec(id=f"n{i}", type="splitter.nope") for i in range(80)])
    path = tmp_path / "many.json"
    save_flow(flow, path)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "80 problem(s)" in out and "... and 30 more" in out
    assert out.count("unknown-type") == 50
