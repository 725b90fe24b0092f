"""Local HTTP servers that speak provider wire formats, for testing the real SDKs offline."""

from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Reply, ToolCall, fake_embedding, free_port

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "ToolCall", "fake_embedding", "free_port"]
