"""The Dify mapping table: one :class:`Adapter` per Dify node type, model provider and pipeline tool.

Each node type's Dify entries sit next to it, in its class's ``mappings["dify"]`` (this module's
helpers are imported there as ``DF``); the table reads them from the registry after its own entries, the
nodes we keep as placeholders.

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


MODEL_PARAMS = (
    Param("model", "name", to_ours=nonempty_str),
    Param("temperature", "completion_params.temperature", to_ours=to_float),
    Param("max_tokens", "completion_params.max_tokens", to_ours=positive_int),
)
ROUTE = "its conditions are never evaluated: every branch it chose between is kept"

# fmt: off
DIFY_TABLE = Table(
    "dify",
    [
        # -- workflow and chatflow nodes (the hooks read the variables each one gives and takes)
        # -- Knowledge Pipeline: datasource -> extractor -> chunker -> knowledge index
        # -- the Dify knowledge base (referenced by id): kept; --local swaps in Chroma filled from your file
        Adapter(PLACEHOLDER, "knowledge-retrieval", hook="retrieval", export=False, hits=True,
                local=offline_store("dataset_ids"), replace=KB_REPLACE),
        Adapter(PLACEHOLDER, "knowledge-index", hook="index", export=False, hits=True,
                local=offline_store("dataset_ids", "dataset_id"), replace=KB_REPLACE),
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
        *[Adapter(PLACEHOLDER, f"model:{p}", export=False, local=OFFLINE_CHAT, replace="llm.ollama (--local)")
          for p in _CLOUD_CHAT],
        # -- embedding models of a Knowledge Pipeline's index
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
