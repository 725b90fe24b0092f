"""A loopback HTTP server that speaks Qdrant's REST API, for the real ``qdrant-client`` in server mode.

Requests are parsed with the SDK's own REST models (the wire format the client sends) and answered by an
in-memory Qdrant engine (qdrant-client's local mode), so dense, sparse (IDF) and RRF results are real
Qdrant arithmetic. Unlike the other fakes it depends on the provider package: re-implementing Qdrant's
query engine in a fake would test the fake. It records every request and checks the ``api-key`` header
when ``api_key`` is set.

::

    with FakeQdrant(api_key="qk-test") as server:
        client = QdrantClient(url=server.url, api_key="qk-test")
"""

from __future__ import annotations

import re
import threading
from typing import Any

from tests.fakes.http import JSONHandler, LoopbackServer
from tests.fakes.llm_server import RecordedRequest

_COLLECTION = re.compile(r"^/collections/([^/?]+)(/[^?]*)?(?:\?.*)?$")


class FakeQdrant(LoopbackServer):
    def __init__(self, api_key: str = "") -> None:
        super().__init__()
        from qdrant_client import QdrantClient

        self.api_key = api_key
        self.engine = QdrantClient(":memory:")
        self.requests: list[RecordedRequest] = []
        self.lock = threading.Lock()

    def handler_class(self) -> type[JSONHandler]:
        return _Handler

    def answer(self, method: str, path: str, body: Any) -> Any:
        """The ``result`` of one REST call (raises KeyError for an unknown route)."""
        from qdrant_client import models

        engine = self.engine
        if method == "GET" and path == "/collections":
            names = [c.name for c in engine.get_collections().collections]
            return {"collections": [{"name": n} for n in names]}
        match = _COLLECTION.match(path)
        if not match:
            raise KeyError(path)
        name, rest = match.group(1), match.group(2) or ""
        route = (method, rest)
        if route == ("GET", "/exists"):
            return {"exists": engine.collection_exists(name)}
        if route == ("PUT", ""):
            spec = models.CreateCollection.model_validate(body)
            return engine.create_collection(
                name,
                vectors_config=spec.vectors,
                sparse_vectors_config=spec.sparse_vectors,
                metadata=spec.metadata,
            )
        if route == ("GET", ""):
            return engine.get_collection(name)
        if route == ("PUT", "/points"):
            points = models.PointsList.model_validate(body).points
            return engine.upsert(name, points=points)
        if route == ("POST", "/points"):
            request = models.PointRequest.model_validate(body)
            return engine.retrieve(
                name,
                ids=request.ids,
                with_payload=request.with_payload if request.with_payload is not None else True,
                with_vectors=request.with_vector or False,
            )
        if route == ("POST", "/points/scroll"):
            request = models.ScrollRequest.model_validate(body)
            points, offset = engine.scroll(
                name,
                scroll_filter=request.filter,
                limit=request.limit or 10,
                offset=request.offset,
                with_payload=request.with_payload if request.with_payload is not None else True,
                with_vectors=request.with_vector or False,
            )
            return {"points": points, "next_page_offset": offset}
        if route == ("POST", "/points/count"):
            request = models.CountRequest.model_validate(body)
            return engine.count(name, count_filter=request.filter, exact=request.exact is not False)
        if route == ("POST", "/points/query"):
            request = models.QueryRequest.model_validate(body)
            query = request.query.nearest if isinstance(request.query, models.NearestQuery) else request.query
            prefetch = request.prefetch
            if isinstance(prefetch, list):
                prefetch = [
                    p.model_copy(update={"query": p.query.nearest}) if isinstance(p.query, models.NearestQuery) else p
                    for p in prefetch
                ]
            return engine.query_points(
                name,
                query=query,
                using=request.using,
                prefetch=prefetch,
                query_filter=request.filter,
                limit=request.limit or 10,
                with_payload=request.with_payload if request.with_payload is not None else False,
            )
        if route == ("POST", "/points/delete"):
            selector = models.PointIdsList.model_validate(body)
            return engine.delete(name, points_selector=selector)
        raise KeyError(f"{method} {path}")


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


class _Handler(JSONHandler):
    fake: FakeQdrant

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        body = self._read_json()
        headers = self._lower_case_headers()
        fake.requests.append(RecordedRequest(method, self.path, headers, body))
        if fake.api_key and headers.get("api-key") != fake.api_key:
            self._send_json(401, {"status": {"error": "Unauthorized: invalid api-key"}, "time": 0})
            return
        path = self.path.split("?", 1)[0]
        try:
            with fake.lock:
                result = fake.answer(method, path, body)
        except KeyError as exc:
            self._send_json(404, {"status": {"error": f"Not found: {exc}"}, "time": 0})
            return
        except Exception as exc:  # what the engine rejects, the server reports as a bad request
            self._send_json(400, {"status": {"error": f"Bad request: {exc}"}, "time": 0})
            return
        self._send_json(200, {"result": _dump(result), "status": "ok", "time": 0.0})
