"""LangFlow's vocabulary for the mapping entries, and the LangFlow table: what no node of ours carries.

Each node type's LangFlow entries sit next to it, in its class's ``mappings["langflow"]`` (see ``adapters.py``);
:data:`LANGFLOW_TABLE` reads them from the registry after its own entries, which are the components we keep as
placeholders (what replaces them, their ``--local`` swap, their credential provider). This module holds what the
entries share (imported in the node modules as ``LF``): handle types, output shapes (:func:`out`), converters
and the port and export blocks of the stores, chat models and parsers.

``theirs`` is the component's ``data.type``; params map to template fields; ports map to input field names (edge
``targetHandle.fieldName``) and output names (``sourceHandle.name``). ``extra`` holds what an exported component
needs to look like LangFlow's own: its outputs (display name, types, method), the accepted types of each input
handle and the secret field that names a global variable. Adding a mapping = one entry on the node class (its
import, export, ports and ``--local`` swap) + one fixture in ``tests/formats/fixtures/langflow/`` (globbed by
``tests/formats/test_fixtures.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from flowbuilder.formats.adapters import (
    NO_DEFAULT,
    OFFLINE_CHAT,
    OFFLINE_EMBEDDER,
    PLACEHOLDER,
    Adapter,
    Param,
    Table,
    nonempty_str,
    offline_store,
    positive_int,
    to_bool,
    to_float,
    to_int,
    unescape,
)

MESSAGE = ("Message",)
NOTE_TYPES = ("noteNode", "note")
"""A LangFlow note: the node's ``type`` or its ``data.type``."""
OURS = "FlowbuilderNode"
"""The component our exporter writes for a type LangFlow lacks (our type and config in its metadata)."""
DATA_IN = ("Data", "JSON", "DataFrame", "Table", "Message")


def keep_separator_in(value: Any) -> str:
    return {"true": "start", "start": "start", "end": "end"}.get(str(value or "False").strip().lower(), "none")


def keep_separator_out(value: Any) -> str:
    return {"start": "Start", "end": "End"}.get(str(value), "False")


def separators(value: Any) -> list[str] | None:
    return [unescape(s) for s in value] if isinstance(value, list) and value else None


def metric_in(value: Any) -> str:
    return {"euclidean": "euclidean", "dot product": "dotproduct"}.get(str(value or "Cosine").lower(), "cosine")


def metric_out(value: Any) -> str:
    return {"euclidean": "Euclidean", "dotproduct": "Dot Product"}.get(str(value), "Cosine")


def mistral_endpoint(value: Any) -> str | None:
    url = str(value or "").rstrip("/")
    return None if url in ("", "https://api.mistral.ai/v1", "https://api.mistral.ai") else url


def api_base(value: Any) -> str | None:
    url = str(value or "").rstrip("/")
    return None if url in ("", "https://api.groq.com", "https://api.openai.com/v1") else url


def schema_fields(value: Any) -> dict[str, str] | None:
    """Structured Output's schema rows (``[{name, description, type}]``) as ``{name: description}``."""
    rows = value if isinstance(value, list) else []
    fields = {
        str(r["name"]).strip(): str(r.get("description") or "")
        for r in rows
        if isinstance(r, dict) and isinstance(r.get("name"), str) and r["name"].strip()
    }
    return fields or None


def tool_name(value: Any) -> str | None:
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", str(value or "")).strip("_")[:64]
    return name or None


def out(name: str, display: str, types: tuple[str, ...], method: str, selected: bool = True) -> dict[str, Any]:
    return {"name": name, "display": display, "types": types, "method": method, "selected": selected}


def int_param(ours: str, theirs: str, default: Any = NO_DEFAULT) -> Param:
    return Param(ours, theirs, default, to_ours=to_int, widget="IntInput", kind="int")


LLM_PARAMS = (
    Param("model", "model_name", widget="DropdownInput", to_ours=nonempty_str),
    Param("model", "model", to_ours=nonempty_str, export=False),
    Param("temperature", "temperature", to_ours=to_float, widget="SliderInput", kind="slider"),
    Param("max_tokens", "max_tokens", to_ours=positive_int, to_theirs=lambda v: v or 0, widget="IntInput", kind="int"),
    Param("system_message", "system_message", to_ours=nonempty_str, widget="MultilineInput"),
    Param("timeout", "timeout", to_ours=lambda v: to_float(v) or None, widget="IntInput", kind="int"),
    int_param("max_retries", "max_retries"),
    Param("stream", "stream", to_ours=to_bool, widget="BoolInput", kind="bool"),
)
LLM_PORTS: dict[str, Any] = {
    "inputs": {"prompt": "input_value", "system": "system_message"},
    "outputs": {"answer": "text_output", "model": "model_output"},
    "extra": {
        "outputs": (
            out("text_output", "Model Response", MESSAGE, "text_response"),
            out("model_output", "Language Model", ("LanguageModel",), "build_model", False),
        ),
        "handles": {"input_value": MESSAGE, "system_message": MESSAGE},
        "secret": "api_key",
    },
}
STORE_PORTS: dict[str, Any] = {
    "inputs": {"documents": "ingest_data", "embedder": "embedding", "query": "search_query"},
    "outputs": {"hits": "search_results", "store": "vectorstoreconnection"},
    "in_aliases": {
        "embedding_model": "embedder",
        "documents": "documents",
        "search_input": "query",
        "input_df": "documents",
    },
    "out_aliases": {
        "dataframe": "hits",
        "search_results_dataframe": "hits",
        "base_retriever": "store",
        "retrieve_data": "hits",
        "vector_store": "store",
    },
}
STORE_EXTRA = {
    "outputs": (
        out("search_results", "Search Results", ("JSON",), "search_documents"),
        out("dataframe", "Table", ("Table",), "as_dataframe", False),
        out("vectorstoreconnection", "Vector Store Connection", ("VectorStore",), "as_vector_store", False),
    ),
    "handles": {"ingest_data": ("Data", "DataFrame", "Table"), "embedding": ("Embeddings",), "search_query": MESSAGE},
}
# One LangFlow Parser is either a row labeller (a pattern over table rows) or a stringifier: the "parser"
# hook decides from the pattern and what feeds it.
PARSER: dict[str, Any] = {
    "hook": "parser",
    "display": "Parser",
    "params": (
        Param("template", "pattern", widget="MultilineInput"),
        Param("separator", "sep", "\n", to_ours=lambda v: unescape(v) if v else "\n", widget="MessageTextInput"),
    ),
    "extra": {
        "outputs": (out("parsed_text", "Parsed Text", MESSAGE, "parse_combined_text"),),
        "handles": {"input_data": ("DataFrame", "Table", "Data", "JSON")},
    },
}
EMBEDDINGS_OUT: dict[str, Any] = {"outputs": {"embedder": "embeddings"}}
# An agent's own model: our node family and the provider when none is named; the node its playground
# message comes from.
AGENT_EXTRA: dict[str, Any] = {"model": ("llm", "openai"), "message": "chat.input"}
_SAME_NAME = "it in with the same collection name"
_KB_NAME = "in a collection named after the knowledge base"
# Stores --local swaps for Chroma: component, the field naming its collection, how the swap names it.
_SWAPPED_STORES = (
    ("AstraDB", "collection_name", _SAME_NAME),
    ("AstraVectorStoreComponent", "collection_name", _SAME_NAME),
    ("AstraDBVectorStoreComponent", "collection_name", _SAME_NAME),
    ("AstraDBGraph", "collection_name", _SAME_NAME + "; no graph traversal"),
    ("AstraDBGraphVectorStoreComponent", "collection_name", _SAME_NAME + "; no graph traversal"),
    ("SupabaseVectorStoreComponent", "table_name", _SAME_NAME),
    ("PGVectorStoreComponent", "collection_name", _SAME_NAME),
    ("Knowledge", "knowledge_base", _KB_NAME),
    ("KnowledgeBase", "knowledge_base", _KB_NAME),
    ("KnowledgeRetrieval", "knowledge_base", _KB_NAME),
    ("KnowledgeIngestion", "knowledge_base", _KB_NAME),
    ("SupabaseVectorStore", "table_name", _SAME_NAME),
    ("PGVector", "collection_name", _SAME_NAME),
)


def _original_param(original: Mapping[str, Any], name: str) -> Any:
    """A template field's value in a kept component's original LangFlow JSON."""
    template = ((original.get("data") or {}).get("node") or {}).get("template") or {}
    field = template.get(name) or {}
    return field.get("value") if isinstance(field, dict) else None


# fmt: off
LANGFLOW_TABLE = Table(
    "langflow",
    [
        # -- kept: components we do not run, imported as placeholders that name what replaces them ----------
        *[Adapter(PLACEHOLDER, theirs, export=False, hits=True, replace=f"vectorstore.chroma (--local swaps {how})",
                  local=offline_store(field), provider="astra" if theirs == "AstraDB" else "")
          for theirs, field, how in _SWAPPED_STORES],
        # Self-hosted and cloud stores we do not run: --local swaps in Chroma under the index's name.
        *[Adapter(PLACEHOLDER, theirs, export=False, hits=True,
                  replace=f"vectorstore.chroma (--local swaps {_SAME_NAME})",
                  local=offline_store("index_name", "collection_name", "redis_index_name", "collection"))
          for theirs in ("FAISS", "Weaviate", "Milvus", "Redis", "MongoDBAtlasVector", "FaissVectorStoreComponent",
                         "WeaviateVectorStoreComponent", "MilvusVectorStoreComponent", "RedisVectorStoreComponent",
                         "MongoVectorStoreComponent")],
        Adapter(PLACEHOLDER, "CohereModel", also=("CohereComponent",), export=False, replace="llm.ollama (--local)",
                local=OFFLINE_CHAT, provider="cohere"),
        Adapter(PLACEHOLDER, "GoogleGenerativeAIEmbeddings", export=False, local=OFFLINE_EMBEDDER),
        # hosted chat models and embedders we have no node for: --local swaps in the offline ones
        *[Adapter(PLACEHOLDER, theirs, export=False, replace="llm.ollama (--local)", local=OFFLINE_CHAT,
                  provider=provider)
          for theirs, provider in (("AnthropicModel", "anthropic"), ("GoogleGenerativeAIModel", "google"),
                                   ("AzureOpenAIModel", "azure"), ("AmazonBedrockModel", "aws"),
                                   ("NVIDIAModelComponent", "nvidia"), ("SambaNovaModel", "sambanova"),
                                   ("NovitaModel", "novita"), ("DeepSeekModelComponent", "deepseek"),
                                   ("OpenRouterComponent", "openrouter"), ("HuggingFaceModel", "huggingface"),
                                   ("LMStudioModel", "lmstudio"), ("XAIModel", "xai"),
                                   ("PerplexityModel", "perplexity"), ("VertexAiModel", "vertex"),
                                   ("IBMwatsonxModel", "watsonx"))],
        *[Adapter(PLACEHOLDER, theirs, export=False, replace="embedder.local (--local)", local=OFFLINE_EMBEDDER)
          for theirs in ("AzureOpenAIEmbeddings", "HuggingFaceInferenceAPIEmbeddings", "NVIDIAEmbeddingsComponent",
                         "AmazonBedrockEmbeddings", "VertexAIEmbeddings", "LMStudioEmbeddingsComponent",
                         "WatsonxEmbeddingsComponent")],
    ],
    original_param=_original_param,
)
# fmt: on
