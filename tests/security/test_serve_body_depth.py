"""``serve`` reads request bodies with the flow files' limits: a 200k-deep JSON body is a 400, not a 500."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.serving.http_app import build_http_app
from flowbuilder.serving.service import FlowService


def echo_client(tmp_path: Path) -> TestClient:
    flow = Flow(
        name="echo",
        nodes=[NodeSpec(id="in", type="chat.input"), NodeSpec(id="out", type="chat.output")],
        edges=[Edge(source="in", source_port="message", target="out", target_port="message")],
    )
    service = FlowService(flow, base_dir=tmp_path, data_dir=tmp_path / "data")
    return TestClient(build_http_app(service), base_url="http://127.0.0.1")


def test_a_deeply_nested_body_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    client = echo_client(tmp_path)
    deep = "[" * 200_000 + "]" * 200_000
    response = client.post("/ask", content=deep, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"] and "question" in response.json()["error"]
    deep_object = '{"question": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}"
    response = client.post("/ask", content=deep_object)
    assert response.status_code == 400 and "nested too deeply" in response.json()["error"]


def test_odd_bodies_get_400(tmp_path: Path) -> None:
    client = echo_client(tmp_path)
    for body in (b"NaN", b'{"question": 1e999}', b"[1, 2]", b"\xff\xfe", b'{"question": "\\ud800"}'[:-3]):
        response = client.post("/ask", content=body)
        assert response.status_code == 400, body
        assert 'JSON like {"question"' in response.json()["error"] or "must be JSON" in response.json()["error"]
    # a well-formed body gets past the reader (this flow has no model to ask: the flow's own answer)
    response = client.post("/ask", content=b'{"question": "hello"}')
    assert response.status_code == 400 and "no model or agent" in response.json()["error"]
