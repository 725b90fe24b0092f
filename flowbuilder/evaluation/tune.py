"""Choose a flow's settings on one part of a question set and judge the choice on the other part.

``flowbuilder tune FLOW --questions Q.jsonl --vary NODE.FIELD=V1,V2 ...``:

1. The answerable questions are shuffled with a seed and split: the first ``split`` share is the
   *tuning* split, the rest the *held-out* split (questions without an answer are left out: they are
   never scored).
2. Every variant (:mod:`flowbuilder.evaluation.variants`) is evaluated on the tuning split only, and the
   best by the chosen metric wins (ties go to the variant listed first).
3. The winner and the flow as saved (the *untuned* flow) are evaluated on the held-out split, and
   paired with the significance module: a setting chosen on the questions it is judged on proves
   nothing, so only the held-out verdict says whether the tuning helped.

Every evaluation goes through :class:`FlowComparer`, so ingestion is shared through the embedding cache
and every variant keeps its own collection.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.context import DEFAULT_CONTEXT_CHARS, context_budget
from flowbuilder.evaluation.compare import (
    ComparisonError,
    FlowComparer,
    FlowEvaluation,
    FlowSource,
    PairComparison,
    ProgressHandler,
    compare_pair,
    metric_value,
    read_flow,
)
from flowbuilder.evaluation.metrics import Metrics, Relevance
from flowbuilder.evaluation.questions import Question
from flowbuilder.evaluation.significance import PairedTest, detected, mcnemar, verdict
from flowbuilder.evaluation.variants import build_variants
from flowbuilder.flow import Flow
from flowbuilder.formats.native import save_flow

TUNE_METRICS = ("mrr", "hit@k", "hit@chars")


@dataclass(frozen=True)
class Split:
    """The questions tuned on and the held-out ones reported on (seeded)."""

    tuning: list[Question]
    held_out: list[Question]
    seed: int
    share: float


def split_questions(questions: Sequence[Question], share: float, seed: int) -> Split:
    """The answerable questions shuffled with ``seed``; the first ``share`` of them tune, the rest judge."""
    if not 0 < share < 1:
        raise ComparisonError(f"the tuning split must be between 0 and 1 (e.g. 0.5), got {share}.")
    answerable = [q for q in questions if q.answerable]
    if len(answerable) < 4:
        raise ComparisonError(
            f"tune needs at least 4 questions with an answer (2 to tune on, 2 to judge on); the set has "
            f"{len(answerable)}."
        )
    order = list(answerable)
    random.Random(seed).shuffle(order)
    cut = min(max(1, round(len(order) * share)), len(order) - 1)
    return Split(order[:cut], order[cut:], seed, share)


@dataclass
class VariantScore:
    """One variant's flow and its score on the tuning questions."""

    label: str
    flow: Flow
    tuning: FlowEvaluation


@dataclass
class TuneResult:
    """A tuning run: the variants' scores, the winner and its held-out result."""

    metric: str
    k: int
    relevance: Relevance
    chars: int
    split: Split
    base_tuning: FlowEvaluation
    variants: list[VariantScore]
    winner: VariantScore
    base_held: FlowEvaluation
    winner_held: FlowEvaluation
    pair: PairComparison
    """The untuned flow (a) against the winner (b) on the held-out split."""
    saved_nodes: Any = field(default=None, repr=False)
    """The saved flow's nodes as the winner would carry them, to tell whether the winner is the saved flow."""

    def score(self, evaluation: FlowEvaluation) -> float:
        return metric_value(evaluation.metrics, self.metric)

    @property
    def tuning_gain(self) -> float:
        return self.score(self.winner.tuning) - self.score(self.base_tuning)

    @property
    def held_gain(self) -> float:
        return self.score(self.winner_held) - self.score(self.base_held)

    @property
    def held_verdict(self) -> str:
        """The significance module's verdict on the held-out split, on the tuning metric."""
        return verdict(
            self.pair.differences[self.metric], self._test(), metric=self.metric_label, a="untuned", b="winner"
        )

    def _test(self) -> PairedTest:
        """Sign test on the ranks for MRR; exact McNemar on the per-question hits otherwise."""
        if self.metric == "mrr":
            return self.pair.rank_test

        def hits(ev: FlowEvaluation) -> list[bool]:
            if self.metric == "hit@chars":
                return [o.chars_hit for o in ev.outcomes if o.answerable]
            return [o.first_rank is not None and o.first_rank <= self.k for o in ev.outcomes if o.answerable]

        return mcnemar(hits(self.base_held), hits(self.winner_held))

    @property
    def significant(self) -> bool:
        return detected(self.pair.differences[self.metric], self._test())

    @property
    def metric_label(self) -> str:
        return {"mrr": "MRR", "hit@k": f"hit@{self.k}", "hit@chars": f"hit@{self.chars}ch"}[self.metric]

    @property
    def conclusion(self) -> str:
        """One plain sentence: did the tuning hold on questions it was not chosen on?"""
        label = self.metric_label
        if self.winner_is_saved:
            return f"The saved settings are already the best on the tuning split by {label}: nothing to change."
        if self.tuning_gain <= 0:
            return f"No variant beats the saved settings on the tuning split by {label}: keep them."
        if self.held_gain <= 0:
            return (
                f"The gain on the tuning split ({label} {self.tuning_gain:+.3f}) does NOT hold on the held-out "
                f"split ({self.held_gain:+.3f}): the winner was fitted to the tuning questions; keep the saved "
                "settings."
            )
        if not self.significant:
            return (
                f"The winner is also ahead on the held-out split ({label} {self.held_gain:+.3f}), but the "
                "difference is not detectable on these questions: the gain may be noise."
            )
        return f"The gain holds on the held-out split ({label} {self.held_gain:+.3f}, significant)."

    @property
    def winner_is_saved(self) -> bool:
        return self.saved_nodes is not None and self.winner.flow.model_dump().get("nodes") == self.saved_nodes

    def to_dict(self) -> dict[str, Any]:
        def metrics(m: Metrics) -> dict[str, Any]:
            return m.to_dict()

        return {
            "metric": self.metric,
            "k": self.k,
            "relevance": self.relevance,
            "chars": self.chars,
            "split": {
                "share": self.split.share,
                "seed": self.split.seed,
                "tuning": [q.id for q in self.split.tuning],
                "held_out": [q.id for q in self.split.held_out],
            },
            "untuned": {"tuning": metrics(self.base_tuning.metrics), "held_out": metrics(self.base_held.metrics)},
            "variants": [{"variant": v.label, "tuning": metrics(v.tuning.metrics)} for v in self.variants],
            "winner": {
                "variant": self.winner.label,
                "tuning": metrics(self.winner.tuning.metrics),
                "held_out": metrics(self.winner_held.metrics),
            },
            "tuning_gain": self.tuning_gain,
            "held_out_gain": self.held_gain,
            "held_out_verdict": self.held_verdict,
            "significant": self.significant,
            "held_out_pair": self.pair.to_dict(),
            "conclusion": self.conclusion,
        }


def tune(
    path: Path,
    questions: Sequence[Question],
    varies: list[str],
    *,
    k: int = 5,
    metric: str = "mrr",
    share: float = 0.5,
    seed: int = 0,
    relevance: Relevance = "strict",
    chars: int | None = None,
    comparer: FlowComparer | None = None,
    on_progress: ProgressHandler | None = None,
    cancel_event: threading.Event | None = None,
) -> TuneResult:
    """Sweep ``varies`` over the flow at ``path`` on a tuning split; judge the winner on the held-out split."""
    if metric not in TUNE_METRICS:
        raise ComparisonError(f"unknown metric '{metric}'; use one of: {', '.join(TUNE_METRICS)}")
    if k < 1:
        raise ComparisonError(f"k must be at least 1, got {k}.")
    flow = read_flow(path)
    variants = build_variants(flow, varies, (comparer or FlowComparer()).registry)
    split = split_questions(questions, share, seed)
    comparer = comparer or FlowComparer()
    budget = chars or context_budget(flow) or DEFAULT_CONTEXT_CHARS

    def evaluate(source: FlowSource, subset: list[Question], label: str) -> FlowEvaluation:
        return comparer.evaluate(
            path,
            subset,
            k,
            label=label,
            on_progress=on_progress,
            relevance=relevance,
            cancel_event=cancel_event,
            source=source,
            chars=budget,
        )

    saved = FlowSource(path)
    base_tuning = evaluate(saved, split.tuning, "untuned")
    scores: list[VariantScore] = []
    for label, variant in variants:
        source = FlowSource(path, variant, variant.name, label)
        scores.append(VariantScore(label, variant, evaluate(source, split.tuning, label)))
    # Ties go to the saved settings (a sweep that changes nothing must not move the flow), then to the first listed.
    best = max(metric_value(v.tuning.metrics, metric) for v in scores)
    tied = [v for v in scores if metric_value(v.tuning.metrics, metric) == best]
    winner = next((v for v in tied if _comparable(flow, v.flow) == v.flow.model_dump().get("nodes")), tied[0])
    base_held = evaluate(saved, split.held_out, "untuned")
    winner_source = FlowSource(path, winner.flow, winner.flow.name, winner.label)
    winner_held = evaluate(winner_source, split.held_out, "winner")
    pair = compare_pair(base_held, winner_held, k)
    return TuneResult(
        metric,
        k,
        relevance,
        budget,
        split,
        base_tuning,
        scores,
        winner,
        base_held,
        winner_held,
        pair,
        _comparable(flow, winner.flow),
    )


def _comparable(saved: Flow, winner: Flow) -> Any:
    """The saved flow's nodes with the winner's collection names, so "the winner is the saved flow" ignores
    the per-variant collection suffix."""
    copy = saved.model_copy(deep=True)
    names = {node.id: node.config.get("collection") for node in winner.nodes}
    for node in copy.nodes:
        if "collection" in node.config or names.get(node.id) is not None:
            node.config["collection"] = names.get(node.id)
    return copy.model_dump().get("nodes")


def winner_flow(result: TuneResult, saved: Flow, questions_name: str) -> Flow:
    """The winner as a flow to save: the saved flow's collection names, a name and a description that
    say what was measured."""
    flow = result.winner.flow.model_copy(deep=True)
    originals = {node.id: node.config.get("collection") for node in saved.nodes}
    for node in flow.nodes:
        original = originals.get(node.id)
        if "collection" in node.config and original is not None:
            node.config["collection"] = original
        elif "collection" in node.config and original is None:
            node.config.pop("collection")
    flow.name = f"{saved.name} (tuned)"
    label = result.metric_label
    measured = (
        f"Tuned with `flowbuilder tune` ({result.winner.label}) on {len(result.split.tuning)} questions of "
        f"{questions_name} (split {result.split.share}, seed {result.split.seed}, {result.relevance} relevance, "
        f"k = {result.k}): {label} {result.score(result.winner.tuning):.3f} vs {result.score(result.base_tuning):.3f} "
        f"untuned; on the {len(result.split.held_out)} held-out questions {result.score(result.winner_held):.3f} vs "
        f"{result.score(result.base_held):.3f} ({result.held_verdict})."
    )
    flow.description = f"{saved.description.strip()} {measured}".strip()
    return flow


def save_winner(result: TuneResult, saved: Flow, source: Path, target: Path, questions_name: str) -> None:
    """The winner as a flow file at ``target``; relative file paths are rebased so they still point at the data."""
    flow = winner_flow(result, saved, questions_name)
    old_dir, new_dir = source.resolve().parent, target.resolve().parent
    if old_dir != new_dir:
        for node in flow.nodes:
            value = node.config.get("path")
            if isinstance(value, str) and value and not os.path.isabs(value):
                node.config["path"] = os.path.relpath(old_dir / value, new_dir)
    save_flow(flow, target)
