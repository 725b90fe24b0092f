"""The Dify mapping table: one :class:`Adapter` per Dify node type, model provider and pipeline tool.

``theirs`` is a workflow node's ``data.type`` (``knowledge-retrieval``, ``llm``...); a model is
``model:<provider>`` (the provider of an ``llm`` node's ``model`` or a chat app's ``model_config.model``), an
embedding model ``embedding:<provider>`` (a Knowledge Pipeline's index), a pipeline tool
``tool:<tool_name>`` (the extractor and chunker plugins). Params map to dotted paths inside the node's
``data`` (or the model block). Dify wires data by variable reference (``{{#node.var#}}``, selectors), not by
edge, so the ports here name the *variables* a node gives (``outputs``: our port -> their variable) and
takes (``inputs``: our port -> their selector field); the engine (``dify.py``) resolves references.

A Dify knowledge base lives on the Dify server (referenced by id): it is a kept entry that ``--local``
swaps for an embedded Chroma collection, which the run fills from a file the user gives.
"""

from __future__ import annotations

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

NOTE_TYPES = ("custom-note",)
# What the engine adds for a Dify app: the chat message, an answer, a prompt (an llm node's messages).
CHAT_IN = "chat.input"
CHAT_OUT = "chat.output"
PROMPT = "prompt.template"
"""A Dify canvas note: the node's ``type`` (its ``data.type`` is empty)."""
KB_REPLACE = (
    "vectorstore.chroma (a Dify knowledge base lives on the Dify server: --local swaps in an embedded Chroma "
    "collection that the run fills from a file you give)"
)
# Chat model providers we have no node for: offline, --local swaps in the local model.
_CLOUD_CHAT = (
    "anthropic", "azure_openai", "bedrock", "gemini", "google", "vertex_ai", "deepseek", "siliconflow", "tongyi",
    "zhipuai", "moonshot", "minimax", "baichuan", "wenxin", "spark", "hunyuan", "volcengine_maas", "openrouter",
    "openai_api_compatible", "xinference", "localai", "x", "cohere", "togetherai", "fireworks", "perplexity",
    "nvidia", "replicate", "huggingface_hub", "leptonai", "novita", "yi", "stepfun", "upstage", "chatglm",
    "triton_inference_server", "gpustack", "vllm", "lm_studio", "other",
)  # fmt: skip
_CLOUD_EMBEDDINGS = (
    "azure_openai", "bedrock", "gemini", "google", "vertex_ai", "siliconflow", "tongyi", "zhipuai", "jina",
    "voyage", "baichuan", "wenxin", "xinference", "localai", "openai_api_compatible", "huggingface_hub",
    "huggingface_tei", "nvidia", "volcengine_maas", "hunyuan", "minimax", "text-embedding-inference", "other",
)  # fmt: skip


def _kb_name(value: Any) -> str | None:
    """A knowledge base's collection name from its id (a list of ids: the first)."""
    ident = value[0] if isinstance(value, list) and value else value
    text = "".join(c for c in str(ident or "") if c.isalnum())[:12]
    return f"dify_kb_{text}" if text else None


def _original_param(original: Mapping[str, Any], name: str) -> Any:
    """A field of a kept node's original Dify JSON (``data.<name>``); ``dataset_ids`` as a collection name."""
    data = original.get("data") if isinstance(original.get("data"), dict) else original
    value = data.get(name) if isinstance(data, dict) else None
    return _kb_name(value) if name in ("dataset_ids", "dataset_id") else value


_MODEL_PARAMS = (
    Param("model", "name", to_ours=nonempty_str),
    Param("temperature", "completion_params.temperature", to_ours=to_float),
    Param("max_tokens", "completion_params.max_tokens", to_ours=positive_int),
)
_ROUTE = "its conditions are never evaluated: every branch it chose between is kept"

# fmt: off
DIFY_TABLE = Table(
    "dify",
    [
        # -- workflow and chatflow nodes (the hooks read the variables each one gives and takes)
        Adapter("chat.input", "start", hook="start", outputs={"message": "sys.query"}, export=False,
                ignore=("variables",)),
        Adapter("prompt.template", "llm", hook="llm", export=False, outputs={"prompt": "text"},
                ignore=("model", "prompt_template", "context", "memory", "vision", "variables", "structured_output",
                        "structured_output_enabled", "reasoning_format")),
        Adapter("chat.output", "answer", hook="answer", export=False, inputs={"message": "answer"}),
        Adapter("chat.output", "end", hook="end", export=False, inputs={"message": "outputs"}),
        Adapter("prompt.template", "template-transform", hook="template", export=False, outputs={"prompt": "output"}),
        Adapter("loader.file", "document-extractor", hook="extractor", export=False, outputs={"records": "text"},
                inputs={"path": "variable_selector"}),
        Adapter("util.passthrough", "variable-aggregator", also=("variable-assigner",), hook="aggregate",
                export=False, note="absorbed: whichever of its variables a run provides goes on (alternatives)"),
        Adapter("util.passthrough", "if-else", also=("question-classifier",), hook="route", export=False,
                note="absorbed: " + _ROUTE),
        Adapter("util.passthrough", "iteration", also=("loop",), hook="loop", export=False,
                note="folded into one pass over all items (our nodes take whole lists)"),
        Adapter("util.passthrough", "iteration-start", also=("loop-start", "loop-end", "assigner", "list-operator"),
                hook="route", export=False, note="absorbed: it only steers the run"),
        # -- Knowledge Pipeline: datasource -> extractor -> chunker -> knowledge index
        Adapter("loader.file", "datasource", hook="datasource", export=False, outputs={"records": "file"}),
        Adapter("util.passthrough", "tool:dify_extractor", also=("tool:general_extractor", "tool:unstructured",
                                                                 "tool:mineru", "tool:jina_reader"),
                hook="extractor_tool", export=False,
                note="absorbed: the loader reads the file's text itself"),
        Adapter("splitter.recursive", "tool:general_chunker", hook="chunker", export=False,
                outputs={"chunks": "result"},
                params=(Param("chunk_size", "max_chunk_length", 1024, to_ours=positive_int),
                        Param("chunk_overlap", "chunk_overlap_length", 50,
                              to_ours=lambda v: max(positive_int(v) or 0, 0)),
                        Param("separators", "delimiter", to_ours=lambda v: [unescape(v), "\n", " ", ""]
                              if nonempty_str(v) else None))),
        Adapter("splitter.parent_child", "tool:parentchild_chunker", hook="chunker", export=False,
                outputs={"chunks": "result"}),
        Adapter("splitter.recursive", "tool:qa_chunker", hook="chunker", export=False, outputs={"chunks": "result"},
                note="a question-and-answer chunker: split here by the recursive splitter (no Q&A pairs)"),
        # -- the Dify knowledge base (referenced by id): kept; --local swaps in Chroma filled from your file
        Adapter(PLACEHOLDER, "knowledge-retrieval", hook="retrieval", export=False, hits=True,
                local=offline_store("dataset_ids"), replace=KB_REPLACE),
        Adapter(PLACEHOLDER, "knowledge-index", hook="index", export=False, hits=True,
                local=offline_store("dataset_ids", "dataset_id"), replace=KB_REPLACE),
        # The ports a swapped knowledge base has (what --local rewires its placeholder's links onto).
        Adapter("vectorstore.chroma", "dataset", imports=False, export=False,
                inputs={"documents": "documents", "embedder": "embedder", "query": "query"},
                outputs={"hits": "result", "store": "store"}),
        # -- code, HTTP and tools: kept, never run (a code node's one input may pass through: see the engine)
        Adapter(PLACEHOLDER, "code", hook="code", export=False,
                replace="nodes that do what it does (its code is never run here)"),
        *[Adapter(PLACEHOLDER, theirs, export=False, hook="kept", replace=why)
          for theirs, why in (("http-request", "loader.url or tool.http (Flowbuilder does not call APIs itself)"),
                              ("tool", "a Flowbuilder node that does the same"),
                              ("agent", "agent.tools with the tools it uses"),
                              ("parameter-extractor", "extract.fields"),
                              ("knowledge-retrieval-trigger", ""))],
        # -- models: an llm node's model block, a chat app's model_config.model
        Adapter("llm.openai", "model:openai", params=_MODEL_PARAMS, export=False, local=OFFLINE_CHAT,
                providers=("openai",)),
        Adapter("llm.ollama", "model:ollama", params=_MODEL_PARAMS, export=False, providers=("ollama",)),
        Adapter("llm.mistral", "model:mistralai", also=("model:mistral",), params=_MODEL_PARAMS, export=False,
                local=OFFLINE_CHAT, providers=("mistral", "mistralai")),
        Adapter("llm.groq", "model:groq", params=_MODEL_PARAMS, export=False, local=OFFLINE_CHAT,
                providers=("groq",)),
        *[Adapter(PLACEHOLDER, f"model:{p}", export=False, local=OFFLINE_CHAT, replace="llm.ollama (--local)")
          for p in _CLOUD_CHAT],
        # -- embedding models of a Knowledge Pipeline's index
        Adapter("embedder.openai", "embedding:openai", params=(Param("model", "model", to_ours=nonempty_str),),
                export=False, local=OFFLINE_EMBEDDER),
        Adapter("embedder.ollama", "embedding:ollama", params=(Param("model", "model", to_ours=nonempty_str),),
                export=False, local=OFFLINE_EMBEDDER),
        Adapter("embedder.cohere", "embedding:cohere", params=(Param("model", "model", to_ours=nonempty_str),),
                export=False, local=OFFLINE_EMBEDDER),
        Adapter("embedder.mistral", "embedding:mistralai", params=(Param("model", "model", to_ours=nonempty_str),),
                export=False, local=OFFLINE_EMBEDDER),
        *[Adapter(PLACEHOLDER, f"embedding:{p}", export=False, local=OFFLINE_EMBEDDER,
                  replace="embedder.local (--local)")
          for p in _CLOUD_EMBEDDINGS],
        # An online data source (Notion, a web crawl, a drive) of a Knowledge Pipeline.
        Adapter(PLACEHOLDER, "datasource:online", export=False, replace="loader.file (--local reads the run's file)",
                local=Local("loader.file", detail=" (offline: give the pages or files it fetched as the run's file)")),
    ],
    original_param=_original_param,
)
# fmt: on


def provider_key(provider: Any) -> str:
    """``langgenius/openai/openai`` (a plugin id) or ``openai`` -> ``openai``; empty -> ``other``."""
    text = str(provider or "").strip().lower()
    if "/" in text:
        text = text.split("/")[-1]
    return text or "other"
