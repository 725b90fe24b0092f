"""The paired statistics behind compare's verdicts: bootstrap intervals, exact sign/McNemar tests, verdicts."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from flowbuilder.evaluation.significance import (
    detected,
    mcnemar,
    paired_difference,
    questions_needed,
    sign_test,
    verdict,
)


def test_sign_test_matches_the_binomial_by_hand() -> None:
    # 9 wins, 1 loss: P(X <= 1) for Binomial(10, 1/2) = 11/1024; two-sided doubles it.
    assert sign_test(9, 1).p_value == pytest.approx(22 / 1024)
    assert sign_test(1, 9).p_value == pytest.approx(22 / 1024)
    assert sign_test(2, 2, 66).p_value == 1.0  # naive vs row-labelled on the dev set
    assert sign_test(0, 0, 5).p_value == 1.0
    assert sign_test(60, 1).p_value == pytest.approx(2 * 62 / 2**61)  # improved vs row-labelled, strict
    assert sign_test(60, 1).p_value < 1e-15
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_mcnemar_counts_only_discordant_pairs() -> None:
    a = [True, True, False, False, True, False]
    b = [True, False, True, True, True, False]
    test = mcnemar(a, b)
    assert (test.wins, test.losses, test.ties) == (2, 1, 3)
    assert test.p_value == pytest.approx(sign_test(2, 1).p_value) == 1.0
    with pytest.raises(ValueError, match="equal lengths"):
        mcnemar([True], [True, False])


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(70).tolist()
    b = (np.asarray(a) + 0.3 + rng.normal(0, 0.1, 70)).tolist()
    one = paired_difference(a, b)
    assert one == paired_difference(a, b)  # same seed, same interval
    assert one != paired_difference(a, b, seed=1)
    assert one.resamples == 10_000 and one.n == 70
    assert one.low < one.diff < one.high
    assert one.diff == pytest.approx(float(np.mean(np.asarray(b) - np.asarray(a))))
    # The percentile interval of the mean is close to mean +/- 1.96 standard errors.
    se = one.sd / math.sqrt(70)
    assert one.low == pytest.approx(one.diff - 1.96 * se, abs=0.01)
    assert one.high == pytest.approx(one.diff + 1.96 * se, abs=0.01)
    assert one.excludes_zero and detected(one)


def test_bootstrap_is_fast_and_handles_long_sets() -> None:
    a = [float(i % 2) for i in range(2_000)]
    b = [float((i // 2) % 2) for i in range(2_000)]
    started = time.perf_counter()
    result = paired_difference(a, b)
    assert time.perf_counter() - started < 3.0
    assert result.low < 0 < result.high


def test_identical_and_constant_differences() -> None:
    same = paired_difference([1, 0, 0.5], [1, 0, 0.5])
    assert (same.diff, same.low, same.high, same.sd, same.questions_needed) == (0, 0, 0, 0, None)
    assert not same.excludes_zero
    shifted = paired_difference([0, 0, 0], [1, 1, 1])
    assert (shifted.low, shifted.high, shifted.questions_needed) == (1, 1, 1)
    for bad in (([], []), ([1.0], [1.0, 2.0])):
        with pytest.raises(ValueError):
            paired_difference(*bad)


def test_questions_needed_follows_the_normal_approximation() -> None:
    # (1.96 + 0.84)^2 * (sd/diff)^2 = 7.85 * 100 = 785 for a difference of a tenth of the spread.
    assert questions_needed(0.01, 0.1) == 785
    assert questions_needed(-0.01, 0.1) == 785
    assert questions_needed(0.0, 0.1) is None


def test_verdict_lines() -> None:
    # Two wins, two losses, the rest ties: noise.
    a = [1.0] * 66 + [1.0, 1.0, 0.5, 0.5]
    b = [1.0] * 66 + [0.5, 0.5, 1.0, 1.0]
    b[0] = 1.0
    diff = paired_difference(a, b)
    line = verdict(diff, sign_test(2, 2, 66))
    assert line.startswith("no detectable difference on 70 questions (MRR ")
    assert "2 wins, 2 losses, p = 1" in line
    # A clear gain.
    a = [0.25] * 60 + [1.0] * 9 + [1.0]
    b = [1.0] * 60 + [1.0] * 9 + [0.5]
    diff = paired_difference(a, b)
    line = verdict(diff, sign_test(60, 1, 9), a="naive", b="rows")
    assert line.startswith("rows better than naive (MRR +0.636, 95% CI +")
    assert verdict(paired_difference(b, a), sign_test(1, 60, 9), a="rows", b="naive").startswith(
        "rows better than naive (MRR −0.636"
    )
    # A small real-looking gain on few questions says how many it would take.
    small = verdict(paired_difference([0.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0, 0.0]), sign_test(1, 0, 4))
    assert "would take about" in small and small.startswith("no detectable difference on 5 questions")
    assert verdict(paired_difference([1.0, 1.0], [1.0, 1.0])).endswith("the two score every question alike")
