"""The n8n mapping table: one :class:`Adapter` per Flowbuilder node type (see ``adapters.py``).

``theirs`` is the n8n type without its package prefix; ports map to n8n connection types. Defaults
here are n8n's (what an export means when it omits a parameter); ours come from the node classes.
Adding a mapping = one entry here (its import, export, ports and ``--local`` swap) + one fixture in
``tests/formats/fixtures/n8n/`` (globbed by ``tests/formats/test_fixtures.py``); see ``adapters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowbuilder.formats import http_tool_params as H
from flowbuilder.formats.adapters import (
    NO_DEFAULT,
    OFFLINE_CHAT,
    OFFLINE_EMBEDDER,
    PLACEHOLDER,
    Adapter,
    ByVersion,
    Param,
    Table,
    nonempty_str,
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


def _resource(value: Any) -> dict[str, Any]:
    """n8n's resource-locator form of a model or index name."""
    return {"__rl": True, "mode": "list", "value": value}


QA_SYSTEM_PROMPT = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to answer "
    "the question.\nIf you don't know the answer, just say that you don't know, don't try to make up an answer."
    "\n----------------\nContext: {context}"
)


def _with_question(system_prompt: Any) -> str:
    """n8n sends the question as the user message; our one prompt carries it after the system text."""
    return f"{system_prompt}\n\nQuestion: {{question}}"


def _token_chars(tokens: Any) -> int | None:
    """n8n's token splitter counts tokens; ours counts characters (about 4 per token in English)."""
    count = to_int(tokens)
    return None if count is None else count * 4


def _mcp_selection(include: Any) -> str:
    return {"selected": "selected", "except": "all_except"}.get(str(include), "all")


def _mcp_include(selection: Any) -> str:
    return {"selected": "selected", "all_except": "except"}.get(str(selection), "all")


def _index(name: Any) -> dict[str, Any]:
    return {**_resource(name), "cachedResultName": name}


def _seconds(ms: Any) -> float | None:
    value = to_float(ms)
    return value / 1000 if value and value > 0 else None  # n8n counts milliseconds


def _ms(seconds: Any) -> int | None:
    value = to_float(seconds)
    return to_int(value * 1000) if value else None  # 1e308 s is no number of milliseconds: left out


def _max_tokens(value: Any) -> int:
    return to_int(value) or -1  # n8n's "no limit"


def _chat_params(model_default: str, resource: bool = False) -> tuple[Param, ...]:
    return (
        Param("model", "model", model_default, to_theirs=_resource if resource else None, keep=True),
        Param("temperature", "options.temperature", 0.7, to_ours=to_float),
        Param("max_tokens", "options.maxTokens", -1, to_ours=positive_int, to_theirs=_max_tokens),
        Param("timeout", "options.timeout", 60000, to_ours=_seconds, to_theirs=_ms),
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
_SPLITTER = {"chunks": "ai_textSplitter"}
_STORE_IN = {"embedder": "ai_embedding", "documents": "ai_document", "query": "main"}
_STORE_OUT = {"store": "ai_vectorStore", "hits": "main"}
_CHAT_OUT = {"model": "ai_languageModel"}

# fmt: off
N8N_TABLE = Table(
    "n8n",
    [
        # -- triggers and inputs --------------------------------------------------------------------
        Adapter("chat.input", LC + "chatTrigger", (1, 1.1, 1.3, 1.4), outputs={"message": "main"},
                also=(LC + "manualChatTrigger",), ignore=("options", "public", "mode", "initialMessages"),
                export_version=1.1),
        Adapter("input.file", BASE + "formTrigger", (2, 2.1, 2.2, 2.3, 2.5, 2.6), outputs={"path": "main"},
                hook="form", ignore=("formTitle", "formDescription", "formFields", "options", "responseMode")),
        Adapter("input.file", BASE + "manualTrigger", (1,), outputs={"path": "main"}, export=False,
                note="a manual trigger: give the file to ingest with --input {id}=PATH"),
        Adapter("input.file", BASE + "googleDriveTrigger", (1,), outputs={"path": "main"}, export=False,
                hook="cloud_file", note="watched a Google Drive folder: download {what} and give it with "
                "--input {id}=PATH"),
        Adapter("input.file", BASE + "googleDrive", (1, 2, 3), outputs={"path": "main"}, export=False,
                hook="cloud_file", note="downloaded {what} from Google Drive: download it yourself and give it "
                "with --input {id}=PATH"),
        Adapter("input.file", BASE + "localFileTrigger", (1,), outputs={"path": "main"}, export=False,
                hook="cloud_file", note="watched the local path {what}: give the file with --input {id}=PATH"),
        Adapter("input.file", BASE + "readWriteFile", (1,), outputs={"path": "main"}, export=False,
                hook="cloud_file", note="read the file {what}: give it with --input {id}=PATH"),
        # An HTTP call as the entry of a served flow: the webhook is `flowbuilder serve`'s /ask, its
        # answer is Respond to Webhook's (the "webhook" hook names the path in the report).
        Adapter("chat.input", BASE + "webhook", (1, 1.1, 2, 2.1), outputs={"message": "main"}, export=False,
                export_version=2,
                hook="webhook", note="a webhook: `flowbuilder serve` takes the message at /ask (it was POST "
                "/{what}); `run --input TEXT` gives it here"),
        Adapter("chat.output", BASE + "respondToWebhook", (1, 1.1, 1.2, 1.3, 1.4, 1.5), inputs={"message": "main"},
                outputs={"message": "main"}, export=False, hook="respond", export_version=1.1,
                extra={"unexported": "chat output: n8n answers in the chat trigger"},
                ignore=("respondWith", "responseBody", "options", "enableResponseOutput", "responseCode"),
                note="Respond to Webhook: the answer `flowbuilder serve` returns at /ask"),
        # -- routing: reroute points (util.passthrough) whose logic is never evaluated; the "route" hook
        # reports what each one decided in n8n and that every item goes on.
        *[Adapter("util.passthrough", BASE + kind, versions, inputs={"value": "main"}, outputs={"value": "main"},
                  export=False, hook="route", note=what,
                  extra={"loop": kind == "splitInBatches", "sets_fields": kind == "set"})
          for kind, versions, what in ROUTES],
        # -- loading and splitting -------------------------------------------------------------------
        Adapter("loader.file", LC + "documentDefaultDataLoader", (1, 1.1), inputs={"path": "main"},
                outputs={"records": "ai_document"}, hook="loader",
                ignore=("dataType", "loader", "textSplittingMode", "options", "jsonMode", "binaryMode")),
        Adapter("loader.file", BASE + "extractFromFile", (1,), inputs={"path": "main"},
                outputs={"records": "main"}, export=False, ignore=("operation", "options", "binaryPropertyName")),
        Adapter("loader.file", BASE + "httpRequest", (4, 4.1, 4.2), inputs={"path": "main"},
                outputs={"records": "main"}, export=False, hook="http"),
        Adapter("splitter.recursive", LC + "textSplitterRecursiveCharacterTextSplitter", (1,), outputs=_SPLITTER,
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=to_int),
                        Param("chunk_overlap", "chunkOverlap", 0, to_ours=to_int)),
                fixed={"options": {}}, ignore=("options",)),
        Adapter("splitter.recursive", LC + "textSplitterTokenSplitter", (1,), outputs=_SPLITTER, export=False,
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=_token_chars),
                        Param("chunk_overlap", "chunkOverlap", 0, to_ours=_token_chars)),
                note="token sizes read as 4 characters per token (splitter.recursive counts characters)"),
        Adapter("splitter.character", LC + "textSplitterCharacterTextSplitter", (1,), outputs=_SPLITTER,
                params=(Param("separator", "separator", "", to_ours=lambda v: v or "\n\n"),
                        Param("chunk_size", "chunkSize", 1000, to_ours=to_int),
                        Param("chunk_overlap", "chunkOverlap", 0, to_ours=to_int))),
        # -- embedders -------------------------------------------------------------------------------
        Adapter("embedder.openai", LC + "embeddingsOpenAi", (1, 1.1, 1.2), outputs={"embedder": "ai_embedding"},
                params=(Param("model", "model", ByVersion({1: "text-embedding-ada-002"}, "text-embedding-3-small")),
                        Param("dimensions", "options.dimensions", 0, to_ours=positive_int,
                              to_theirs=lambda v: v or 0),
                        Param("base_url", "options.baseURL", "", to_ours=nonempty_str)),
                fixed={"options": {}}, local=OFFLINE_EMBEDDER),
        Adapter("embedder.ollama", LC + "embeddingsOllama", (1,), outputs={"embedder": "ai_embedding"},
                params=(Param("model", "model", "llama3.2", keep=True),), local=OFFLINE_EMBEDDER),
        Adapter("embedder.mistral", LC + "embeddingsMistralCloud", (1,), outputs={"embedder": "ai_embedding"},
                params=(Param("model", "model", "mistral-embed", keep=True),), fixed={"options": {}},
                ignore=("options",), local=OFFLINE_EMBEDDER),
        Adapter("embedder.cohere", LC + "embeddingsCohere", (1,), outputs={"embedder": "ai_embedding"},
                params=(Param("model", "modelName", "embed-english-v2.0", keep=True),), ignore=("notice",),
                local=OFFLINE_EMBEDDER),
        # The nearest n8n equivalent of the offline MiniLM embedder: all-minilm on a local Ollama.
        Adapter("embedder.local", LC + "embeddingsOllama", (1,), outputs={"embedder": "ai_embedding"},
                fixed={"model": "all-minilm"}, imports=False,
                note="embedder.local has no n8n node: exported as Ollama embeddings with all-minilm "
                "(the same MiniLM model; run `ollama pull all-minilm`)"),
        # -- chat models, memory, agent --------------------------------------------------------------
        Adapter("llm.openai", LC + "lmChatOpenAi", (1, 1.1, 1.2, 1.3), outputs=_CHAT_OUT,
                params=(*_chat_params("gpt-4o-mini", resource=True),
                        Param("base_url", "options.baseURL", "", to_ours=nonempty_str)),
                fixed={"options": {}}, ignore=("builtInTools",), export_version=1.2, local=OFFLINE_CHAT),
        Adapter("llm.groq", LC + "lmChatGroq", (1,), outputs=_CHAT_OUT,
                params=_chat_params("llama3-8b-8192"), fixed={"options": {}}, local=OFFLINE_CHAT),
        Adapter("llm.ollama", LC + "lmChatOllama", (1,), outputs=_CHAT_OUT,
                params=_chat_params("llama3.2"), fixed={"options": {}}),
        Adapter("llm.mistral", LC + "lmChatMistralCloud", (1,), outputs=_CHAT_OUT,
                params=(Param("model", "model", "mistral-small", keep=True),
                        Param("temperature", "options.temperature", 0.7, to_ours=to_float),
                        Param("max_tokens", "options.maxTokens", -1, to_ours=positive_int, to_theirs=_max_tokens),
                        Param("timeout", "options.timeout", 60000, to_ours=_seconds, to_theirs=_ms),
                        Param("max_retries", "options.maxRetries", 2, to_ours=to_int)),
                fixed={"options": {}}, local=OFFLINE_CHAT),
        Adapter("memory.window", LC + "memoryBufferWindow", (1, 1.1, 1.2, 1.3, 1.4), outputs={"memory": "ai_memory"},
                params=(Param("window", "contextWindowLength", 5, to_ours=to_int),),
                ignore=("sessionIdType", "sessionKey"), export_version=1.3),
        Adapter("memory.window", LC + "memoryPostgresChat", (1, 1.1, 1.2, 1.3, 1.4), outputs={"memory": "ai_memory"},
                export=False, params=(Param("window", "contextWindowLength", 5, to_ours=to_int),),
                ignore=("sessionIdType", "sessionKey", "tableName"),
                note="the Postgres chat history becomes Flowbuilder's window memory (kept per session, no database)"),
        Adapter("agent.tools", LC + "agent", (1.6, 1.7, 1.8, 1.9, 2, 2.1, 2.2, 3, 3.1),
                inputs={"message": "main", "model": "ai_languageModel", "memory": "ai_memory", "tools": "ai_tool"},
                outputs={"answer": "main"},
                params=(Param("system_message", "options.systemMessage", "You are a helpful assistant"),
                        Param("max_steps", "options.maxIterations", 10, to_ours=to_int)),
                fixed={"options": {}}),
        # -- vector stores (modes and role nodes: the "store" hook) ------------------------------------
        Adapter("vectorstore.pinecone", LC + "vectorStorePinecone", (1, 1.1, 1.2, 1.3), inputs=_STORE_IN,
                outputs=_STORE_OUT, hook="store",
                params=(Param("index", "pineconeIndex", "", to_theirs=_index),
                        Param("namespace", "options.pineconeNamespace", "")),
                fixed={"options": {}}, local=offline_store("index", "namespace")),
        Adapter("vectorstore.qdrant", LC + "vectorStoreQdrant", (1, 1.1, 1.2, 1.3), inputs=_STORE_IN,
                outputs=_STORE_OUT, hook="store", preset={"search": "dense"},  # n8n searches dense vectors only
                params=(Param("collection", "qdrantCollection", "", to_theirs=_index),), fixed={"options": {}}),
        Adapter("vectorstore.chroma", LC + "vectorStoreInMemory", (1, 1.1), inputs=_STORE_IN, outputs=_STORE_OUT,
                hook="store", params=(Param("collection", "memoryKey", "vector_store_key"),),
                note="n8n's in-memory store becomes an embedded Chroma collection", fixed={"options": {}}),
        # A store's retrieval roles: exported as modes of the store node, imported from the sub-nodes too.
        Adapter("retriever.tool", LC + "toolVectorStore", (1, 1.1), inputs={"store": "ai_vectorStore"},
                outputs={"tool": "ai_tool"}, export=False,
                params=(Param("name", "name", "", to_ours=nonempty_str),
                        Param("description", "description", "", to_ours=nonempty_str),
                        Param("k", "topK", 4, to_ours=to_int))),
        # n8n wires a reranker into a store (ai_reranker, useReranker); the "reranker" hook puts ours after
        # the store's retriever.
        Adapter("reranker.cohere", LC + "rerankerCohere", (1,), outputs={"hits": "ai_reranker"}, hook="reranker",
                params=(Param("model", "modelName", "rerank-v3.5", keep=True),
                        Param("keep", "topN", 3, to_ours=to_int))),
        Adapter("tool.mcp", LC + "mcpClientTool", (1, 1.1, 1.2, 1.3, 1.4), outputs={"tool": "ai_tool"}, hook="mcp",
                preset={"transport": "http"}, export_version=1.2,
                params=(Param("url", "endpointUrl", ""), Param("url", "sseEndpoint", "", export=False),
                        Param("selection", "include", "all", to_ours=_mcp_selection, to_theirs=_mcp_include)),
                fixed={"serverTransport": "httpStreamable", "options": {}},
                ignore=("serverTransport", "authentication", "options", "includeTools", "excludeTools")),
        # HTTP Request as an agent tool: the LangChain tool (placeholders, key/value lists) and the core
        # node used as a tool ($fromAI values); the "http_tool" hook turns $fromAI into {name} templates.
        Adapter("tool.http", LC + "toolHttpRequest", (1, 1.1), outputs={"tool": "ai_tool"}, hook="http_tool",
                params=(Param("description", "toolDescription", "", to_ours=nonempty_str),
                        Param("method", "method", "GET"),
                        Param("url", "url", NO_DEFAULT),
                        Param("query", "parametersQuery", NO_DEFAULT, to_ours=H.tool_pairs,
                              to_theirs=H.tool_pairs_back),
                        Param("query", "sendQuery", False, to_ours=H.never, to_theirs=bool),
                        Param("headers", "parametersHeaders", NO_DEFAULT, to_ours=H.tool_pairs,
                              to_theirs=H.tool_pairs_back),
                        Param("headers", "sendHeaders", False, to_ours=H.never, to_theirs=bool),
                        Param("body", "jsonBody", NO_DEFAULT, to_ours=nonempty_str, to_theirs=nonempty_str),
                        Param("body", "parametersBody", NO_DEFAULT, to_ours=H.tool_body, export=False),
                        Param("body", "sendBody", False, to_ours=H.never, to_theirs=bool),
                        Param("body", "specifyBody", "keypair", to_ours=H.never, to_theirs=H.json_if_any),
                        Param("placeholders", "placeholderDefinitions", NO_DEFAULT, to_ours=H.placeholders,
                              to_theirs=H.placeholders_back)),
                ignore=("notice", "placeholderNotice", "sendQuery", "sendHeaders", "sendBody", "specifyBody",
                        "authentication", "genericAuthType", "nodeCredentialType",
                        "specifyQuery", "specifyHeaders", "optimizeResponse", "responseType", "dataField",
                        "fieldsToInclude", "fields", "cssSelector", "onlyContent", "elementsToOmit",
                        "truncateResponse", "maxLength"),
                note="an HTTP API the agent may call: approve its server before a run (validate names it)"),
        Adapter("tool.http", BASE + "httpRequestTool", (4, 4.1, 4.2, 4.3, 4.4), outputs={"tool": "ai_tool"},
                hook="http_tool", export=False,
                params=(Param("description", "toolDescription", "", to_ours=nonempty_str),
                        Param("method", "method", "GET"),
                        Param("url", "url", NO_DEFAULT),
                        Param("query", "queryParameters", NO_DEFAULT, to_ours=H.core_pairs),
                        Param("headers", "headerParameters", NO_DEFAULT, to_ours=H.core_pairs),
                        Param("body", "jsonBody", NO_DEFAULT, to_ours=nonempty_str),
                        Param("body", "bodyParameters", NO_DEFAULT, to_ours=H.core_body)),
                ignore=("sendQuery", "sendHeaders", "sendBody", "specifyQuery", "specifyHeaders", "specifyBody",
                        "contentType", "options", "authentication", "genericAuthType", "nodeCredentialType",
                        "descriptionType"),
                note="an HTTP API the agent may call: approve its server before a run (validate names it)"),
        # n8n's Q&A chain: its system prompt becomes our prompt template; the "chain" hook wires the
        # retriever's hits and the question into it and the model after it.
        Adapter("prompt.template", LC + "chainRetrievalQa", (1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7),
                inputs={"question": "main"}, outputs={"prompt": "main"}, export=False, hook="chain",
                params=(Param("template", "options.systemPromptTemplate", QA_SYSTEM_PROMPT, to_ours=_with_question),),
                ignore=("promptType", "text", "query", "options"),
                replace="retriever.vector -> prompt.template -> an llm node"),
        Adapter("retriever.vector", LC + "retrieverVectorStore", (1,), inputs={"store": "ai_vectorStore"},
                outputs={"retriever": "ai_retriever"}, export=False,
                params=(Param("k", "topK", 4, to_ours=to_int),)),
        # -- kept: n8n nodes we do not run, imported as placeholders that name what replaces them --------
        Adapter(PLACEHOLDER, LC + "vectorStoreSupabase", export=False, replace=_CHROMA_SWAP,
                local=offline_store("tableName")),
        Adapter(PLACEHOLDER, LC + "vectorStorePGVector", export=False, replace=_CHROMA_SWAP,
                local=offline_store("tableName")),
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
