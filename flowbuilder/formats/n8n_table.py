"""n8n's vocabulary for the mapping entries, and the n8n table: what no node of ours carries.

Each node type's n8n entries sit next to it, in its class's ``mappings["n8n"]`` (see ``adapters.py``); the
:data:`N8N_TABLE` reads them from the registry after its own entries, which are the n8n nodes we keep as
placeholders (what replaces them, their ``--local`` swap, the code hook). This module holds what the entries
share: the package prefixes (:data:`LC`, :data:`BASE`), n8n's port dicts, converters (resource locators,
milliseconds, n8n's -1 "no limit"), the Q&A chain's system prompt and n8n's routing nodes (:data:`ROUTES`).

``theirs`` is the full n8n type; ports map to n8n connection types. Defaults in an entry are n8n's (what an
export means when it omits a parameter); ours come from the node classes. Adding a mapping = one entry on
the node class (its import, export, ports and ``--local`` swap) + one fixture in ``tests/formats/fixtures/n8n/``
(globbed by ``tests/formats/test_fixtures.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowbuilder.formats.adapters import (
    OFFLINE_CHAT,
    OFFLINE_EMBEDDER,
    PLACEHOLDER,
    Adapter,
    Param,
    Table,
    offline_store,
    positive_int,
    to_float,
    to_int,
)

LC = "@n8n/n8n-nodes-langchain."
BASE = "n8n-nodes-base."

# n8n credential type <-> our provider name.
CREDENTIAL_PROVIDERS = {
    "openAiApi": "openai",
    "groqApi": "groq",
    "pineconeApi": "pinecone",
    "mistralCloudApi": "mistral",
    "cohereApi": "cohere",
    "ollamaApi": "ollama",
    "qdrantApi": "qdrant",
    "supabaseApi": "supabase",
    "openRouterApi": "openrouter",
    "googlePalmApi": "google",
    "httpBearerAuth": "http",
    "httpHeaderAuth": "http",  # last: an export writes header auth (name and value in the credential)
}
PROVIDER_CREDENTIALS = {provider: cred for cred, provider in CREDENTIAL_PROVIDERS.items()}
GENERIC_AUTH = frozenset({"httpBearerAuth", "httpHeaderAuth"})
"""n8n credential types a node uses through ``authentication: genericCredentialType``."""


def resource(value: Any) -> dict[str, Any]:
    """n8n's resource-locator form of a model or index name."""
    return {"__rl": True, "mode": "list", "value": value}


QA_SYSTEM_PROMPT = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question.\nIf you don't know the answer, just say that you don't know, don't try to make up an answer."
    "\n----------------\nContext: {context}"
)


def with_question(system_prompt: Any) -> str:
    """n8n sends the question as the user message; our one prompt carries it after the system text."""
    return f"{system_prompt}\n\nQuestion: {{question}}"


def system_then_question(messages: Any) -> str:
    """A Basic LLM Chain's prompt: its system messages (as written; an expression is not evaluated), then the
    incoming message, which is what the chain is asked with here."""
    values = messages.get("messageValues") if isinstance(messages, dict) else None
    texts: list[str] = []
    for message in values if isinstance(values, list) else []:
        if (
            isinstance(message, dict)
            and message.get("type", "SystemMessagePromptTemplate") == "SystemMessagePromptTemplate"
        ):
            texts.append(str(message.get("message") or "").removeprefix("=").strip())
    system = "\n\n".join(t for t in texts if t).replace("{", "{{").replace("}", "}}")
    return f"{system}\n\n{{question}}" if system else "{question}"


def token_chars(tokens: Any) -> int | None:
    """n8n's token splitter counts tokens; ours counts characters (about 4 per token in English)."""
    count = to_int(tokens)
    return None if count is None else count * 4


def mcp_selection(include: Any) -> str:
    return {"selected": "selected", "except": "all_except"}.get(str(include), "all")


def mcp_include(selection: Any) -> str:
    return {"selected": "selected", "all_except": "except"}.get(str(selection), "all")


def index_locator(name: Any) -> dict[str, Any]:
    return {**resource(name), "cachedResultName": name}


def ms_to_seconds(ms: Any) -> float | None:
    value = to_float(ms)
    return value / 1000 if value and value > 0 else None  # n8n counts milliseconds


def seconds_to_ms(seconds: Any) -> int | None:
    value = to_float(seconds)
    return to_int(value * 1000) if value else None  # 1e308 s is no number of milliseconds: left out


def no_limit_tokens(value: Any) -> int:
    return to_int(value) or -1  # n8n's "no limit"


def chat_params(model_default: str, locator: bool = False) -> tuple[Param, ...]:
    return (
        Param("model", "model", model_default, to_theirs=resource if locator else None, keep=True),
        Param("temperature", "options.temperature", 0.7, to_ours=to_float),
        Param("max_tokens", "options.maxTokens", -1, to_ours=positive_int, to_theirs=no_limit_tokens),
        Param("timeout", "options.timeout", 60000, to_ours=ms_to_seconds, to_theirs=seconds_to_ms),
        Param("max_retries", "options.maxRetries", 2, to_ours=to_int),
    )


# n8n's routing and item-shaping nodes: kind, typeVersions, what the reroute point stands for.
ROUTES: tuple[tuple[str, tuple[float, ...], str], ...] = (
    (
        "set",
        (1, 2, 3, 3.1, 3.2, 3.3, 3.4),
        "Edit Fields: static values fill the expressions that read them; expression values are not evaluated "
        "(listed below) and the item goes on unchanged",
    ),
    ("if", (1, 2, 2.1, 2.2), "If: the condition is not evaluated; both branches receive the item"),
    ("switch", (1, 2, 3, 3.1, 3.2, 3.3), "Switch: the rules are not evaluated; every output receives the item"),
    ("filter", (1, 2, 2.1, 2.2), "Filter: the condition is not evaluated; every item goes on"),
    ("splitOut", (1,), "Split Out: Flowbuilder nodes take whole lists, so the list goes on as one"),
    ("splitInBatches", (1, 2, 3), "Split In Batches: Flowbuilder nodes batch internally, so all items go through once"),
    ("noOp", (1,), "No Operation: a reroute point"),
    ("merge", (1, 2, 2.1, 3, 3.1, 3.2), "Merge: inputs are not combined; the first one given goes on"),
    ("limit", (1,), "Limit: every item goes on (no limit applied)"),
    ("aggregate", (1,), "Aggregate: the items go on as one list"),
    ("html", (1, 1.1, 1.2), "HTML: its CSS selectors are not applied; the whole page goes on to the loader"),
    ("htmlExtract", (1,), "HTML Extract: its CSS selectors are not applied; the whole page goes on to the loader"),
    ("convertToFile", (1, 1.1), "Convert to File: the data goes on as it is; the loader reads the file"),
    ("markdown", (1,), "Markdown: not converted; the loader reads the text as it is"),
)


def _original_param(original: Mapping[str, Any], name: str) -> Any:
    """A parameter of a kept node's original n8n JSON (a resource locator's name or value)."""
    value = (original.get("parameters") or {}).get(name)
    return value.get("cachedResultName") or value.get("value") if isinstance(value, dict) else value


_CHROMA_SWAP = "vectorstore.chroma (--local swaps it in with the same collection name)"
SPLITTER_OUT = {"chunks": "ai_textSplitter"}
STORE_IN = {"embedder": "ai_embedding", "documents": "ai_document", "query": "main"}
STORE_OUT = {"store": "ai_vectorStore", "hits": "main"}
CHAT_OUT = {"model": "ai_languageModel"}

# fmt: off
N8N_TABLE = Table(
    "n8n",
    [
        # -- kept: n8n nodes we do not run, imported as placeholders that name what replaces them --------
        Adapter(PLACEHOLDER, LC + "vectorStoreSupabase", export=False, replace=_CHROMA_SWAP,
                local=offline_store("tableName")),
        Adapter(PLACEHOLDER, LC + "vectorStorePGVector", export=False, replace=_CHROMA_SWAP,
                local=offline_store("tableName")),
        # more hosted stores: --local swaps in Chroma under the collection (index, table) the node names
        *[Adapter(PLACEHOLDER, kind, export=False, replace=_CHROMA_SWAP, local=offline_store(*fields))
          for kind, fields in ((LC + "vectorStoreMilvus", ("milvusCollection",)),
                               (LC + "vectorStoreWeaviate", ("weaviateCollection",)),
                               (LC + "vectorStoreRedis", ("redisIndex",)),
                               (LC + "vectorStoreMongoDBAtlas", ("mongoCollection", "collection", "vectorIndexName")),
                               (LC + "vectorStoreZep", ("collectionName",)),
                               (LC + "vectorStoreAzureAISearch", ("indexName",)))],
        # more hosted chat models and embedders: --local swaps in the offline ones
        *[Adapter(PLACEHOLDER, LC + kind, export=False, replace="llm.ollama (--local)", local=OFFLINE_CHAT)
          for kind in ("lmChatAzureOpenAi", "lmChatDeepSeek", "lmChatXAiGrok", "lmChatAwsBedrock",
                       "lmChatVercelAiGateway", "lmChatGoogleVertex", "lmChatCohere", "lmOpenAi", "lmOllama")],
        *[Adapter(PLACEHOLDER, LC + kind, export=False, replace="embedder.local (--local)", local=OFFLINE_EMBEDDER)
          for kind in ("embeddingsAzureOpenAi", "embeddingsHuggingFaceInference", "embeddingsGoogleVertex")],
        Adapter(PLACEHOLDER, LC + "lmChatOpenRouter", export=False, local=OFFLINE_CHAT,
                replace="llm.openai with base_url https://openrouter.ai/api/v1 (--local: llm.ollama)"),
        Adapter(PLACEHOLDER, LC + "lmChatGoogleGemini", export=False, local=OFFLINE_CHAT),
        Adapter(PLACEHOLDER, LC + "lmChatAnthropic", export=False, local=OFFLINE_CHAT),
        Adapter(PLACEHOLDER, LC + "embeddingsGoogleGemini", export=False, replace="embedder.local (--local)",
                local=OFFLINE_EMBEDDER),
        Adapter(PLACEHOLDER, LC + "embeddingsAwsBedrock", export=False, local=OFFLINE_EMBEDDER),
        # code: never run; the "code" hook summarises what it does for the placeholder's note
        *[Adapter(PLACEHOLDER, prefix + kind, export=False, hook="code")
          for prefix, kind in ((BASE, "code"), (BASE, "function"), (BASE, "functionItem"), (LC, "code"),
                               (LC, "toolCode"))],
    ],
    original_param=_original_param,
)
# fmt: on

STORE_PREFIX = "vectorStore"
"""An n8n vector store's short type begins so (a store we keep as a placeholder still takes documents)."""
STICKY = BASE + "stickyNote"
# n8n's MCP Server Trigger has no node of ours: Flowbuilder serves a whole flow over MCP
# (`flowbuilder serve` / `flowbuilder mcp` / the Serve tab), each retrieval tool a search tool. The trigger
# is structure, not a node: the importer drops it with a report line and keeps the tools wired into it.
MCP_SERVER_TRIGGER = LC + "mcpTrigger"
MCP_SERVER_VERSIONS = (1, 1.1, 2, 2.1)
