"""Is a difference between two flows real or noise? Paired statistics over the same questions.

Pure functions over per-question scores (no flows, no I/O), so ``compare`` and ``eval`` share them:

* :func:`paired_difference`: mean of ``b - a`` with a 95% confidence interval from a paired bootstrap
  over questions (seeded, 10,000 resamples by default, vectorised with numpy), plus how many
  questions it would take to detect a difference of that size (80% power, two-sided 5%).
* :func:`mcnemar`: the exact McNemar test on paired hits (a sign test on the discordant pairs);
  :func:`sign_test` takes the win and loss counts directly (e.g. questions where B ranked the gold
  record better or worse than A).
* :func:`verdict`: one line a person reads, e.g. "B better than A (MRR +0.29, 95% CI +0.21..+0.37)".

A difference counts as *detected* only when the bootstrap interval excludes zero and, when a paired
test is given, its p-value is below ``alpha``: two noisy signals must agree before we say "better".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
ALPHA = 0.05
POWER = 0.8
_BLOCK_CELLS = 4_000_000
"""Resample matrix cells drawn at once (bounds memory for long question sets)."""


@dataclass(frozen=True)
class PairedDifference:
    """``mean(b - a)`` over paired questions with its bootstrap interval."""

    n: int
    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int
    sd: float
    """Standard deviation of the per-question differences (sample, ddof=1; 0 for one question)."""
    questions_needed: int | None
    """Questions needed to detect a difference of this size (80% power, two-sided alpha 0.05);
    None when the observed difference is zero (nothing to detect)."""

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["excludes_zero"] = self.excludes_zero
        return data


@dataclass(frozen=True)
class PairedTest:
    """An exact two-sided sign test on ``wins`` (b better) against ``losses`` (a better); ties ignored."""

    wins: int
    losses: int
    ties: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> PairedDifference:
    """Mean of ``b[i] - a[i]`` and its percentile bootstrap interval (questions resampled with replacement).

    :raises ValueError: when the lengths differ, there are no questions, or the settings are out of range.
    """
    if len(a) != len(b):
        raise ValueError(f"paired scores need equal lengths, got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no paired scores: there is nothing to compare")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    diffs = xb - xa
    n = len(diffs)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, _BLOCK_CELLS // n)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        picks = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = diffs[picks].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    diff = float(diffs.mean())
    sd = float(diffs.std(ddof=1)) if n > 1 else 0.0
    return PairedDifference(
        n=n,
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        diff=diff,
        low=float(low),
        high=float(high),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        sd=sd,
        questions_needed=questions_needed(diff, sd),
    )


def questions_needed(diff: float, sd: float, *, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Paired questions for a two-sided test at ``alpha`` to detect a mean difference ``diff`` with ``power``,
    given the per-question differences' standard deviation ``sd`` (normal approximation).

    None when ``diff`` is zero; 1 when every question differs by the same amount (``sd`` 0)."""
    if diff == 0 or math.isnan(diff):
        return None
    if sd == 0:
        return 1
    normal = NormalDist()
    z = normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)
    return max(1, math.ceil((z * sd / abs(diff)) ** 2))


def sign_test(wins: int, losses: int, ties: int = 0) -> PairedTest:
    """Exact two-sided binomial test of ``wins`` against ``losses`` at p = 1/2 (ties carry no information)."""
    if wins < 0 or losses < 0 or ties < 0:
        raise ValueError("wins, losses and ties must not be negative")
    n = wins + losses
    if n == 0:
        return PairedTest(wins, losses, ties, 1.0)
    low = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n
    return PairedTest(wins, losses, ties, min(1.0, 2 * tail))


def mcnemar(a_hits: Sequence[bool], b_hits: Sequence[bool]) -> PairedTest:
    """Exact McNemar test on paired hits: ``wins`` = questions only B hits, ``losses`` = only A hits."""
    if len(a_hits) != len(b_hits):
        raise ValueError(f"paired hits need equal lengths, got {len(a_hits)} and {len(b_hits)}")
    wins = sum(1 for x, y in zip(a_hits, b_hits, strict=True) if y and not x)
    losses = sum(1 for x, y in zip(a_hits, b_hits, strict=True) if x and not y)
    return sign_test(wins, losses, len(a_hits) - wins - losses)


def detected(difference: PairedDifference, test: PairedTest | None = None, *, alpha: float = ALPHA) -> bool:
    """True when the interval excludes zero and (if given) the paired test agrees at ``alpha``."""
    return difference.excludes_zero and (test is None or test.p_value < alpha)


def _signed(value: float, digits: int) -> str:
    text = f"{value:+.{digits}f}"
    return text.replace("-", "−")


def _interval(difference: PairedDifference, digits: int) -> str:
    level = round(difference.confidence * 100)
    return f"{level}% CI {_signed(difference.low, digits)}..{_signed(difference.high, digits)}"


def verdict(
    difference: PairedDifference,
    test: PairedTest | None = None,
    *,
    metric: str = "MRR",
    a: str = "A",
    b: str = "B",
    alpha: float = ALPHA,
    digits: int = 3,
) -> str:
    """One line: whether ``b`` differs from ``a`` on ``metric``, with the interval and, for a difference
    too small to detect, how many questions it would take."""
    figures = f"{metric} {_signed(difference.diff, digits)}, {_interval(difference, digits)}"
    if test is not None:
        figures += f"; {test.wins} wins, {test.losses} losses, p = {test.p_value:.2g}"
    if detected(difference, test, alpha=alpha):
        better, worse = (b, a) if difference.diff > 0 else (a, b)
        return f"{better} better than {worse} ({figures})"
    line = f"no detectable difference on {difference.n} questions ({figures})"
    needed = difference.questions_needed
    if needed is None:
        return line + "; the two score every question alike" if difference.sd == 0 else line
    if needed > difference.n:
        return line + f"; detecting a difference of this size would take about {needed} questions"
    return line
