"""How retrieved hits read inside a prompt, and how much of them a prompt's context budget keeps.

A prompt node (``prompt.template``, any node with :attr:`~flowbuilder.capabilities.Capability.RENDERS_PROMPT`)
renders a list of hits as numbered passages with their source and score; with a
context budget (its ``context_chars``) it keeps only the first that-many characters of them. The
``hit@chars`` metric (:mod:`flowbuilder.evaluation.metrics`) judges the same text, so a strategy that
wins by stuffing more text into the prompt is measured at the budget the prompt really sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from flowbuilder.capabilities import Capability
from flowbuilder.data import Hit
from flowbuilder.registry import NodeRegistry, default_registry

if TYPE_CHECKING:
    from flowbuilder.flow import Flow

DEFAULT_CONTEXT_CHARS = 2_000
"""The budget ``hit@chars`` uses when the flow's prompt sets none."""
CUT_MARK = "\n[... cut at the context budget]"


def hit_label(hit: Hit) -> str:
    meta = hit.document.metadata
    parts = [f"source: {meta.get('source') or 'unknown'}"]
    if meta.get("record_id") is not None:
        parts.append(f"record {meta['record_id']}")
    elif meta.get("record_ids"):
        parts.append("records " + ", ".join(str(r) for r in meta["record_ids"]))
    elif meta.get("page") is not None:
        parts.append(f"page {meta['page']}")
    parts.append(f"score {hit.score:.2f}")
    return ", ".join(parts)


def hit_blocks(hits: Sequence[Hit]) -> list[tuple[int, int, int]]:
    """Per hit: ``(block start, text start, end)`` offsets in :func:`render_hits`' output."""
    spans: list[tuple[int, int, int]] = []
    offset = 0
    for number, hit in enumerate(hits, start=1):
        head = f"[{number}] ({hit_label(hit)})\n"
        start = offset
        text_start = start + len(head)
        end = text_start + len(hit.document.text)
        spans.append((start, text_start, end))
        offset = end + 2  # the blank line between passages
    return spans


def render_hits(hits: Sequence[Hit]) -> str:
    """``[1] (source: file.csv, record LOGIN-012, score 0.71)`` then the passage, per hit."""
    return "\n\n".join(f"[{number}] ({hit_label(hit)})\n{hit.document.text}" for number, hit in enumerate(hits, 1))


def cut_context(text: str, budget: int) -> str:
    """``text`` cut at ``budget`` characters (0 keeps everything), marked where it was cut."""
    if budget <= 0 or len(text) <= budget:
        return text
    return text[:budget] + CUT_MARK


def context_budget(flow: Flow, registry: NodeRegistry | None = None) -> int | None:
    """The context budget of the flow's prompt (the smallest of its enabled prompt nodes'), if any."""
    registry = registry or default_registry()
    budgets = []
    for spec in flow.nodes:
        if spec.disabled or not registry.has(spec.type, Capability.RENDERS_PROMPT):
            continue
        value = spec.config.get("context_chars")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            budgets.append(value)
    return min(budgets) if budgets else None
