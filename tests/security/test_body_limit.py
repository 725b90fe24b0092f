"""The server refuses oversized request bodies itself (the browser's limit can be bypassed)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from flowbuilder.trust.bodylimit import BodyLimit


async def echo(request: Request) -> JSONResponse:
    return JSONResponse({"received": len(await request.body())})


def client(limit: int) -> TestClient:
    app = Starlette(routes=[Route("/upload", echo, methods=["POST"])])
    return TestClient(BodyLimit(app, max_bytes=limit))


def test_a_body_within_the_limit_passes() -> None:
    response = client(1000).post("/upload", content=b"x" * 1000)
    assert response.status_code == 200 and response.json() == {"received": 1000}


def test_a_declared_oversized_body_is_refused_before_reading() -> None:
    response = client(1000).post("/upload", content=b"x" * 5000)
    assert response.status_code == 413 and "over" in response.json()["error"]


def test_a_chunked_body_is_counted_and_cut() -> None:
    def chunks():
        for _ in range(10):
            yield b"y" * 400

    response = client(1000).post("/upload", content=chunks())
    assert response.status_code == 413
