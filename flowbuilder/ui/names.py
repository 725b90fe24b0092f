"""Names people know: a display name for every node type and the names n8n and LangFlow use for it, so
the palette reads "Vector Store Retriever" (type id in small print) and a search for "Split Text",
"LLM" or "chat" finds the node. A node class's own ``display_name``/``aliases`` win over this table,
which covers the built-ins without touching their modules. Plain Python (no NiceGUI)."""

from __future__ import annotations

from flowbuilder.registry import NodeClass

# type -> (display name, aliases)
KNOWN: dict[str, tuple[str, tuple[str, ...]]] = {
    "input.file": ("File Input", ("On form submission", "Form Trigger", "upload", "file upload")),
    "chat.input": ("Chat Input", ("When chat message received", "Chat Trigger", "chat", "message", "user input")),
    "chat.output": ("Chat Output", ("chat", "Respond to Chat", "answer", "output")),
    "loader.file": ("Read File", ("File", "Default Data Loader", "document loader", "csv", "pdf", "load")),
    "labeller.row": ("Label Rows", ("Parser", "row template", "format rows")),
    "parser.stringify": ("Parser (to text)", ("Parser", "Parse Data", "Data to Message", "combine", "to text")),
    "splitter.recursive": ("Recursive Text Splitter", ("Split Text", "Recursive Character Text Splitter", "chunk")),
    "splitter.character": ("Character Text Splitter", ("Split Text", "chunk", "separator")),
    "splitter.markdown": ("Markdown Splitter", ("Split Text", "Markdown Header Text Splitter", "chunk")),
    "splitter.record": ("One Chunk per Record", ("Split Text", "chunk", "row")),
    "splitter.fixed": ("Fixed-size Splitter", ("Split Text", "Token Splitter", "chunk")),
    "splitter.sentence": ("Sentence Splitter", ("Split Text", "chunk")),
    "splitter.semantic": ("Semantic Splitter", ("Split Text", "Semantic Chunker", "chunk")),
    "splitter.parent_child": ("Parent-Child Splitter", ("Split Text", "Parent Document", "chunk")),
    "splitter.window": ("RAG Explorer Window Splitter", ("Split Text", "chunk", "window")),
    "embedder.local": ("Local Embeddings (MiniLM)", ("Embeddings", "embedding model", "HuggingFace Embeddings")),
    "embedder.ollama": ("Ollama Embeddings", ("Embeddings", "embedding model", "Embeddings Ollama")),
    "embedder.openai": ("OpenAI Embeddings", ("Embeddings", "embedding model", "Embeddings OpenAI")),
    "embedder.mistral": ("Mistral Embeddings", ("Embeddings", "embedding model", "Embeddings Mistral Cloud")),
    "embedder.wordllama": ("WordLlama Embeddings", ("Embeddings", "embedding model", "fast")),
    "vectorstore.chroma": ("Chroma Vector Store", ("Chroma DB", "vector store", "vector db", "database", "index")),
    "vectorstore.pinecone": ("Pinecone Vector Store", ("Pinecone", "vector store", "vector db", "database")),
    "vectorstore.qdrant": ("Qdrant Vector Store", ("Qdrant", "vector store", "vector db", "database")),
    "retriever.vector": ("Vector Store Retriever", ("retriever", "similarity search", "search", "vector store")),
    "retriever.tool": ("Vector Store Tool", ("Answer questions with a vector store", "retriever tool", "tool")),
    "retriever.keyword": ("Keyword Retriever (BM25)", ("BM25", "keyword search", "full-text", "retriever")),
    "retriever.fusion": ("Hybrid Fusion (RRF)", ("hybrid search", "Ensemble Retriever", "reciprocal rank fusion")),
    "retriever.parents": ("Parent Document Retriever", ("retriever", "parent", "small-to-big")),
    "indexer.views": ("Multi-view Indexer", ("Multi Vector Retriever", "parent document", "index")),
    "query.rewrite": ("Query Rewriter", ("Multi Query Retriever", "rewrite", "HyDE", "LLM")),
    "reranker.llm": ("LLM Reranker", ("rerank", "reranker", "LLM")),
    "reranker.cohere": ("Cohere Rerank", ("rerank", "reranker", "Reranker Cohere")),
    "reranker.cross_encoder": ("Cross-encoder Reranker", ("rerank", "reranker", "cross encoder")),
    "prompt.template": ("Prompt Template", ("Prompt", "template")),
    "llm.openai": ("OpenAI Chat Model", ("LLM", "OpenAI", "chat model", "GPT", "model", "chat")),
    "llm.groq": ("Groq Chat Model", ("LLM", "Groq", "chat model", "model", "chat")),
    "llm.ollama": ("Ollama Chat Model", ("LLM", "Ollama", "chat model", "local model", "model", "chat")),
    "llm.mistral": ("Mistral Chat Model", ("LLM", "Mistral Cloud Chat Model", "chat model", "model", "chat")),
    "memory.window": ("Chat Memory", ("Simple Memory", "Window Buffer Memory", "Message History", "memory")),
    "agent.tools": ("AI Agent", ("Agent", "Tool Calling Agent", "tools agent", "chat")),
    "tool.mcp": ("MCP Tool", ("MCP Client Tool", "MCP", "tool")),
    "util.passthrough": ("Pass Through", ("No Operation", "noop", "passthrough")),
    "placeholder.unsupported": ("Unsupported (imported)", ("placeholder", "imported")),
}


def display_name(cls: NodeClass) -> str:
    own = getattr(cls, "display_name", "")
    if own:
        return str(own)
    if cls.type_name in KNOWN:
        return KNOWN[cls.type_name][0]
    # "reranker.cross_encoder" -> "Cross Encoder Reranker": the tail names the kind, the head the family
    head, _, tail = cls.type_name.partition(".")
    words = (tail or head).replace("_", " ").title()
    return f"{words} {head.title()}" if tail else words


def aliases(cls: NodeClass) -> tuple[str, ...]:
    own = tuple(getattr(cls, "aliases", ()) or ())
    return own + KNOWN.get(cls.type_name, ("", ()))[1]


def search_text(cls: NodeClass) -> str:
    """Everything a search matches: name, type id, category, description and aliases (lower case)."""
    return " ".join((display_name(cls), cls.type_name, cls.category, cls.description(), *aliases(cls))).lower()


def matches(cls: NodeClass, query: str) -> bool:
    """Every word of the query appears somewhere (so "vector store" and "Split Text" both work)."""
    haystack = search_text(cls)
    return all(word in haystack for word in query.lower().split())


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    index = 2
    while f"{name} {index}" in taken:
        index += 1
    return f"{name} {index}"
