"""A tiny help-centre corpus, a whole RAG flow over it (local MiniLM, embedded Chroma, llm.openai on the
fake server) and a fake "model" that answers each question in a scripted way: right, wrong, uncited,
wrongly cited, invented, refusing. Citation numbers are read from the real prompt, so a right answer
cites the chunk that really holds the fact, wherever retrieval ranked it."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from tests.fakes.llm_server import FakeLLMServer, Reply

ROWS = [
    (
        "SEC-1",
        "Backup codes",
        "When you turn on two-factor authentication you receive 10 recovery codes. Each works once.",
    ),
    ("PAY-1", "Refunds", "Refunds go back to the original card within 5 working days of the request."),
    (
        "ACC-1",
        "Deleting an account",
        "Delete an account under Settings > Privacy. Deletion becomes final after 30 days.",
    ),
    ("PAY-2", "Invoices", "Invoices are emailed on the first day of every month as PDF files."),
    ("SEC-2", "Passwords", "Passwords need at least 12 characters, including one number."),
    ("TEAM-1", "Seats", "The Team plan includes 5 seats; more seats cost 8 euros each per month."),
]

# (id, question, fact, gold, answerable, how the fake model answers)
QUESTIONS: list[tuple[str, str, str | None, list[str], bool, str]] = [
    ("q1", "How many backup codes do I get with 2FA?", "10 recovery codes", ["SEC-1"], True, "right"),
    ("q2", "How long until a refund reaches my card?", "5 working days", ["PAY-1"], True, "uncited"),
    ("q3", "When is a deleted account gone for good?", "30 days", ["ACC-1"], True, "wrong"),
    ("q4", "When do invoices arrive?", "first day of every month", ["PAY-2"], True, "wrongly cited"),
    ("q5", "What is the support phone number?", None, [], False, "invent"),
    ("q6", "Can I pay with crypto?", None, [], False, "refuse"),
    ("q7", "How long must a password be?", "at least 12 characters", ["SEC-2"], True, "out of range"),
    ("q8", "How many seats come with Team?", "5 seats", ["TEAM-1"], True, "refuse"),
]
EXPECTED = {
    "q1": "correct",
    "q2": "uncited",
    "q3": "wrong",
    "q4": "wrongly cited",
    "q5": "invented",
    "q6": "refused",
    "q7": "wrongly cited",
    "q8": "missed",
}
PROMPT = (
    "Answer using only the numbered context. Cite the chunk numbers like [1]. If the context does not hold "
    "the answer, say you don't know.\n\nContext:\n{context}\n\nQuestion: {question}\n\nAnswer:"
)


RAG_EDGES = [
    ("loader", "records", "labeller", "records"),
    ("labeller", "records", "splitter", "documents"),
    ("splitter", "chunks", "store", "documents"),
    ("embedder", "embedder", "store", "embedder"),
    ("store", "store", "retriever", "store"),
    ("question", "message", "retriever", "query"),
    ("retriever", "hits", "prompt", "context"),
    ("question", "message", "prompt", "question"),
    ("prompt", "prompt", "llm", "prompt"),
    ("llm", "answer", "answer", "message"),
]
"""The whole RAG path: rows labelled, one chunk each, embedded and stored; the question retrieves, the prompt
numbers the chunks, ``llm`` (a chat model, or anything with a ``prompt`` input and an ``answer``) answers."""


def write_corpus(folder: Path, base_url: str, collection: str, k: int = 3) -> tuple[Path, Path]:
    """help.csv, questions.jsonl and flow.json in ``folder``; returns (flow, questions)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "help.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "title", "text"])
        writer.writerows(ROWS)
    lines = []
    for qid, question, fact, gold, answerable, _ in QUESTIONS:
        item: dict[str, Any] = {"id": qid, "question": question, "gold": gold}
        if fact:
            item["fact"] = fact
        if not answerable:
            item["answerable"] = False
        lines.append(json.dumps(item))
    (folder / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    nodes = [
        {"id": "loader", "type": "loader.file", "config": {"path": "help.csv", "mode": "records"}},
        {"id": "labeller", "type": "labeller.row", "config": {"template": "{title}: {text}"}},
        {"id": "splitter", "type": "splitter.record", "config": {}},
        {"id": "embedder", "type": "embedder.local", "config": {}},
        {"id": "store", "type": "vectorstore.chroma", "config": {"collection": collection}},
        {"id": "question", "type": "chat.input", "config": {}},
        {"id": "retriever", "type": "retriever.vector", "config": {"k": k}},
        {"id": "prompt", "type": "prompt.template", "config": {"template": PROMPT}},
        {"id": "llm", "type": "llm.openai", "config": {"base_url": base_url, "max_retries": 0}},
        {"id": "answer", "type": "chat.output", "config": {}},
    ]
    flow = {
        "format": "flowbuilder",
        "version": 1,
        "name": "Help centre RAG",
        "nodes": nodes,
        "edges": edge_dicts(RAG_EDGES),
    }
    (folder / "flow.json").write_text(json.dumps(flow, indent=1), encoding="utf-8")
    return folder / "flow.json", folder / "questions.jsonl"


def edge_dicts(edges: list[tuple[str, str, str, str]]) -> list[dict[str, str]]:
    """(source, source port, target, target port) tuples as native flow edges."""
    return [{"source": s, "source_port": sp, "target": t, "target_port": tp} for s, sp, t, tp in edges]


def chunks_of(prompt: str) -> dict[int, str]:
    """The numbered chunks of a prompt rendered by prompt.template: ``[n] (source...)`` then the text."""
    parts = re.split(r"^\[(\d+)\] ", prompt, flags=re.MULTILINE)
    return {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


class ScriptedModel:
    """The fake server's responder: answers each question as QUESTIONS says; grades as a judge."""

    def __init__(self, judge_reply: str | None = None) -> None:
        self.judge_reply = judge_reply
        self.judged: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        text = str(messages[-1].get("content", ""))
        if any(m.get("content") == "You are a strict grader." for m in messages):
            self.judged.append(text)
            if self.judge_reply is not None:
                return Reply(self.judge_reply)
            invented = "555" in text
            score = 0.0 if invented else 1.0
            return Reply(json.dumps({"faithfulness": score, "correctness": score, "reason": "checked the chunks"}))
        question = re.search(r"Question: (.*)", text)
        asked = question.group(1).strip() if question else ""
        item = next(q for q in QUESTIONS if q[1] == asked)
        _, _, fact, _, _, how = item
        chunks = chunks_of(text)
        holder = next((n for n, chunk in chunks.items() if fact and fact.lower() in chunk.lower()), None)
        other = next((n for n in chunks if n != holder), 1)
        sentence = {
            "q1": "You get 10 recovery codes",
            "q2": "It takes 5 working days",
            "q3": "After 7 days",
            "q4": "On the first day of every month",
            "q5": "Call 555-0100",
            "q7": "At least 12 characters",
        }.get(item[0], "")
        if how == "right":
            return Reply(f"{sentence} [{holder}].")
        if how == "uncited":
            return Reply(f"{sentence}.")
        if how == "wrong":
            return Reply(f"{sentence} [{holder or 1}].")
        if how == "wrongly cited":
            return Reply(f"{sentence} [{other}].")
        if how == "invent":
            return Reply(f"{sentence}, any time [1].")
        if how == "out of range":
            return Reply(f"{sentence} [9].")
        return Reply("I don't know: the context does not mention it.")


def script(server: FakeLLMServer, judge_reply: str | None = None) -> ScriptedModel:
    model = ScriptedModel(judge_reply)
    server.responder = model
    return model
