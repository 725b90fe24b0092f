"""The Flowise mapping table: one :class:`Adapter` per Flowise node ``name`` (see ``adapters.py``).

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


def _k(value: Any) -> int | None:
    return positive_int(value)


def _separators(value: Any) -> list[str] | None:
    """Flowise's separators: a JSON-ish list of strings in a text field (``["\\n\\n", "\\n"]``)."""
    if isinstance(value, list):
        items = [unescape(str(v)) for v in value]
    elif isinstance(value, str) and value.strip():
        items = [unescape(s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', value)]
    else:
        items = []
    return items or None


def _template(value: Any) -> str | None:
    """A Flowise prompt: ``{var}`` placeholders as ours; Mustache-like ``{{var}}`` become ``{var}``."""
    text = nonempty_str(value)
    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", r"{\1}", text) if text else None


def _service(ours: str, name: str, port: str, **kwargs: Any) -> Adapter:
    """A node with one service output, named after the node (embeddings, chat models, memories)."""
    return Adapter(ours, name, outputs={port: name}, **kwargs)


def _chat(ours: str, name: str, *params: Param, **kwargs: Any) -> Adapter:
    base = (
        Param("model", "modelName", to_ours=nonempty_str),
        Param("temperature", "temperature", 0.9, to_ours=to_float),
        Param("max_tokens", "maxTokens", to_ours=positive_int),
    )
    return _service(ours, name, "model", params=(*base, *params), **kwargs)


def _store(ours: str, name: str, *params: Param, **kwargs: Any) -> Adapter:
    return Adapter(
        ours,
        name,
        hook="store",
        params=(Param("k", "topK", 4, to_ours=_k), *params),
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


def _loader(name: str, file_input: str, more: tuple[str, ...] = (), **kwargs: Any) -> Adapter:
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


_SILENT = ("cache", "streaming", "inputModeration", "allowImageUploads", "imageResolution", "baseOptions")
_AGENT: dict[str, Any] = {
    "hook": "agent",
    "params": (
        Param("system_message", "systemMessage", to_ours=nonempty_str),
        Param("max_steps", "maxIterations", to_ours=lambda v: min(max(positive_int(v) or 5, 1), 50)),
    ),
    "inputs": {"tools": "tools", "memory": "memory", "model": "model"},
    "ignore": (*_SILENT, "chatPromptTemplate", "enableDetailedStreaming", "rephrasePrompt", "rephraseModel"),
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
    "ollama", "huggingFaceInference_LLMs", "cohere", "replicate", "fireworks", "togetherAI", "awsBedrock",
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
_EXTERNAL_MEMORY = (
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
        _loader("pdfFile", "pdfFile"),
        _loader("textFile", "txtFile"),
        _loader("csvFile", "csvFile", ("columnName",)),
        _loader("docxFile", "docxFile"),
        _loader("jsonFile", "jsonFile"),
        _loader("jsonlinesFile", "jsonlinesFile"),
        _loader("fileLoader", "file"),
        _loader("microsoftWord", "docxFile"),
        _loader("microsoftExcel", "excelFile"),
        _loader("microsoftPowerpoint", "powerpointFile"),
        _loader("epubFile", "epubFile"),
        _loader("unstructuredFileLoader", "fileObject"),
        _loader("folderFiles", "folderPath"),
        Adapter("loader.url", "cheerioWebScraper", also=("playwrightWebScraper", "puppeteerWebScraper"), hook="url",
                outputs={"records": "document"}, out_aliases={"text": "records"},
                ignore=("url", "textSplitter", "relativeLinksMethod", "limit", "selector", "metadata",
                        "omitMetadataKeys", "waitUntilGoToOption", "waitForSelector")),
        # -- splitters (a splitter is called by its loader in Flowise: the engine wires loader -> splitter)
        Adapter("splitter.recursive", "recursiveCharacterTextSplitter", outputs={"chunks":
                                                                              "recursiveCharacterTextSplitter"},
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                        Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                        Param("separators", "separators", to_ours=_separators))),
        Adapter("splitter.character", "characterTextSplitter", outputs={"chunks": "characterTextSplitter"},
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                        Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0)),
                        Param("separator", "separator", "\n\n", to_ours=lambda v: unescape(v) if v else None))),
        Adapter("splitter.recursive", "tokenTextSplitter", outputs={"chunks": "tokenTextSplitter"},
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                        Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0))),
                ignore=("encodingName",), note="a token splitter: split here by characters (chunk sizes are read as "
                "characters, so chunks come out shorter than Flowise's)"),
        Adapter("splitter.recursive", "codeTextSplitter", outputs={"chunks": "codeTextSplitter"},
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                        Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0))),
                ignore=("language",), note="a code splitter: split here with the recursive splitter's separators"),
        Adapter("splitter.markdown", "markdownTextSplitter", also=("htmlToMarkdownTextSplitter",),
                outputs={"chunks": "markdownTextSplitter"}, out_aliases={"htmlToMarkdownTextSplitter": "chunks"},
                params=(Param("chunk_size", "chunkSize", 1000, to_ours=positive_int),
                        Param("chunk_overlap", "chunkOverlap", 200, to_ours=lambda v: max(positive_int(v) or 0, 0))),
                ignore=("headerLevels", "splitBy")),
        # -- embeddings
        _service("embedder.openai", "openAIEmbeddings", "embedder", local=OFFLINE_EMBEDDER,
                 params=(Param("model", "modelName", "text-embedding-ada-002", to_ours=nonempty_str),
                         Param("dimensions", "dimensions", to_ours=positive_int),
                         Param("base_url", "basepath", to_ours=nonempty_str)),
                 ignore=("stripNewLines", "batchSize", "timeout", "baseOptions", "encodingFormat")),
        _service("embedder.openai", "openAIEmbeddingsCustom", "embedder", local=OFFLINE_EMBEDDER,
                 params=(Param("model", "modelName", to_ours=nonempty_str),
                         Param("dimensions", "dimensions", to_ours=positive_int),
                         Param("base_url", "basepath", to_ours=nonempty_str)),
                 ignore=("stripNewLines", "batchSize", "timeout", "baseOptions")),
        _service("embedder.ollama", "ollamaEmbedding", "embedder", local=OFFLINE_EMBEDDER,
                 params=(Param("model", "modelName", to_ours=nonempty_str),
                         Param("base_url", "baseUrl", "http://localhost:11434", to_ours=nonempty_str)),
                 ignore=("numGpu", "numThread", "useMMap")),
        _service("embedder.cohere", "cohereEmbeddings", "embedder", local=OFFLINE_EMBEDDER,
                 params=(Param("model", "modelName", "embed-english-v2.0", to_ours=nonempty_str),),
                 ignore=("inputType",)),
        _service("embedder.mistral", "mistralAIEmbeddings", "embedder", local=OFFLINE_EMBEDDER,
                 params=(Param("model", "modelName", "mistral-embed", to_ours=nonempty_str),
                         Param("base_url", "overrideEndpoint", to_ours=nonempty_str)),
                 ignore=("batchSize", "stripNewLines")),
        _service("embedder.local", "huggingFaceInferenceEmbeddings", "embedder",
                 ignore=("modelName", "endpoint"),
                 note="HuggingFace Inference embeddings: computed here by the local MiniLM model (no key, offline; "
                 "vectors differ from the named model's, so re-index)"),
        # -- vector stores: one node both fills and searches; Flowise's retriever output is our store port
        _store("vectorstore.chroma", "chroma",
               Param("collection", "collectionName", to_ours=nonempty_str),
               Param("server_host", "chromaURL", to_ours=nonempty_str)),
        _store("vectorstore.chroma", "memoryVectorStore",
               note="Flowise's in-memory store: an embedded Chroma collection here (kept on disk between runs)"),
        _store("vectorstore.chroma", "faiss", ignore=("basePath",),
               note="a FAISS index: an embedded Chroma collection here (the index folder is not read)"),
        _store("vectorstore.pinecone", "pinecone",
               Param("index", "pineconeIndex", to_ours=nonempty_str),
               Param("namespace", "pineconeNamespace", to_ours=nonempty_str),
               local=offline_store("index", "namespace")),
        _store("vectorstore.qdrant", "qdrant",
               Param("collection", "qdrantCollection", to_ours=nonempty_str),
               Param("url", "qdrantServerUrl", to_ours=nonempty_str),
               preset={"search": "dense"}),
        # -- retrievers over a store (our query -> hits nodes)
        Adapter("retriever.vector", "vectorStoreRetriever", inputs={"store": "vectorStore", "query": "query"},
                outputs={"hits": "retriever"}, ignore=("name", "description")),
        Adapter("retriever.vector", "similarityThresholdRetriever", inputs={"store": "vectorStore", "query": "query"},
                outputs={"hits": "retriever"},
                params=(Param("k", "maxK", 20, to_ours=_k), Param("min_score", "minSimilarityScore", 80,
                                                                   to_ours=lambda v: (to_float(v) or 0) / 100)),
                ignore=("fetchK",)),
        Adapter("reranker.cohere", "cohereRerankRetriever", inputs={"hits": "baseRetriever", "query": "query"},
                outputs={"hits": "retriever"},
                params=(Param("model", "model", "rerank-v3.5", to_ours=nonempty_str),
                        Param("keep", "topK", 4, to_ours=_k)),
                ignore=("maxChunksPerDoc",)),
        Adapter("reranker.cross_encoder", "voyageAIRerankRetriever", also=("JinaRerankRetriever",
                                                                           "AzureRerankRetriever"),
                inputs={"hits": "baseRetriever", "query": "query"}, outputs={"hits": "retriever"},
                ignore=("model", "topK", "maxChunksPerDoc"),
                note="a cloud reranker: reranked here by the local cross-encoder (no key)"),
        Adapter("query.rewrite", "multiQueryRetriever", inputs={"store": "vectorStore", "model": "model",
                                                                "query": "query"},
                outputs={"hits": "retriever"}, ignore=("modelPrompt",)),
        Adapter("retriever.tool", "retrieverTool", inputs={"store": "retriever"}, outputs={"tool": "retrieverTool"},
                params=(Param("name", "name", to_ours=lambda v: re.sub(r"[^a-zA-Z0-9_-]+", "_", str(v or ""))[:64]
                              or None),
                        Param("description", "description", to_ours=nonempty_str)),
                ignore=("returnSourceDocuments", "retrieverToolMetadataFilter")),
        # -- chat models
        _chat("llm.openai", "chatOpenAI", Param("base_url", "basepath", to_ours=nonempty_str),
              local=OFFLINE_CHAT, ignore=(*_SILENT, "topP", "frequencyPenalty", "presencePenalty", "timeout",
                                          "strictToolCalling", "stopSequence", "reasoning", "reasoningEffort",
                                          "reasoningSummary", "proxyUrl")),
        _chat("llm.openai", "chatOpenAICustom", Param("base_url", "basepath", to_ours=nonempty_str),
              local=OFFLINE_CHAT, ignore=(*_SILENT, "topP", "frequencyPenalty", "presencePenalty", "timeout")),
        _chat("llm.ollama", "chatOllama", Param("base_url", "baseUrl", "http://localhost:11434",
                                                to_ours=nonempty_str),
              ignore=(*_SILENT, "think", "jsonMode", "keepAlive", "topP", "topK", "mirostat", "mirostatEta",
                      "mirostatTau", "numCtx", "numGpu", "numThread", "repeatLastN", "repeatPenalty", "stop",
                      "tfsZ")),
        _chat("llm.mistral", "chatMistralAI", Param("max_tokens", "maxOutputTokens", to_ours=positive_int),
              Param("base_url", "overrideEndpoint", to_ours=nonempty_str), local=OFFLINE_CHAT,
              ignore=(*_SILENT, "topP", "randomSeed", "safeMode")),
        _chat("llm.groq", "groqChat", local=OFFLINE_CHAT, ignore=_SILENT),
        # -- memory: the chat history lives in this process here
        _service("memory.window", "bufferWindowMemory", "memory",
                 params=(Param("window", "k", 4, to_ours=positive_int),), ignore=("memoryKey", "sessionId")),
        _service("memory.window", "bufferMemory", "memory", also=("conversationSummaryMemory",
                                                                 "conversationSummaryBufferMemory"),
                 out_aliases={n: "memory" for n in ("conversationSummaryMemory", "conversationSummaryBufferMemory")},
                 ignore=("memoryKey", "sessionId", "model", "maxTokenLimit"),
                 note="a buffer memory: the last 5 exchanges are kept here (memory.window)"),
        _service("memory.window", "RedisBackedChatMemory", "memory", also=_EXTERNAL_MEMORY,
                 out_aliases={n: "memory" for n in _EXTERNAL_MEMORY},
                 ignore=("sessionId", "memoryKey", "sessionTTL", "windowSize", "baseURL", "tableName",
                         "databaseFilePath", "host", "port", "user", "database", "mongoDBUrl", "collectionName",
                         "databaseName", "upstashRestUrl", "aiPrefix", "humanPrefix", "k", "user_id", "orgId",
                         "projectId"),
                 note="a memory kept in an external database: the history is kept in this process here "
                 "(memory.window)"),
        # -- prompts, chains and agents (the engine adds the chat input and output Flowise's window stands for)
        Adapter("prompt.template", "promptTemplate", also=("chatPromptTemplate", "fewShotPromptTemplate"),
                hook="prompt", outputs={"prompt": "promptTemplate"},
                out_aliases={"chatPromptTemplate": "prompt", "fewShotPromptTemplate": "prompt"},
                params=(Param("template", "template", to_ours=_template),),
                ignore=("promptValues", "systemMessagePrompt", "humanMessagePrompt", "messageHistory",
                        "messageHistoryCode", "examples", "examplePrompt", "prefix", "suffix", "exampleSeparator",
                        "templateFormat")),
        Adapter("prompt.template", "conversationalRetrievalQAChain", also=("retrievalQAChain", "vectorDBQAChain"),
                hook="qa", inputs={"context": "vectorStoreRetriever"}, in_aliases={"vectorStore": "context"},
                extra={"parts": ("model", "memory")},
                params=(Param("template", "responsePrompt", to_ours=_template),),
                ignore=(*_SILENT, "model", "memory", "rephrasePrompt", "returnSourceDocuments", "systemMessagePrompt",
                        "chainOption")),
        Adapter("util.passthrough", "llmChain", also=("conversationChain",), hook="chain",
                ignore=(*_SILENT, "model", "prompt", "memory", "outputParser", "chainName", "outputPrediction",
                        "systemMessagePrompt", "chatPromptTemplate")),
        Adapter("agent.tools", "toolAgent", also=("conversationalAgent", "openAIToolAgent", "openAIFunctionAgent",
                                                  "reactAgentChat", "reactAgentLLM", "xmlAgent",
                                                  "mistralAIToolAgent", "openAIToolAgentLlamaIndex",
                                                  "anthropicAgentLlamaIndex"), **_AGENT),
        Adapter("agent.tools", "conversationalRetrievalToolAgent",
                **{**_AGENT, "inputs": {"tools": "tools", "memory": "memory", "model": "model"}},
                in_aliases={"vectorStoreRetriever": "tools"}),
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
