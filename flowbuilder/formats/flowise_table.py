"""The Flowise mapping table: one :class:`Adapter` per Flowise node ``name`` (see ``adapters.py``).

Each node type's Flowise entries sit next to it, in its class's ``mappings["flowise"]`` (this module's
helpers are imported there as ``FW``); the table reads them from the registry after its own entries, the
nodes we keep as placeholders.

``theirs`` is the node's ``data.name`` (``pdfFile``, ``chatOpenAI``...); params map to its ``data.inputs`` keys;
ports map to its input anchor names (the ``<id>-input-<name>-<type>`` part of an edge's ``targetHandle``) and
output names (the ``<id>-output-<name>-<types>`` part of a ``sourceHandle``; a single-output node's output is
named after the node). Flowise pulls: a chain asks its retriever with the chat question, a loader calls its
text splitter. The engine (``flowise.py``) turns that into our push wiring; the ``query`` input and ``hits``
output named on the stores below are those pull links (Flowise has no handle for them).

Adding a mapping = one entry here (its import, ports and ``--local`` swap) + one fixture in
``tests/formats/fixtures/flowise/`` (globbed by ``tests/formats/test_flowise_dify.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from flowbuilder.formats.adapters import (
    OFFLINE_CHAT,
    OFFLINE_EMBEDDER,
    PLACEHOLDER,
    Adapter,
    Local,
    Param,
    Table,
    nonempty_str,
    offline_store,
    positive_int,
    to_float,
    unescape,
)

STICKY = ("stickyNote", "stickyNoteAgentflow")
"""Flowise sticky notes (chatflows, Agentflow v2): canvas notes."""
# What Flowise leaves implicit and the engines add: the chat window's question and answer, a chain's or an
# Agentflow LLM's prompt, an Agentflow agent (named here, with the entries, so the engines name no type).
CHAT_IN = "chat.input"
CHAT_OUT = "chat.output"
PROMPT = "prompt.template"
AGENT = "agent.tools"
CREDENTIAL_PROVIDERS = {
    "openAIApi": "openai",
    "ollamaApi": "ollama",
    "cohereApi": "cohere",
    "mistralAIApi": "mistral",
    "groqApi": "groq",
    "pineconeApi": "pinecone",
    "qdrantApi": "qdrant",
    "chromaApi": "chroma",
}
"""Flowise credential names -> our credential providers (for a kept node's report line)."""


def k(value: Any) -> int | None:
    return positive_int(value)


def separators(value: Any) -> list[str] | None:
    """Flowise's separators: a JSON-ish list of strings in a text field (``["\\n\\n", "\\n"]``)."""
    if isinstance(value, list):
        items = [unescape(str(v)) for v in value]
    elif isinstance(value, str) and value.strip():
        items = [unescape(s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', value)]
    else:
        items = []
    return items or None


def template(value: Any) -> str | None:
    """A Flowise prompt: ``{var}`` placeholders as ours; Mustache-like ``{{var}}`` become ``{var}``."""
    text = nonempty_str(value)
    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", r"{\1}", text) if text else None


def service(ours: str, name: str, port: str, **kwargs: Any) -> Adapter:
    """A node with one service output, named after the node (embeddings, chat models, memories)."""
    return Adapter(ours, name, outputs={port: name}, **kwargs)


def chat(ours: str, name: str, *params: Param, **kwargs: Any) -> Adapter:
    base = (
        Param("model", "modelName", to_ours=nonempty_str),
        Param("temperature", "temperature", 0.9, to_ours=to_float),
        Param("max_tokens", "maxTokens", to_ours=positive_int),
    )
    return service(ours, name, "model", params=(*base, *params), **kwargs)


def store(ours: str, name: str, *params: Param, **kwargs: Any) -> Adapter:
    return Adapter(
        ours,
        name,
        hook="store",
        params=(Param("k", "topK", 4, to_ours=k), *params),
        inputs={"documents": "document", "embedder": "embeddings", "query": "query"},
        outputs={"store": "retriever", "hits": "hits"},
        out_aliases={"vectorStore": "store"},
        ignore=(
            "recordManager",
            "fileUpload",
            "contentPayloadKey",
            "metadataPayloadKey",
            "batchSize",
            *kwargs.pop("ignore", ()),
        ),
        **kwargs,
    )


def loader(name: str, file_input: str, more: tuple[str, ...] = (), **kwargs: Any) -> Adapter:
    """A file loader: the uploaded file's name becomes the path (the file itself stays in Flowise)."""
    return Adapter(
        "loader.file",
        name,
        hook="loader",
        outputs={"records": "document"},
        out_aliases={"text": "records"},
        extra={"file": file_input},
        ignore=(
            "textSplitter",
            "metadata",
            "omitMetadataKeys",
            "usage",
            "legacyBuild",
            "pointerName",
            file_input,
            *more,
        ),
        **kwargs,
    )


def fold(note: str) -> Adapter:
    """Export only: the node has no Flowise node after a loader; its connections are bridged (``note`` says
    what Flowise does in its place)."""
    return Adapter(imports=False, extra={"fold": True}, note=note)


def separators_text(value: Any) -> str | None:
    """Our separators as Flowise's text field: a JSON list."""
    return json.dumps(list(value)) if value else None


SILENT = ("cache", "streaming", "inputModeration", "allowImageUploads", "imageResolution", "baseOptions")
AGENT_PORTS: dict[str, Any] = {
    "hook": "agent",
    "params": (
        Param("system_message", "systemMessage", to_ours=nonempty_str),
        Param("max_steps", "maxIterations", to_ours=lambda v: min(max(positive_int(v) or 5, 1), 50)),
    ),
    "inputs": {"tools": "tools", "memory": "memory", "model": "model"},
    "ignore": (*SILENT, "chatPromptTemplate", "enableDetailedStreaming", "rephrasePrompt", "rephraseModel"),
}
# Flowise's hosted stores: searched here after --local swaps them for Chroma (collection named by the field).
_KEPT_STORES = (
    ("supabase", "tableName"),
    ("postgres", "tableName"),
    ("weaviate", "weaviateIndex"),
    ("milvus", "milvusCollection"),
    ("elasticsearch", "indexName"),
    ("redis", "indexName"),
    ("mongoDBAtlas", "collectionName"),
    ("Astra", "collectionName"),
    ("upstash", "upstashRestUrl"),
    ("zep", "zepCollection"),
    ("zepCloud", "zepCollection"),
    ("singlestore", "tableName"),
    ("openSearch", "indexName"),
    ("meilisearch", "indexUid"),
    ("couchbase", "collectionName"),
    ("vectara", "corpusId"),
    ("kendra", "indexId"),
    ("pineconeLlamaIndex", "pineconeIndex"),
    ("simpleStoreLlamaIndex", "basePath"),
    ("documentStoreVS", "selectedStore"),
)
_KEPT_CHAT = (
    "chatAnthropic", "chatGoogleGenerativeAI", "chatGoogleVertexAI", "azureChatOpenAI", "chatOpenRouter",
    "chatDeepseek", "awsChatBedrock", "chatCohere", "chatHuggingFace", "chatTogetherAI", "chatFireworks",
    "chatXAI", "chatCerebras", "chatNvidiaNIM", "chatAlibabaTongyi", "chatBaiduWenxin", "chatLitellm",
    "chatSambanova", "chatPerplexity", "chatIBMWatsonx", "chatCometAPI", "chatCloudflareWorkersAI",
    "chatAnthropic_LlamaIndex", "azureChatOpenAI_LlamaIndex", "chatOpenAI_LlamaIndex", "chatOllama_LlamaIndex",
    "chatMistral_LlamaIndex", "chatGroq_LlamaIndex", "chatTogetherAI_LlamaIndex", "openAI", "azureOpenAI",
    "huggingFaceInference_LLMs", "cohere", "replicate", "fireworks", "togetherAI", "awsBedrock",
    "googlePaLM", "chatGooglePaLM", "chatLocalAI",
)  # fmt: skip
_KEPT_EMBEDDINGS = (
    "azureOpenAIEmbeddings", "googleGenerativeAiEmbeddings", "googlevertexaiEmbeddings", "AWSBedrockEmbeddings",
    "voyageAIEmbeddings", "jinaEmbeddings", "togetherAIEmbedding", "localAIEmbeddings", "ibmEmbedding",
    "baiduQianfanEmbeddings", "openAIEmbedding_LlamaIndex", "azureOpenAIEmbeddingsLlamaIndex", "googlePaLMEmbeddings",
)  # fmt: skip
# Loaders that fetch from a service: offline, --local reads the run's file in their place.
_KEPT_LOADERS = (
    "documentStore", "plainText", "apiLoader", "notionDB", "notionFolder", "notionPage", "confluence", "github",
    "gitbook", "figma", "S3", "s3Directory", "googleDrive", "googleSheets", "jira", "airtable", "serpApi",
    "searchApi", "braveSearchApiLoader", "fireCrawl", "spiderDocumentLoaders", "apifyWebsiteContentCrawler",
    "oxylabs", "customDocumentLoader", "unstructuredFolderLoader", "vectorStoreToDocument",
)  # fmt: skip
_OFFLINE_LOADER = Local(
    "loader.file", detail=" (offline: nothing is fetched; give the documents it loaded as the run's file)"
)
EXTERNAL_MEMORY = (
    "RedisBackedChatMemory", "upstashRedisBackedChatMemory", "ZepMemory", "ZepMemoryCloud", "DynamoDBChatMemory",
    "MongoDBAtlasChatMemory", "postgresAgentMemory", "mySQLAgentMemory", "sqliteAgentMemory", "agentMemory", "mem0",
    "motorheadMemory",
)  # fmt: skip


def _original_param(original: Mapping[str, Any], name: str) -> Any:
    """An input's value in a kept node's original Flowise JSON; a Document Store (``id:name``, or a list of
    them) as its name."""
    inputs = (original.get("data") or {}).get("inputs") or {}
    value = inputs.get(name) if isinstance(inputs, dict) else None
    if isinstance(value, list) and value and isinstance(value[0], dict):
        value = value[0].get("documentStore")
    if name in ("selectedStore", "retrieverKnowledgeDocumentStores") and isinstance(value, str) and value:
        return "flowise_" + (value.split(":", 1)[-1] or value)
    return value


# fmt: off
FLOWISE_TABLE = Table(
    "flowise",
    [
        # -- loaders: the file name is kept, the file stays in Flowise; the textSplitter link is inverted
        # -- splitters (a splitter is called by its loader in Flowise: the engine wires loader -> splitter)
        # -- embeddings
        # -- vector stores: one node both fills and searches; Flowise's retriever output is our store port
        # -- retrievers over a store (our query -> hits nodes)
        # -- chat models
        # -- memory: the chat history lives in this process here
        # -- prompts, chains and agents (the engine adds the chat input and output Flowise's window stands for)
        # -- kept: known nodes we do not run; each names what replaces it
        # Agentflow v2's Retriever node and an agent's knowledge: Flowise Document Stores, searched by id.
        Adapter(PLACEHOLDER, "retrieverAgentflow", export=False, hits=True,
                local=offline_store("retrieverKnowledgeDocumentStores"),
                replace="vectorstore.chroma (a Flowise Document Store lives in Flowise: --local swaps in an embedded "
                "Chroma collection, filled from the run's file)"),
        *[Adapter(PLACEHOLDER, theirs, export=False, hits=True, local=offline_store(field),
                  replace="vectorstore.chroma (--local swaps it in with the same collection name; give the "
                  "documents as the run's file)")
          for theirs, field in _KEPT_STORES],
        *[Adapter(PLACEHOLDER, theirs, export=False, local=OFFLINE_CHAT, replace="llm.ollama (--local)")
          for theirs in _KEPT_CHAT],
        *[Adapter(PLACEHOLDER, theirs, export=False, local=OFFLINE_EMBEDDER, replace="embedder.local (--local)")
          for theirs in _KEPT_EMBEDDINGS],
        *[Adapter(PLACEHOLDER, theirs, export=False, local=_OFFLINE_LOADER,
                  replace="loader.file (--local reads the run's file in its place)")
          for theirs in _KEPT_LOADERS],
    ],
    original_param=_original_param,
)
# fmt: on
