"""The LangFlow mapping table: one :class:`Adapter` per Flowbuilder node type (see ``adapters.py``).

``theirs`` is the component's ``data.type``; params map to template fields; ports map to input field
names (edge ``targetHandle.fieldName``) and output names (``sourceHandle.name``). ``extra`` holds what
an exported component needs to look like LangFlow's own: its outputs (display name, types, method),
the accepted types of each input handle and the secret field that names a global variable.
Adding a mapping = one entry here (its import, export, ports and ``--local`` swap) + one fixture in
``tests/formats/fixtures/langflow/`` (globbed by ``tests/formats/test_fixtures.py``); see ``adapters.py``.
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
    Local,
    Param,
    Table,
    nonempty_str,
    offline_store,
    positive_int,
    to_bool,
    to_float,
    to_int,
    to_str,
    unescape,
)

MESSAGE = ("Message",)
NOTE_TYPES = ("noteNode", "note")
"""A LangFlow note: the node's ``type`` or its ``data.type``."""
OURS = "FlowbuilderNode"
"""The component our exporter writes for a type LangFlow lacks (our type and config in its metadata)."""
DATA_IN = ("Data", "JSON", "DataFrame", "Table", "Message")


def _keep_separator_in(value: Any) -> str:
    return {"true": "start", "start": "start", "end": "end"}.get(str(value or "False").strip().lower(), "none")


def _keep_separator_out(value: Any) -> str:
    return {"start": "Start", "end": "End"}.get(str(value), "False")


def _separators(value: Any) -> list[str] | None:
    return [unescape(s) for s in value] if isinstance(value, list) and value else None


def _metric_in(value: Any) -> str:
    return {"euclidean": "euclidean", "dot product": "dotproduct"}.get(str(value or "Cosine").lower(), "cosine")


def _metric_out(value: Any) -> str:
    return {"euclidean": "Euclidean", "dotproduct": "Dot Product"}.get(str(value), "Cosine")


def _mistral_endpoint(value: Any) -> str | None:
    url = str(value or "").rstrip("/")
    return None if url in ("", "https://api.mistral.ai/v1", "https://api.mistral.ai") else url


def _api_base(value: Any) -> str | None:
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


def _tool_name(value: Any) -> str | None:
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", str(value or "")).strip("_")[:64]
    return name or None


def _out(name: str, display: str, types: tuple[str, ...], method: str, selected: bool = True) -> dict[str, Any]:
    return {"name": name, "display": display, "types": types, "method": method, "selected": selected}


def _int_param(ours: str, theirs: str, default: Any = NO_DEFAULT) -> Param:
    return Param(ours, theirs, default, to_ours=to_int, widget="IntInput", kind="int")


_LLM_PARAMS = (
    Param("model", "model_name", widget="DropdownInput", to_ours=nonempty_str),
    Param("model", "model", to_ours=nonempty_str, export=False),
    Param("temperature", "temperature", to_ours=to_float, widget="SliderInput", kind="slider"),
    Param("max_tokens", "max_tokens", to_ours=positive_int, to_theirs=lambda v: v or 0, widget="IntInput", kind="int"),
    Param("system_message", "system_message", to_ours=nonempty_str, widget="MultilineInput"),
    Param("timeout", "timeout", to_ours=lambda v: to_float(v) or None, widget="IntInput", kind="int"),
    _int_param("max_retries", "max_retries"),
    Param("stream", "stream", to_ours=to_bool, widget="BoolInput", kind="bool"),
)
_LLM_PORTS: dict[str, Any] = {
    "inputs": {"prompt": "input_value", "system": "system_message"},
    "outputs": {"answer": "text_output", "model": "model_output"},
    "extra": {
        "outputs": (
            _out("text_output", "Model Response", MESSAGE, "text_response"),
            _out("model_output", "Language Model", ("LanguageModel",), "build_model", False),
        ),
        "handles": {"input_value": MESSAGE, "system_message": MESSAGE},
        "secret": "api_key",
    },
}
_STORE_PORTS: dict[str, Any] = {
    "inputs": {"documents": "ingest_data", "embedder": "embedding", "query": "search_query"},
    "outputs": {"hits": "search_results", "store": "vectorstoreconnection"},
    "in_aliases": {"embedding_model": "embedder", "documents": "documents", "search_input": "query"},
    "out_aliases": {
        "dataframe": "hits",
        "search_results_dataframe": "hits",
        "base_retriever": "store",
        "retrieve_data": "hits",
        "vector_store": "store",
    },
}
_STORE_EXTRA = {
    "outputs": (
        _out("search_results", "Search Results", ("JSON",), "search_documents"),
        _out("dataframe", "Table", ("Table",), "as_dataframe", False),
        _out("vectorstoreconnection", "Vector Store Connection", ("VectorStore",), "as_vector_store", False),
    ),
    "handles": {"ingest_data": ("Data", "DataFrame", "Table"), "embedding": ("Embeddings",), "search_query": MESSAGE},
}
# One LangFlow Parser is either a row labeller (a pattern over table rows) or a stringifier: the "parser"
# hook decides from the pattern and what feeds it.
_PARSER: dict[str, Any] = {
    "hook": "parser",
    "display": "Parser",
    "params": (
        Param("template", "pattern", widget="MultilineInput"),
        Param("separator", "sep", "\n", to_ours=lambda v: unescape(v) if v else "\n", widget="MessageTextInput"),
    ),
    "extra": {
        "outputs": (_out("parsed_text", "Parsed Text", MESSAGE, "parse_combined_text"),),
        "handles": {"input_data": ("DataFrame", "Table", "Data", "JSON")},
    },
}
_EMBEDDINGS_OUT: dict[str, Any] = {"outputs": {"embedder": "embeddings"}}
# An agent's own model: our node family and the provider when none is named; the node its playground
# message comes from.
_AGENT_EXTRA: dict[str, Any] = {"model": ("llm", "openai"), "message": "chat.input"}
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
        Adapter("loader.file", "File", hook="file", outputs={"records": "dataframe"}, display="Read File",
                extra={"outputs": (_out("dataframe", "Structured Content", ("Table",), "load_files_structured"),
                                   _out("message", "Raw Content", MESSAGE, "load_files_message", False))},
                out_aliases={n: "records" for n in ("json", "table", "message", "data", "text", "data_list")},
                ignore=("path", "separator")),
        Adapter("splitter.character", "SplitText", display="Split Text",
                params=(Param("separator", "separator", "\n", to_ours=lambda v: unescape(v) if v else "\n",
                              widget="MessageTextInput"),
                        _int_param("chunk_size", "chunk_size", 1000),
                        _int_param("chunk_overlap", "chunk_overlap", 200),
                        Param("keep_separator", "keep_separator", "False", to_ours=_keep_separator_in,
                              to_theirs=_keep_separator_out, widget="DropdownInput")),
                inputs={"documents": "data_inputs"}, outputs={"chunks": "dataframe"},
                in_aliases={"data_input": "documents"}, out_aliases={"chunks": "chunks", "data": "chunks"},
                fixed={"text_key": "text"},
                extra={"outputs": (_out("dataframe", "Chunks", ("Table",), "split_text"),),
                       "handles": {"data_inputs": DATA_IN}}),
        Adapter("splitter.recursive", "RecursiveCharacterTextSplitter", display="Recursive Character Text Splitter",
                params=(_int_param("chunk_size", "chunk_size", 1000),
                        _int_param("chunk_overlap", "chunk_overlap", 200),
                        Param("separators", "separators", to_ours=_separators)),
                inputs={"documents": "data_input"}, outputs={"chunks": "data"},
                in_aliases={"data_inputs": "documents", "documents": "documents"}, out_aliases={"chunks": "chunks"},
                extra={"outputs": (_out("data", "Data", ("Data",), "split_data"),),
                       "handles": {"data_input": ("Document", "Data", "Table", "DataFrame")}}),
        # One LangFlow Parser is either a row labeller (a pattern over table rows) or a stringifier: the
        # "parser" hook decides from the pattern and what feeds it.
        Adapter("labeller.row", "ParserComponent", also=("parser", "ParseData"), inputs={"records": "input_data"},
                outputs={"records": "parsed_text"}, in_aliases={"data": "records"}, out_aliases={"text": "records"},
                **_PARSER),
        Adapter("parser.stringify", "ParserComponent", imports=False, inputs={"items": "input_data"},
                outputs={"text": "parsed_text"}, in_aliases={"data": "items"}, out_aliases={"text": "text"},
                **_PARSER),
        Adapter("util.passthrough", "TypeConverterComponent", display="Type Convert",
                inputs={"value": "input_data"}, outputs={"value": "message_output"},
                out_aliases={"data_output": "value", "dataframe_output": "value"},
                ignore=("output_type", "auto_parse"),
                extra={"outputs": (_out("message_output", "Message Output", MESSAGE, "convert_to_message"),),
                       "handles": {"input_data": ("Message", "Data", "DataFrame", "JSON", "Table")}}),
        Adapter("vectorstore.chroma", "Chroma", also=("ChromaVectorStoreComponent",), display="Chroma DB",
                **_STORE_PORTS,
                params=(Param("collection", "collection_name", to_ours=nonempty_str),
                        Param("persist_directory", "persist_directory", to_ours=to_str),
                        _int_param("k", "number_of_results", 4),
                        Param("server_host", "chroma_server_host", to_ours=nonempty_str),
                        Param("server_port", "chroma_server_http_port", to_ours=positive_int,
                              widget="IntInput", kind="int")),
                ignore=("chroma_server_grpc_port", "chroma_server_ssl_enabled", "search_type", "allow_duplicates",
                        "chroma_server_cors_allow_origins", "limit"),
                extra=_STORE_EXTRA),
        Adapter("vectorstore.qdrant", "Qdrant", also=("QdrantVectorStoreComponent",), display="Qdrant",
                **_STORE_PORTS,
                params=(Param("collection", "collection_name", to_ours=nonempty_str),
                        Param("url", "url", to_ours=nonempty_str),
                        Param("path", "path", to_ours=nonempty_str),
                        _int_param("k", "number_of_results", 4)),
                preset={"search": "dense"},  # LangFlow's Qdrant searches dense vectors only
                ignore=("host", "port", "grpc_port", "prefix", "timeout", "distance_func", "content_payload_key",
                        "metadata_payload_key", "search_type"),
                extra={**_STORE_EXTRA, "secret": "api_key"}),
        Adapter("vectorstore.pinecone", "Pinecone", also=("PineconeVectorStoreComponent",), display="Pinecone",
                **_STORE_PORTS,
                params=(Param("index", "index_name", to_ours=to_str),
                        Param("namespace", "namespace", to_ours=to_str),
                        _int_param("k", "number_of_results", 4),
                        Param("metric", "distance_strategy", "Cosine", to_ours=_metric_in, to_theirs=_metric_out,
                              widget="DropdownInput")),
                extra={**_STORE_EXTRA, "secret": "pinecone_api_key"}, local=offline_store("index", "namespace")),
        Adapter("embedder.openai", "OpenAIEmbeddings", also=("OpenAIEmbeddingsComponent",),
                display="OpenAI Embeddings", **_EMBEDDINGS_OUT,
                params=(Param("model", "model", "text-embedding-3-small", widget="DropdownInput"),
                        Param("dimensions", "dimensions", to_ours=positive_int, to_theirs=lambda v: v or 0,
                              widget="IntInput", kind="int"),
                        Param("base_url", "openai_api_base", to_ours=nonempty_str, widget="MessageTextInput")),
                extra={"outputs": (_out("embeddings", "Embedding Model", ("Embeddings",), "build_embeddings"),),
                       "secret": "openai_api_key"}, local=OFFLINE_EMBEDDER, providers=("openai",)),
        Adapter("embedder.ollama", "OllamaEmbeddings", also=("OllamaEmbeddingsComponent",),
                display="Ollama Embeddings", **_EMBEDDINGS_OUT,
                params=(Param("model", "model_name", "nomic-embed-text", widget="DropdownInput"),
                        Param("model", "model", export=False),
                        Param("base_url", "base_url", to_ours=nonempty_str, widget="MessageTextInput")),
                extra={"outputs": (_out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),)},
                local=OFFLINE_EMBEDDER, providers=("ollama",)),
        Adapter("embedder.mistral", "MistalAIEmbeddings", also=("MistralAIEmbeddings", "MistralAIEmbeddingsComponent"),
                display="MistralAI Embeddings", **_EMBEDDINGS_OUT,
                params=(Param("model", "model", "mistral-embed", widget="DropdownInput"),
                        Param("base_url", "endpoint", to_ours=_mistral_endpoint, widget="MessageTextInput"),
                        Param("timeout", "timeout", to_ours=lambda v: to_float(v) or None, widget="IntInput",
                              kind="int")),
                ignore=("max_concurrent_requests", "max_retries"),
                extra={"outputs": (_out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),),
                       "secret": "mistral_api_key"}, local=OFFLINE_EMBEDDER,
                providers=("mistral", "mistralai")),
        Adapter("embedder.cohere", "CohereEmbeddings", also=("CohereEmbeddingsComponent",),
                display="Cohere Embeddings", **_EMBEDDINGS_OUT,
                params=(Param("model", "model_name", "embed-english-v2.0", widget="DropdownInput"),
                        Param("timeout", "request_timeout", to_ours=lambda v: to_float(v) or None,
                              widget="FloatInput", kind="float")),
                ignore=("truncate", "max_retries", "user_agent"),
                extra={"outputs": (_out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),),
                       "secret": "api_key"}, local=OFFLINE_EMBEDDER),
        # The offline MiniLM embedder's nearest LangFlow component: Ollama's all-minilm.
        Adapter("embedder.local", "OllamaEmbeddings", display="Ollama Embeddings", imports=False, **_EMBEDDINGS_OUT,
                fixed={"model_name": "all-minilm", "base_url": "http://127.0.0.1:11434"},
                note="embedder.local has no LangFlow component: exported as Ollama embeddings with all-minilm "
                "(the same MiniLM model; run `ollama pull all-minilm`)",
                extra={"outputs": (_out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),)}),
        Adapter("prompt.template", "Prompt Template", also=("Prompt",), hook="prompt", display="Prompt Template",
                outputs={"prompt": "prompt"}, params=(Param("template", "template", widget="PromptInput",
                                                            kind="prompt"),),
                extra={"outputs": (_out("prompt", "Prompt", MESSAGE, "build_prompt"),)}),
        Adapter("llm.openai", "OpenAIModel", also=("OpenAIModelComponent",), display="OpenAI", **_LLM_PORTS,
                params=(*_LLM_PARAMS, Param("base_url", "openai_api_base", to_ours=_api_base,
                                            widget="MessageTextInput")), local=OFFLINE_CHAT, providers=("openai",)),
        Adapter("llm.groq", "GroqModel", display="Groq", **_LLM_PORTS,
                params=(*_LLM_PARAMS, Param("base_url", "base_url", to_ours=_api_base, widget="MessageTextInput")),
                local=OFFLINE_CHAT, providers=("groq",)),
        Adapter("llm.ollama", "OllamaModel", also=("ChatOllamaComponent",), display="Ollama", **_LLM_PORTS,
                providers=("ollama",),
                params=(*_LLM_PARAMS, Param("base_url", "base_url", to_ours=_api_base, widget="MessageTextInput"))),
        Adapter("llm.mistral", "MistralModel", also=("MistralAIModelComponent",), display="MistralAI", **_LLM_PORTS,
                params=(*_LLM_PARAMS, Param("base_url", "mistral_api_base", to_ours=_mistral_endpoint,
                                            widget="MessageTextInput")), local=OFFLINE_CHAT,
                providers=("mistral", "mistralai")),
        # LangFlow's Cohere Rerank (an LCCompressorComponent): the store's results and the question in,
        # the best top_n out.
        Adapter("reranker.cohere", "CohereRerank", also=("CohereRerankComponent",),
                display="Cohere Rerank",
                params=(Param("model", "model", "rerank-english-v3.0", to_ours=nonempty_str, widget="DropdownInput"),
                        _int_param("keep", "top_n", 3)),
                inputs={"hits": "search_results", "query": "search_query"}, outputs={"hits": "reranked_documents"},
                extra={"outputs": (_out("reranked_documents", "Reranked Documents", ("JSON",), "compress_documents"),),
                       "handles": {"search_results": ("Data", "JSON"), "search_query": MESSAGE},
                       "secret": "api_key"}),
        # LangFlow's MCP Tools in tool mode: the "mcp" hook reads the server's command or URL from the
        # mcp_server value ({name, config}). Import only: tool.mcp exports as a FlowbuilderNode (lossless).
        Adapter("tool.mcp", "MCPTools", display="MCP Tools", hook="mcp", export=False,
                outputs={"tool": "component_as_tool"},
                ignore=("mcp_server", "tool", "tool_placeholder", "tools_metadata", "tool_mode"),
                replace="tool.mcp (the export names a server in LangFlow's MCP settings only: set its command or URL)",
                extra={"outputs": (_out("component_as_tool", "Toolset", ("Tool",), "to_toolkit"),)}),
        # LangFlow's Agent carries its own model (provider + model name): the "agent" hook makes it an
        # llm node wired into the agent's model port, as LangFlow would have called it.
        Adapter("agent.tools", "Agent", display="Agent", hook="agent", export=False, extra=_AGENT_EXTRA,
                inputs={"message": "input_value", "tools": "tools", "memory": "memory", "model": "agent_llm"},
                outputs={"answer": "response"}, out_aliases={"structured_response": "answer"},
                params=(Param("system_message", "system_prompt", to_ours=nonempty_str),
                        Param("max_steps", "max_iterations", to_ours=lambda v: min(max(to_int(v) or 5, 1), 50))),
                ignore=("add_calculator_tool", "handle_parsing_errors", "n_messages", "stream", "verbose",
                        "format_instructions", "output_schema", "base_url_ibm_watsonx", "agent_description",
                        "model_name", "agent_llm", "model", "temperature", "max_tokens", "json_mode", "seed",
                        "openai_api_base", "timeout", "max_retries", "project_id", "output_parser", "sender",
                        "sender_name", "session_id", "should_store_message", "context_id")),
        # Pre-1.0 agents over a described store: the store's "info" is the search tool the agent gets.
        Adapter("agent.tools", "VectorStoreAgent", display="VectorStoreAgent", hook="agent", export=False,
                extra=_AGENT_EXTRA,
                inputs={"model": "llm", "tools": "vectorstoreinfo", "message": "input_value"},
                outputs={"answer": "AgentExecutor"}, out_aliases={"AgentExecutor": "answer"},
                ignore=("handle_parsing_errors", "verbose", "max_iterations")),
        Adapter("retriever.tool", "VectorStoreInfo", display="VectorStoreInfo", export=False,
                inputs={"store": "vectorstore"}, outputs={"tool": "VectorStoreInfo"},
                params=(Param("name", "vectorstore_name", to_ours=_tool_name),
                        Param("description", "vectorstore_description", to_ours=nonempty_str))),
        # The legacy (pre-1.0) chat model: its one output is the model an agent or chain takes.
        Adapter("llm.openai", "ChatOpenAI", display="ChatOpenAI", export=False,
                params=(Param("model", "model_name", to_ours=nonempty_str),
                        Param("temperature", "temperature", to_ours=to_float),
                        Param("max_tokens", "max_tokens", to_ours=positive_int),
                        Param("base_url", "openai_api_base", to_ours=_api_base)),
                outputs={"model": "model_output"},
                out_aliases={"ChatOpenAI": "model", "BaseChatModel": "model", "BaseLanguageModel": "model"},
                ignore=("model_kwargs", "n", "streaming", "verbose", "cache", "callbacks", "tags", "metadata"),
                extra={"secret": "openai_api_key"}),
        # A folder of files: loader.file reads every supported file directly in a folder (under the roots a
        # run allows); the "directory" hook keeps the folder's name, not the exporter's absolute path.
        Adapter("loader.file", "Directory", display="Directory", hook="directory", export=False,
                outputs={"records": "dataframe"}, out_aliases={"data": "records", "as_dataframe": "records"},
                ignore=("path", "types", "depth", "max_concurrency", "load_hidden", "recursive", "silent_errors",
                        "use_multithreading")),
        # Web pages: loader.url fetches them behind the egress check (each server approved first); the
        # "url" hook carries the URLs. --local (offline) reads the run's file instead, as before.
        Adapter("loader.url", "URL", also=("WebBaseLoader",), display="URL", hook="url", export=False,
                local=Local("loader.file", fixed=(("mode", "whole"),),
                            detail=" (offline: no page is fetched; save the page's text and give it as the run's "
                                   "file)"),
                outputs={"records": "data"}, out_aliases={"text": "records", "dataframe": "records",
                                                          "Document": "records", "page_results": "records"},
                ignore=("urls", "web_path", "format", "max_depth", "prevent_outside", "use_async", "timeout",
                        "headers", "filter_text_html", "continue_on_failure", "check_response_status",
                        "autoset_encoding")),
        Adapter("util.passthrough", "HtmlLinkExtractor", display="HTML Link Extractor", export=False,
                inputs={"value": "data_input"}, outputs={"value": "data"},
                ignore=("kind", "drop_fragments"),
                note="HTML Link Extractor: links between pages are not followed; the documents go on unchanged"),
        # LangFlow 1.5+'s provider-neutral model components: the "provider" hook picks our node by the
        # provider of the chosen model.
        Adapter("llm.openai", "LanguageModelComponent", display="Language Model", hook="provider", export=False,
                inputs={"prompt": "input_value", "system": "system_message"},
                outputs={"answer": "text_output", "model": "model_output"},
                params=(Param("temperature", "temperature", to_ours=to_float),
                        Param("system_message", "system_message", to_ours=nonempty_str)),
                ignore=("model", "stream", "base_url_ibm_watsonx", "project_id", "api_key", "provider",
                        "model_name", "ollama_base_url")),
        Adapter("embedder.openai", "EmbeddingModel", display="Embedding Model", hook="provider", export=False,
                outputs={"embedder": "embeddings"},
                ignore=("model", "base_url_ibm_watsonx", "chunk_size", "dimensions", "input_text", "max_retries",
                        "show_progress_bar", "truncate_input_tokens", "request_timeout", "api_key", "provider",
                        "model_name", "api_base", "project_id", "model_kwargs", "ollama_base_url")),
        # Structured Output: its schema's fields become extract.fields' fields; its model is wired in.
        Adapter("extract.fields", "StructuredOutput", display="Structured Output", export=False,
                inputs={"text": "input_value", "model": "llm"}, outputs={"records": "structured_output"},
                out_aliases={"structured_output_dataframe": "records", "dataframe_output": "records"},
                params=(Param("fields", "output_schema", to_ours=schema_fields),
                        Param("instructions", "system_prompt", to_ours=nonempty_str)),
                ignore=("multiple", "schema_name"),
                note="Structured Output: its fields are asked of the model; with no model reachable they are "
                "looked up by name in the text (the node's warning says how many were found)"),
        Adapter("chat.input", "TextInput", display="Text Input", outputs={"message": "text"}, export=False,
                params=(Param("text", "input_value", to_ours=nonempty_str),)),
        Adapter("splitter.recursive", "LanguageRecursiveTextSplitter", export=False,
                params=(_int_param("chunk_size", "chunk_size", 1000), _int_param("chunk_overlap", "chunk_overlap",
                                                                                 200)),
                inputs={"documents": "data_input"}, outputs={"chunks": "data"}, ignore=("code_language",),
                note="a language-aware splitter: split here with the recursive splitter's default separators"),
        Adapter("chat.input", "ChatInput", display="Chat Input", outputs={"message": "message"},
                params=(Param("text", "input_value", to_ours=nonempty_str, widget="MultilineInput"),),
                extra={"outputs": (_out("message", "Chat Message", MESSAGE, "message_response"),)}),
        Adapter("chat.output", "ChatOutput", display="Chat Output", inputs={"message": "input_value"},
                outputs={"message": "message"},
                extra={"outputs": (_out("message", "Output Message", MESSAGE, "message_response"),),
                       "handles": {"input_value": DATA_IN}}),
        # -- kept: components we do not run, imported as placeholders that name what replaces them ----------
        *[Adapter(PLACEHOLDER, theirs, export=False, hits=True, replace=f"vectorstore.chroma (--local swaps {how})",
                  local=offline_store(field), provider="astra" if theirs == "AstraDB" else "")
          for theirs, field, how in _SWAPPED_STORES],
        *[Adapter(PLACEHOLDER, theirs, export=False, hits=True)
          for theirs in ("FAISS", "Weaviate", "Milvus", "Redis", "MongoDBAtlasVector", "FaissVectorStoreComponent",
                         "WeaviateVectorStoreComponent", "MilvusVectorStoreComponent", "RedisVectorStoreComponent",
                         "MongoVectorStoreComponent")],
        Adapter(PLACEHOLDER, "CohereModel", also=("CohereComponent",), export=False, replace="llm.ollama (--local)",
                local=OFFLINE_CHAT, provider="cohere"),
        Adapter(PLACEHOLDER, "GoogleGenerativeAIEmbeddings", export=False, local=OFFLINE_EMBEDDER),
    ],
    original_param=_original_param,
)
# fmt: on
