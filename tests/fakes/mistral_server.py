"""A loopback server that speaks Mistral AI's wire format, for the official ``mistralai`` SDK.

Mistral's chat route shares the Chat Completions shapes that :class:`FakeLLMServer` already serves
under ``/v1``; what differs is said here: an embeddings response carries an ``id``; errors are
``{"object": "error", "message", "type", "code"}`` (401 is ``{"detail": "Unauthorized"}``); a stream
sends each tool call whole in one chunk and its usage on the last chunk; the API key is checked.

::

    with FakeMistralServer(embedding_dim=8, api_key="mk-test") as server:
        Mistral(api_key="mk-test", server_url=server.mistral_url)
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.http import JSONHandler
from tests.fakes.llm_server import DEFAULT_MODELS, FakeLLMServer, _Handler, _split_tokens, _word_count, fake_embedding

MISTRAL_MODELS = ("mistral-embed", "mistral-small-latest", "mistral-large-latest", "open-mistral-nemo")


class FakeMistralServer(FakeLLMServer):
    def __init__(self, *, api_key: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("models", (*DEFAULT_MODELS, *MISTRAL_MODELS))
        super().__init__(**kwargs)
        self.api_key = api_key
        """When set, requests without ``Authorization: Bearer <api_key>`` get Mistral's 401."""

    def handler_class(self) -> type[JSONHandler]:
        return _MistralHandler

    @property
    def mistral_url(self) -> str:
        """The server root (the SDK appends ``/v1/...``)."""
        return self.openai_base_url.removesuffix("/v1")


class _MistralHandler(_Handler):
    fake: FakeMistralServer
    server_version = "FakeMistral/1.0"

    def _route(self, method: str, path: str, body: dict[str, Any]) -> None:
        expected = f"Bearer {self.fake.api_key}"
        if self.fake.api_key and self.headers.get("authorization") != expected:
            self._send_json(401, {"detail": "Unauthorized"})
            return
        super()._route(method, path, body)

    def _openai_chat(self, body: dict[str, Any]) -> None:
        if not body.get("stream"):
            super()._openai_chat(body)
            return
        # Mistral streams each tool call whole in one chunk and puts usage on the last chunk.
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=False):
            return
        reply = self.fake._next_reply(body)
        ident = f"cmpl-fake{len(self.fake.requests)}"

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [choice],
            } | extra

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in _split_tokens(reply.content)]
        if reply.tool_calls:
            calls = [
                {"id": c.id or f"call{i}", "type": "function", "index": i,
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for i, c in enumerate(reply.tool_calls)
            ]  # fmt: skip
            events.append(chunk({"tool_calls": calls}))
        prompt, completion = _word_count(body.get("messages")), _word_count(reply.content)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        events.append(chunk({"content": ""}, "tool_calls" if reply.tool_calls else "stop", usage=usage))
        self._start_stream("text/event-stream")
        for event in events:
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")

    def _openai_embeddings(self, body: dict[str, Any]) -> None:
        # Mistral's EmbeddingResponse requires an id; vectors are floats (no base64, no dimensions).
        model = str(body.get("model", ""))
        if self._unknown_model(model, ollama=False):
            return
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw or []]
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t, self.fake.embedding_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        usage = {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}
        self._send_json(
            200,
            {"id": f"embd-{len(self.fake.requests)}", "object": "list", "data": data, "model": model, "usage": usage},
        )

    def _send_error(self, path: str, status: int, message: str, retry_after: str | None = None) -> None:
        headers = {"retry-after-ms": "10", "retry-after": "0"} if status == 429 else {}
        if retry_after is not None:
            headers = {"retry-after": retry_after}
        kind = {404: "invalid_model", 429: "rate_limited"}.get(status, "api_error")
        error = {"object": "error", "message": message, "type": kind, "param": None, "code": "1"}
        self._send_json(status, error, headers)
