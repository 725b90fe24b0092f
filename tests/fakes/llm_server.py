"""A loopback HTTP server that speaks the OpenAI, Groq and Ollama wire formats.

The real provider SDKs are pointed at it, so tests exercise the SDKs' own request building, streaming
parsers and error classes. Nothing here imports a provider SDK.

::

    with FakeLLMServer(embedding_dim=8) as server:
        server.reply("Hello!")                                   # next chat reply
        server.reply_tool_call("search_documents", {"query": "login"})
        server.fail("chat", 429, times=1)                        # one 429, then OK
        server.delay("chat", 2.0)                                # for client timeouts
        client = openai.OpenAI(api_key="sk-test", base_url=server.openai_base_url)
        ...
        server.requests[-1].body["messages"]

Base URLs: ``server.openai_base_url`` (``.../v1``), ``server.groq_base_url`` (the root; the groq SDK adds
``/openai/v1``), ``server.ollama_host`` (the root).

Routes: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models`` (and the same under
``/openai/v1``); ``POST /api/chat``, ``POST /api/embed``, ``POST /api/embeddings``, ``GET /api/tags``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.http import JSONHandler, LoopbackServer
from tests.ports import reserve_port

DEFAULT_MODELS = (
    "gpt-4o-mini",
    "gpt-4o",
    "text-embedding-3-small",
    "llama-3.1-8b-instant",
    "llama3.2",
    "llama3.2:latest",
    "nomic-embed-text",
    "nomic-embed-text:latest",
)

ROUTE_GROUPS: dict[str, tuple[str, ...]] = {
    "chat": ("/v1/chat/completions", "/openai/v1/chat/completions", "/api/chat"),
    "embeddings": ("/v1/embeddings", "/openai/v1/embeddings", "/api/embed", "/api/embeddings"),
    "models": ("/v1/models", "/openai/v1/models", "/api/tags"),
    "openai": ("/v1/chat/completions", "/v1/embeddings", "/v1/models"),
    "groq": ("/openai/v1/chat/completions", "/openai/v1/embeddings", "/openai/v1/models"),
    "ollama": ("/api/chat", "/api/embed", "/api/embeddings", "/api/tags"),
}
"""Names accepted wherever a route is expected, besides an exact path and ``"*"``."""


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass
class Reply:
    """One scripted chat reply: text, tool calls, or both."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any
    """The parsed JSON body, or None."""

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class _Failure:
    routes: tuple[str, ...]
    status: int
    times: int | None
    message: str
    retry_after: str | None = None
    after: int = 0


@dataclass
class _Delay:
    routes: tuple[str, ...]
    seconds: float
    times: int | None


Responder = Callable[[dict[str, Any]], Reply]


def fake_embedding(text: str, dimension: int) -> list[float]:
    """A deterministic unit vector seeded by the text's hash: the same text always gets the same vector."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    rng = random.Random(seed)
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on and no other test process takes (connection-refused tests,
    servers a test starts on a port it names): :func:`tests.ports.reserve_port`."""
    return reserve_port()


def _split_tokens(text: str) -> list[str]:
    """Word-sized pieces that join back to exactly ``text`` (how a model streams)."""
    pieces: list[str] = []
    current = ""
    for char in text:
        if char == " " and current.strip():
            pieces.append(current)
            current = ""
        current += char
    if current:
        pieces.append(current)
    return pieces


def _word_count(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_word_count(item) for item in value)
    if isinstance(value, dict):
        return _word_count(value.get("content"))
    return 0


class FakeLLMServer(LoopbackServer):
    """OpenAI, Groq and Ollama on one loopback port, with scripted replies and failure injection."""

    def __init__(
        self,
        *,
        embedding_dim: int = 16,
        models: tuple[str, ...] | list[str] = DEFAULT_MODELS,
        strict_models: bool = False,
    ) -> None:
        """:param strict_models: answer 404 (model not found) for a model outside ``models``."""
        super().__init__()
        self.embedding_dim = embedding_dim
        self.models = list(models)
        self.strict_models = strict_models
        self.requests: list[RecordedRequest] = []
        self.responder: Responder | None = None
        """When set and no scripted reply is queued, called with the request body to make the reply."""
        self._replies: deque[Reply] = deque()
        self._failures: list[_Failure] = []
        self._delays: list[_Delay] = []
        self._cut_after: int | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._call_counter = 0
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests this server was answering at the same moment (concurrency seen)."""
        self.failed_at: list[float] = []
        """``time.monotonic()`` of every failure answered (to check a client waited as told)."""
        self.answered_at: list[float] = []
        self.received_at: list[float] = []

    # ----- lifecycle
    def handler_class(self) -> type[JSONHandler]:
        return _Handler

    def stop(self) -> None:
        self._stopping.set()  # wakes delayed requests so shutdown does not wait for them
        super().stop()

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def groq_base_url(self) -> str:
        return self.url

    @property
    def ollama_host(self) -> str:
        return self.url

    # ----- scripting
    def reply(self, content: str) -> None:
        """Queue a plain text reply for the next chat request."""
        with self._lock:
            self._replies.append(Reply(content=content))

    def reply_tool_call(self, name: str, arguments: dict[str, Any], content: str = "") -> None:
        """Queue a reply that asks for one tool call."""
        self.reply_tool_calls([ToolCall(name, arguments)], content)

    def reply_tool_calls(self, calls: list[ToolCall], content: str = "") -> None:
        with self._lock:
            self._replies.append(Reply(content=content, tool_calls=list(calls)))

    def fail(
        self,
        route: str,
        status: int,
        *,
        times: int | None = None,
        message: str = "",
        retry_after: str | None = None,
        after: int = 0,
    ) -> None:
        """Answer ``status`` on ``route`` (a path, a group name such as ``"chat"`` or ``"*"``);
        ``times`` failures and then normal answers, or forever when None. ``retry_after`` is sent as the
        ``Retry-After`` header (alone; by default a 429 carries a 10 ms ``retry-after-ms``); the first
        ``after`` requests on the route are answered normally."""
        default = {401: "Invalid API Key", 404: "Not found", 429: "Rate limit reached", 500: "Internal server error"}
        with self._lock:
            self._failures.append(
                _Failure(
                    self._routes(route),
                    status,
                    times,
                    message or default.get(status, f"HTTP {status}"),
                    retry_after,
                    after,
                )
            )

    def cut_stream(self, after_events: int) -> None:
        """End the next streamed reply cleanly after ``after_events`` events: no finish reason, no [DONE],
        no final ``done`` line (a proxy or a dropped connection does this)."""
        self._cut_after = after_events

    def _take_cut(self) -> int | None:
        cut, self._cut_after = self._cut_after, None
        return cut

    def delay(self, route: str, seconds: float, *, times: int | None = None) -> None:
        """Wait ``seconds`` before answering on ``route`` (to make a client time out)."""
        with self._lock:
            self._delays.append(_Delay(self._routes(route), seconds, times))

    def clear(self) -> None:
        """Forget recorded requests, queued replies, failures and delays."""
        with self._lock:
            self.requests.clear()
            self._replies.clear()
            self._failures.clear()
            self._delays.clear()

    def requests_to(self, route: str) -> list[RecordedRequest]:
        routes = self._routes(route)
        return [r for r in self.requests if "*" in routes or r.path in routes]

    @staticmethod
    def _routes(route: str) -> tuple[str, ...]:
        return ROUTE_GROUPS.get(route, (route,))

    # ----- used by the handler
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _take_failure(self, path: str) -> _Failure | None:
        with self._lock:
            for failure in self._failures:
                if "*" in failure.routes or path in failure.routes:
                    if failure.after > 0:
                        failure.after -= 1
                        continue
                    if failure.times is None:
                        return failure
                    if failure.times > 0:
                        failure.times -= 1
                        return failure
        return None

    def _take_delay(self, path: str) -> float:
        with self._lock:
            for delay in self._delays:
                if "*" in delay.routes or path in delay.routes:
                    if delay.times is None:
                        return delay.seconds
                    if delay.times > 0:
                        delay.times -= 1
                        return delay.seconds
        return 0.0

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            if self.responder is not None:
                reply = self.responder(body)
            else:
                reply = Reply(content=f"Fake reply to: {_last_user_text(body)}")
        for call in reply.tool_calls:
            if not call.id:
                with self._lock:
                    self._call_counter += 1
                    call.id = f"call_{self._call_counter}"
        return reply

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class _Handler(JSONHandler):
    fake: FakeLLMServer
    server_version = "FakeLLM/1.0"

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        body = self._read_json()
        self.fake._record(RecordedRequest(method, path, self._lower_case_headers(), body))
        with self.fake._lock:
            self.fake.received_at.append(time.monotonic())
            self.fake.in_flight += 1
            self.fake.max_in_flight = max(self.fake.max_in_flight, self.fake.in_flight)
        try:
            # counted as in flight while it is worked on (the delay), not while the answer is written:
            # a client that sends one request at a time must be seen doing so
            try:
                seconds = self.fake._take_delay(path)
                if seconds:
                    self.fake._wait(seconds)
                failure = self.fake._take_failure(path)
            finally:
                with self.fake._lock:
                    self.fake.in_flight -= 1
            if failure is not None:
                self.fake.failed_at.append(time.monotonic())
                self._send_error(path, failure.status, failure.message, failure.retry_after)
                return
            self.fake.answered_at.append(time.monotonic())
            self._route(method, path, body if isinstance(body, dict) else {})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def _route(self, method: str, path: str, body: dict[str, Any]) -> None:
        openai_prefix = "/openai/v1" if path.startswith("/openai/v1/") else "/v1"
        routes: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
            ("POST", f"{openai_prefix}/chat/completions"): self._openai_chat,
            ("POST", f"{openai_prefix}/embeddings"): self._openai_embeddings,
            ("GET", f"{openai_prefix}/models"): self._openai_models,
            ("POST", "/api/chat"): self._ollama_chat,
            ("POST", "/api/embed"): self._ollama_embed,
            ("POST", "/api/embeddings"): self._ollama_embeddings_legacy,
            ("GET", "/api/tags"): self._ollama_tags,
        }
        handler = routes.get((method, path))
        if handler is None:
            self._send_error(path, 404, f"no route {method} {path}")
            return
        handler(body)

    def _send_error(self, path: str, status: int, message: str, retry_after: str | None = None) -> None:
        # Retry hints small enough that SDK retries take milliseconds, not seconds.
        headers = {"retry-after-ms": "10", "retry-after": "0"} if status == 429 else {}
        if retry_after is not None:
            headers = {"retry-after": retry_after}
        if path.startswith("/api/"):
            self._send_json(status, {"error": message}, headers)
            return
        kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}
        code = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
        error = {"message": message, "type": kind.get(status, "server_error"), "param": None, "code": code.get(status)}
        self._send_json(status, {"error": error}, headers)

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def _unknown_model(self, model: str, ollama: bool) -> bool:
        if not self.fake.strict_models or model in self.fake.models:
            return False
        if ollama:
            self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
        else:
            message = f"The model `{model}` does not exist or you do not have access to it."
            self._send_error("/v1", 404, message)
        return True

    # ----- OpenAI / Groq
    def _openai_chat(self, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=False):
            return
        reply = self.fake._next_reply(body)
        created = int(time.time())
        ident = f"chatcmpl-fake{len(self.fake.requests)}"
        usage = {
            "prompt_tokens": _word_count(body.get("messages")),
            "completion_tokens": _word_count(reply.content),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if reply.tool_calls else "stop"
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in reply.tool_calls
                ]
            self._send_json(
                200,
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
            return

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in _split_tokens(reply.content)]
        for index, call in enumerate(reply.tool_calls):
            head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
            events.append(chunk({"tool_calls": [head]}))
            arguments = json.dumps(call.arguments)
            middle = len(arguments) // 2
            for part in (arguments[:middle], arguments[middle:]):
                events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage_chunk = chunk({})
            usage_chunk.update(choices=[], usage=usage)
            events.append(usage_chunk)
        self._start_stream("text/event-stream")
        cut = self.fake._take_cut()
        for event in events[:cut]:
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        if cut is None:
            self._write_chunk(b"data: [DONE]\n\n")

    def _openai_embeddings(self, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=False):
            return
        texts = _inputs(body.get("input"))
        dimension = int(body.get("dimensions") or self.fake.embedding_dim)
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, dimension)
            embedding: Any = vector
            if body.get("encoding_format") == "base64":
                embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = _word_count(texts)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _openai_models(self, body: dict[str, Any]) -> None:
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in self.fake.models]
        self._send_json(200, {"object": "list", "data": data})

    # ----- Ollama
    def _ollama_chat(self, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=True):
            return
        reply = self.fake._next_reply(body)
        created_at = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        tool_calls = [{"function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls]
        final_stats = {
            "done_reason": "stop",
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": _word_count(body.get("messages")),
            "prompt_eval_duration": 100,
            "eval_count": _word_count(reply.content),
            "eval_duration": 100,
        }
        # Ollama streams unless told otherwise; the python client sends "stream": false for plain chat().
        if body.get("stream") is False:
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if tool_calls:
                message["tool_calls"] = tool_calls
            self._send_json(
                200, {"model": model, "created_at": created_at, "message": message, "done": True, **final_stats}
            )
            return
        lines: list[dict[str, Any]] = []
        for piece in _split_tokens(reply.content):
            message = {"role": "assistant", "content": piece}
            lines.append({"model": model, "created_at": created_at, "message": message, "done": False})
        if tool_calls:
            lines.append(
                {
                    "model": model,
                    "created_at": created_at,
                    "message": {"role": "assistant", "content": "", "tool_calls": tool_calls},
                    "done": False,
                }
            )
        lines.append(
            {
                "model": model,
                "created_at": created_at,
                "message": {"role": "assistant", "content": ""},
                "done": True,
                **final_stats,
            }
        )
        self._start_stream("application/x-ndjson")
        for line in lines[: self.fake._take_cut()]:
            self._write_chunk((json.dumps(line) + "\n").encode())

    def _ollama_embed(self, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=True):
            return
        texts = _inputs(body.get("input"))
        dimension = int(body.get("dimensions") or self.fake.embedding_dim)
        self._send_json(
            200,
            {
                "model": model,
                "embeddings": [fake_embedding(t, dimension) for t in texts],
                "total_duration": 1000,
                "load_duration": 10,
                "prompt_eval_count": _word_count(texts),
            },
        )

    def _ollama_embeddings_legacy(self, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=True):
            return
        self._send_json(200, {"embedding": fake_embedding(str(body.get("prompt", "")), self.fake.embedding_dim)})

    def _ollama_tags(self, body: dict[str, Any]) -> None:
        models = [
            {
                "name": name if ":" in name else f"{name}:latest",
                "model": name if ":" in name else f"{name}:latest",
                "modified_at": "2025-01-01T00:00:00Z",
                "size": 1000,
                "digest": hashlib.sha256(name.encode()).hexdigest(),
                "details": {"format": "gguf", "family": "llama", "parameter_size": "1B", "quantization_level": "Q4_0"},
            }
            for name in self.fake.models
        ]
        self._send_json(200, {"models": models})


def _inputs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    return []


def running_server(**kwargs: Any) -> Iterator[FakeLLMServer]:
    """Body of a pytest fixture: ``yield from running_server(embedding_dim=8)``."""
    server = FakeLLMServer(**kwargs).start()
    try:
        yield server
    finally:
        server.stop()
