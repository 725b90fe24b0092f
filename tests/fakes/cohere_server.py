"""A loopback server that speaks Cohere's rerank and embed APIs (``POST /v2/rerank``, ``/v1/rerank``, ``/v2/embed``).

The official ``cohere`` SDK is pointed at it with ``cohere.ClientV2(api_key=..., base_url=server.url)``.
Relevance is computed, not scripted: the share of the query's words found in each document, so a
test can assert a real order. Responses have the v2 shape::

    {"id": "...", "results": [{"index": 2, "relevance_score": 0.83}, ...],
     "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}

Embeddings (``/v2/embed``) are deterministic unit vectors of the model's real dimension, seeded by the
``input_type`` and the text (a question and a passage with the same words get different vectors, as on
Cohere)::

    {"id": "...", "response_type": "embeddings_by_type", "embeddings": {"float": [[...], ...]},
     "texts": [...], "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 12}}}

Errors use Cohere's body ``{"message": "..."}`` with the HTTP status (401 bad key, 404 unknown
model, 422 bad request, 429 rate limit).
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

from tests.fakes.http import JSONHandler, LoopbackServer
from tests.fakes.llm_server import RecordedRequest, fake_embedding

MODELS = ("rerank-v3.5", "rerank-english-v3.0", "rerank-multilingual-v3.0")
EMBED_MODELS = {
    "embed-v4.0": 1536,
    "embed-english-v3.0": 1024,
    "embed-multilingual-v3.0": 1024,
    "embed-english-light-v3.0": 384,
    "embed-multilingual-light-v3.0": 384,
    "embed-english-v2.0": 4096,
}
INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")
ROUTES = (("POST", "/v2/rerank"), ("POST", "/v1/rerank"), ("POST", "/v2/embed"))
_WORD = re.compile(r"[a-z0-9]+")


def overlap_score(query: str, document: str) -> float:
    """Share of the query's distinct words that appear in the document (0-1)."""
    words = set(_WORD.findall(query.lower()))
    if not words:
        return 0.0
    found = set(_WORD.findall(document.lower()))
    return round(len(words & found) / len(words), 6)


class FakeCohereServer(LoopbackServer):
    def __init__(self, api_key: str = "co-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self._failures: list[tuple[int, int]] = []  # (status, times left)
        self._lock = threading.Lock()

    def handler_class(self) -> type[JSONHandler]:
        return _Handler

    def fail(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.append((status, times))

    def _take_failure(self) -> int | None:
        with self._lock:
            for index, (status, times) in enumerate(self._failures):
                if times > 0:
                    self._failures[index] = (status, times - 1)
                    return status
        return None


class _Handler(JSONHandler):
    fake: FakeCohereServer
    server_version = "FakeCohere/1.0"

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        body = self._read_json()
        headers = self._lower_case_headers()
        with self.fake._lock:
            self.fake.requests.append(RecordedRequest(method, path, headers, body))
        if (method, path) not in ROUTES:
            self._send_json(404, {"message": f"no route {method} {path}"})
            return
        if headers.get("authorization") != f"Bearer {self.fake.api_key}":
            self._send_json(401, {"message": "invalid api token"})
            return
        status = self.fake._take_failure()
        if status is not None:
            messages = {429: "You are using a Trial key, which is limited to 10 API calls / minute."}
            # a short retry hint keeps SDK retries in tests to milliseconds
            headers = {"retry-after-ms": "10", "retry-after": "0.01"} if status == 429 else {}
            self._send_json(status, {"message": messages.get(status, f"HTTP {status}")}, headers)
            return
        if not isinstance(body, dict):
            self._send_json(400, {"message": "invalid request: body must be JSON"})
            return
        if path == "/v2/embed":
            status, payload = embed_response(body)
            self._send_json(status, payload)
            return
        model = body.get("model")
        if model not in MODELS:
            self._send_json(404, {"message": f"model '{model}' not found, make sure the correct model ID was used"})
            return
        query, documents = body.get("query"), body.get("documents")
        if not isinstance(query, str) or not isinstance(documents, list) or not documents:
            self._send_json(422, {"message": "invalid request: query and a non-empty documents list are required"})
            return
        texts = [d if isinstance(d, str) else str(d.get("text", "")) for d in documents]
        scored = sorted(
            ((i, overlap_score(query, t)) for i, t in enumerate(texts)), key=lambda pair: (-pair[1], pair[0])
        )
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n > 0:
            scored = scored[:top_n]
        self._send_json(
            200,
            {
                "id": str(uuid.uuid4()),
                "results": [{"index": i, "relevance_score": s} for i, s in scored],
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
            },
        )


def embed_response(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Cohere's ``POST /v2/embed``: its checks (model, input_type, at most 96 texts, float only) and answer."""
    model = body.get("model")
    if model not in EMBED_MODELS:
        return 404, {"message": f"model '{model}' not found, make sure the correct model ID was used"}
    input_type = body.get("input_type")
    if input_type not in INPUT_TYPES:
        return 400, {"message": f"invalid request: input_type must be one of {', '.join(INPUT_TYPES)}"}
    texts = body.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return 400, {"message": "invalid request: texts must be a non-empty list of strings"}
    if len(texts) > 96:
        return 400, {"message": f"invalid request: total number of texts must be at most 96 - received {len(texts)}"}
    types = body.get("embedding_types") or ["float"]
    if types != ["float"]:
        return 400, {"message": "this fake only serves float embeddings"}
    dimension = EMBED_MODELS[model]
    return 200, {
        "id": str(uuid.uuid4()),
        "response_type": "embeddings_by_type",
        "embeddings": {"float": [fake_embedding(f"{input_type}:{text}", dimension) for text in texts]},
        "texts": texts,
        "meta": {
            "api_version": {"version": "2"},
            "billed_units": {"input_tokens": sum(len(_WORD.findall(t.lower())) for t in texts)},
        },
    }
