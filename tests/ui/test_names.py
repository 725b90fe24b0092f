"""Names people know: display names in the palette (type id small), search over names, descriptions and
the names n8n and LangFlow use, and a readable name on a dropped node."""

from __future__ import annotations

from collections.abc import Callable

from nicegui.testing import User

from flowbuilder.registry import default_registry
from flowbuilder.ui.canvas import FlowCanvas
from flowbuilder.ui.names import display_name, matches
from flowbuilder.ui.state import EditorState

from .test_user_journeys import canvas_of, open_builder


def found(query: str) -> set[str]:
    return {cls.type_name for cls in default_registry() if matches(cls, query)}


def test_search_knows_n8n_and_langflow_names() -> None:
    assert {"retriever.vector", "vectorstore.chroma", "vectorstore.pinecone"} <= found("vector store")
    assert "retriever.vector" in found("Vector Store Retriever")
    assert {"splitter.recursive", "splitter.character", "splitter.markdown"} <= found("Split Text")
    assert {"llm.openai", "llm.groq", "llm.ollama"} <= found("LLM")
    assert {"chat.input", "chat.output", "llm.ollama"} <= found("chat")
    assert "loader.file" in found("default data loader") and "embedder.openai" in found("embeddings openai")
    assert not found("vector splitter zebra")  # every word must match somewhere


def test_every_built_in_has_a_readable_name_and_drops_get_unique_names() -> None:
    registry = default_registry()
    for cls in registry:
        name = display_name(cls)
        assert name and "." not in name and name != cls.type_name, cls.type_name
    state = EditorState(registry=registry)
    first = state.add_node("retriever.vector")
    second = state.add_node("retriever.vector")
    assert state.flow.node(first).label == "Vector Store Retriever"
    assert state.flow.node(second).label == "Vector Store Retriever 2"


async def test_palette_shows_names_and_filters_by_alias(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    await user.should_see("Vector Store Retriever")
    await user.should_see("retriever.vector")  # the type id, in small print
    page.palette.filter("Split Text")
    visible = {t for t, item in page.palette.items.items() if item.visible}
    assert {"splitter.recursive", "splitter.character"} <= visible and "llm.openai" not in visible
    page.palette.filter("chat")
    visible = {t for t, item in page.palette.items.items() if item.visible}
    assert {"chat.input", "chat.output", "llm.ollama", "agent.tools"} <= visible
    user.find(FlowCanvas).trigger("drop_node", {"type": "llm.ollama", "x": 0, "y": 300})
    node = next(n for n in canvas_of(user).props["nodes"] if n["id"] == "llm-ollama")
    assert node["data"]["label"] == "Ollama Chat Model"
