"""A loopback HTTP server that speaks Pinecone's REST API (version 2026-07), for the real ``pinecone`` SDK.

It keeps indexes and vectors in memory and computes real cosine / dot-product / euclidean scores, so
retrieval assertions mean something. It records every request (headers in lower case, parsed JSON) and
can inject failures.

::

    with FakePinecone() as server:
        server.create_index("docs", dimension=384)            # or through the SDK: pc.indexes.create(...)
        pc = pinecone.Pinecone(api_key="pk-test", host=server.url)     # control plane
        index = pc.Index(host=server.url)                               # data plane (every index on one host)
        server.fail("/query", 429, times=1)
        server.requests[-1].headers["api-key"]

One host serves the control plane (``/indexes``) and the data plane; the data plane routes act on the
index named by ``server.data_index`` (the last created, or set it). ``api_key`` (default ``pk-test``) is
checked on every request: a wrong key gets 401 like the real service.
"""

from __future__ import annotations

import math
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http import JSONHandler, LoopbackServer

API_VERSION = "2026-07"


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeIndex:
    name: str
    dimension: int
    metric: str = "cosine"
    namespaces: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """namespace -> id -> {"id", "values", "metadata"}"""


@dataclass
class _Failure:
    path: str
    status: int
    times: int | None


def _score(metric: str, a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    if metric == "dotproduct":
        return dot
    if metric == "euclidean":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def matches_filter(metadata: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """Pinecone's metadata filter language: $eq $ne $gt $gte $lt $lte $in $nin $exists, $and / $or."""
    if not flt:
        return True
    for key, condition in flt.items():
        if key == "$and":
            if not all(matches_filter(metadata, part) for part in condition):
                return False
            continue
        if key == "$or":
            if not any(matches_filter(metadata, part) for part in condition):
                return False
            continue
        conditions = condition if isinstance(condition, dict) else {"$eq": condition}
        for op, expected in conditions.items():
            if not _compare(metadata, key, op, expected):
                return False
    return True


def _compare(metadata: dict[str, Any], key: str, op: str, expected: Any) -> bool:
    present = key in metadata
    value = metadata.get(key)
    values = value if isinstance(value, list) else [value]
    if op == "$exists":
        return present == bool(expected)
    if op == "$eq":
        return present and expected in values
    if op == "$ne":
        return not present or expected not in values
    if op == "$in":
        return present and any(v in expected for v in values)
    if op == "$nin":
        return not present or all(v not in expected for v in values)
    if not present or not isinstance(value, int | float):
        return False
    return {
        "$gt": value > expected,
        "$gte": value >= expected,
        "$lt": value < expected,
        "$lte": value <= expected,
    }.get(op, False)


class FakePinecone(LoopbackServer):
    """Pinecone's control and data plane on one loopback port."""

    def __init__(self, api_key: str = "pk-test") -> None:
        super().__init__()
        self.api_key = api_key
        self.indexes: dict[str, FakeIndex] = {}
        self.data_index: str | None = None
        self.requests: list[RecordedRequest] = []
        self._failures: list[_Failure] = []
        self._lock = threading.Lock()

    def handler_class(self) -> type[JSONHandler]:
        return _Handler

    # ----- scripting
    def create_index(self, name: str, dimension: int, metric: str = "cosine") -> FakeIndex:
        with self._lock:
            index = self.indexes[name] = FakeIndex(name, dimension, metric)
            self.data_index = name
        return index

    def fail(self, path: str, status: int, *, times: int | None = None) -> None:
        """Answer ``status`` on ``path`` (exact, or ``"*"``) ``times`` times, or forever when None."""
        with self._lock:
            self._failures.append(_Failure(path, status, times))

    def clear_failures(self) -> None:
        with self._lock:
            self._failures.clear()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def vector_count(self, namespace: str = "") -> int:
        index = self.indexes[self.data_index or ""]
        return len(index.namespaces.get(namespace, {}))

    # ----- internals
    def _take_failure(self, path: str) -> int | None:
        with self._lock:
            for failure in self._failures:
                if failure.path in (path, "*") and (failure.times is None or failure.times > 0):
                    if failure.times is not None:
                        failure.times -= 1
                    return failure.status
        return None

    def index_model(self, index: FakeIndex) -> dict[str, Any]:
        return {
            "name": index.name,
            "status": {"ready": True, "state": "Ready"},
            "schema": {
                "fields": {"embedding": {"type": "dense_vector", "dimension": index.dimension, "metric": index.metric}}
            },
            "deployment": {"deployment_type": "managed", "cloud": "aws", "region": "us-east-1"},
            "deletion_protection": "disabled",
            "host": self.url,
        }


_ERRORS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
}
_LIST_PAGE = 100  # Pinecone's default page of GET /vectors/list (ids in sorted order)
_MAX_DELETE_IDS = 1000
_MESSAGES = {401: "Invalid API Key", 429: "Too many requests", 500: "boom"}


class _Handler(JSONHandler):
    fake: FakePinecone
    protocol_version = "HTTP/1.1"

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        parsed = urllib.parse.urlsplit(self.path)
        body = self._read_json()
        headers = self._lower_case_headers()
        path = parsed.path
        fake.requests.append(RecordedRequest(method, path, urllib.parse.parse_qs(parsed.query), headers, body))
        if headers.get("api-key") != fake.api_key:
            self._error(401)
            return
        status = fake._take_failure(path)
        if status is not None:
            self._error(status)
            return
        try:
            self._route(method, path, urllib.parse.parse_qs(parsed.query), body or {})
        except _HttpError as exc:
            self._error(exc.status, exc.message)

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> None:
        fake = self.fake
        if path == "/indexes" and method == "GET":
            self._send_json(200, {"indexes": [fake.index_model(i) for i in fake.indexes.values()]})
        elif path == "/indexes" and method == "POST":
            embedding = body.get("schema", {}).get("fields", {}).get("embedding", {})
            if body.get("name") in fake.indexes:
                raise _HttpError(409, f"Resource {body.get('name')} already exists")
            dimension = embedding.get("dimension") or body.get("dimension")
            if not isinstance(dimension, int):
                raise _HttpError(400, "dimension must be an integer")
            index = fake.create_index(body["name"], dimension, embedding.get("metric") or body.get("metric", "cosine"))
            self._send_json(201, fake.index_model(index))
        elif path.startswith("/indexes/"):
            name = path.split("/", 2)[2]
            index = fake.indexes.get(name)
            if index is None:
                raise _HttpError(404, f"Resource {name} not found")
            if method == "DELETE":
                del fake.indexes[name]
                self._send_json(202, {})
            else:
                self._send_json(200, fake.index_model(index))
        elif path == "/vectors/upsert":
            self._upsert(body)
        elif path == "/query":
            self._query(body)
        elif path == "/describe_index_stats":
            index = self._index()
            namespaces = {ns: {"vectorCount": len(v)} for ns, v in index.namespaces.items() if v}
            total = sum(n["vectorCount"] for n in namespaces.values())
            self._send_json(200, {"namespaces": namespaces, "dimension": index.dimension, "totalVectorCount": total})
        elif path == "/vectors/fetch":
            index = self._index()
            namespace = (query.get("namespace") or [""])[0]
            stored = index.namespaces.get(namespace, {})
            found = {i: stored[i] for i in query.get("ids", []) if i in stored}
            self._send_json(200, {"vectors": found, "namespace": namespace})
        elif path == "/vectors/delete":
            self._delete(body)
        elif path == "/vectors/list" and method == "GET":
            self._list(query)
        else:
            raise _HttpError(404, f"no route {method} {path}")

    def _index(self) -> FakeIndex:
        fake = self.fake
        if fake.data_index is None or fake.data_index not in fake.indexes:
            raise _HttpError(404, "no index is served on this host")
        return fake.indexes[fake.data_index]

    def _delete(self, body: dict[str, Any]) -> None:
        """By ``ids`` (at most 1000), by metadata ``filter``, or ``deleteAll``: exactly one of them."""
        index = self._index()
        stored = index.namespaces.get(body.get("namespace", ""), {})
        ids, flt, delete_all = body.get("ids"), body.get("filter"), bool(body.get("deleteAll"))
        if sum((ids is not None, flt is not None, delete_all)) != 1:
            raise _HttpError(400, "Exactly one of ids, filter or deleteAll must be provided")
        if ids is not None:
            if len(ids) > _MAX_DELETE_IDS:
                raise _HttpError(400, f"Delete request exceeds the maximum of {_MAX_DELETE_IDS} ids")
            for vector_id in ids:
                stored.pop(vector_id, None)
        elif delete_all:
            stored.clear()
        else:
            for vector_id in [i for i, item in stored.items() if matches_filter(item["metadata"], flt)]:
                del stored[vector_id]
        self._send_json(200, {})

    def _list(self, query: dict[str, list[str]]) -> None:
        """``GET /vectors/list``: ids in id order, filtered by ``prefix``, paged by ``limit`` / ``paginationToken``."""
        index = self._index()
        namespace = (query.get("namespace") or [""])[0]
        prefix = (query.get("prefix") or [""])[0]
        limit = int((query.get("limit") or [str(_LIST_PAGE)])[0])
        if limit < 1:
            raise _HttpError(400, "limit must be a positive integer")
        after = (query.get("paginationToken") or [""])[0]
        ids = sorted(i for i in index.namespaces.get(namespace, {}) if i.startswith(prefix) and i > after)
        page = ids[:limit]
        payload: dict[str, Any] = {
            "vectors": [{"id": i} for i in page],
            "namespace": namespace,
            "usage": {"readUnits": 1},
        }
        if len(ids) > limit:
            payload["pagination"] = {"next": page[-1]}  # real tokens are opaque; clients only echo them
        self._send_json(200, payload)

    def _upsert(self, body: dict[str, Any]) -> None:
        index = self._index()
        vectors = body.get("vectors", [])
        for vector in vectors:
            if len(vector.get("values", [])) != index.dimension:
                raise _HttpError(
                    400,
                    f"Vector dimension {len(vector.get('values', []))} does not match the dimension of the "
                    f"index {index.dimension}",
                )
        stored = index.namespaces.setdefault(body.get("namespace", ""), {})
        for vector in vectors:
            stored[vector["id"]] = {
                "id": vector["id"],
                "values": list(vector["values"]),
                "metadata": dict(vector.get("metadata") or {}),
            }
        self._send_json(200, {"upsertedCount": len(vectors)})

    def _query(self, body: dict[str, Any]) -> None:
        index = self._index()
        vector = body.get("vector")
        if not isinstance(vector, list) or len(vector) != index.dimension:
            raise _HttpError(400, f"Query vector dimension does not match the dimension of the index {index.dimension}")
        stored = index.namespaces.get(body.get("namespace", ""), {})
        scored = [
            (_score(index.metric, vector, item["values"]), item)
            for item in stored.values()
            if matches_filter(item["metadata"], body.get("filter"))
        ]
        scored.sort(key=lambda pair: pair[0], reverse=index.metric != "euclidean")
        matches = []
        for score, item in scored[: int(body.get("topK", 10))]:
            match: dict[str, Any] = {"id": item["id"], "score": score}
            if body.get("includeMetadata"):
                match["metadata"] = item["metadata"]
            if body.get("includeValues"):
                match["values"] = item["values"]
            matches.append(match)
        self._send_json(200, {"matches": matches, "namespace": body.get("namespace", "")})

    def _error(self, status: int, message: str = "") -> None:
        self._send_json(
            status,
            {
                "error": {
                    "code": _ERRORS.get(status, "UNKNOWN"),
                    "message": message or _MESSAGES.get(status, f"HTTP {status}"),
                },
                "status": status,
            },
        )


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
