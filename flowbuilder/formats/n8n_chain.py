"""The ``chain`` hook of the n8n exporter: a LangFlow-style RAG path kept as n8n's Q&A chain.

LangFlow (and our native flows) spell retrieval-augmented answering as chat input -> store query ->
[parser] -> prompt template -> chat model -> [chat output]. n8n has no prompt or parser node on that
path: its ``chainRetrievalQa`` takes the chat message, a retriever (``retrieverVectorStore`` over a
store in retrieve mode) and a model, and its system prompt holds ``{context}``. This module finds
such paths so the exporter can write the chain instead of dropping the prompt, parser and output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats import roles


@dataclass
class Chain:
    """A RAG path the n8n exporter folds into n8n's Question and Answer Chain."""

    prompt: NodeSpec
    llm: NodeSpec
    store: NodeSpec
    chat: NodeSpec
    context_var: str
    question_var: str
    k: int
    folded: list[NodeSpec] = field(default_factory=list)
    """Parsers, retrievers and chat outputs the chain stands for (no n8n node of their own)."""
    edges: set[str] = field(default_factory=set)
    """Keys of the flow edges the chain carries."""

    def system_prompt(self) -> str:
        """The prompt template as n8n's system prompt: the context variable becomes ``{context}``; lines
        with the question go (n8n sends the question as the user message)."""
        lines = [line for line in self.prompt.config.get("template", "").splitlines()
                 if f"{{{self.question_var}}}" not in line]  # fmt: skip
        text = "\n".join(lines).replace(f"{{{self.context_var}}}", "{context}").strip()
        return text if "{context}" in text else f"{text}\n\nContext:\n{{context}}".strip()


def find_chains(flow: Flow) -> list[Chain]:
    chains: list[Chain] = []
    for prompt in flow.nodes:
        if not roles.is_prompt(prompt.type):
            continue
        llm_edges = [e for e in _out(flow, prompt.id) if roles.chat_model(flow.node(e.target).type)]
        if len(llm_edges) != 1 or llm_edges[0].target_port != "prompt":
            continue
        llm = flow.node(llm_edges[0].target)
        context = question = None
        store: NodeSpec | None = None
        chat: NodeSpec | None = None
        folded: list[NodeSpec] = []
        edges = {llm_edges[0].key}
        k = 4
        for edge in _in(flow, prompt.id):
            source = flow.node(edge.source)
            if roles.is_chat_input(source.type):
                question, chat = edge.target_port, source
                edges.add(edge.key)
                continue
            hits_from = source
            path = [edge]
            if source.type == roles.STRINGIFY:
                feeders = _in(flow, source.id)
                if len(feeders) != 1:
                    continue
                folded.append(source)
                hits_from = flow.node(feeders[0].source)
                path.append(feeders[0])
            if hits_from.type == roles.RETRIEVER:
                stores = [e for e in _in(flow, hits_from.id) if e.target_port == "store"]
                if len(stores) != 1:
                    continue
                folded.append(hits_from)
                k = int(hits_from.config.get("k", 4))
                path += [e for e in _in(flow, hits_from.id)]
                hits_from = flow.node(stores[0].source)
            elif roles.store(hits_from.type):
                k = int(hits_from.config.get("k", 4))
            if roles.store(hits_from.type):
                context, store = edge.target_port, hits_from
                edges.update(e.key for e in path)
        if not (context and question and store and chat):
            continue
        edges.update(e.key for e in _in(flow, store.id) if e.source == chat.id)
        edges.update(e.key for e in _in(flow, prompt.id))
        for edge in _out(flow, llm.id):
            if edge.source_port == "answer" and roles.is_answer_output(flow.node(edge.target).type):
                folded.append(flow.node(edge.target))
                edges.add(edge.key)
        chains.append(Chain(prompt, llm, store, chat, context, question, k, folded, edges))
    return chains


def template_variables(template: str) -> list[str]:
    return re.findall(r"\{([A-Za-z_][A-Za-z0-9_ ]*)\}", template)


def _in(flow: Flow, node_id: str) -> list[Edge]:
    return [e for e in flow.edges if e.target == node_id]


def _out(flow: Flow, node_id: str) -> list[Edge]:
    return [e for e in flow.edges if e.source == node_id]
