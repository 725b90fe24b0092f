"""Retrieval evaluation: question sets, ranking metrics, chunk statistics and flow-vs-flow comparison.

Gold evidence is named by *record* (``record_id`` such as ``ABTEST-018``, or ``<file>#page<N>``) and
by an optional fact string, never by chunk id, so the same question set judges any chunking of the
same sources fairly.
"""

from flowbuilder.evaluation.chunk_stats import ChunkStats, WholeRecordIndex, compute_chunk_stats
from flowbuilder.evaluation.metrics import (
    RELEVANCE_MODES,
    Metrics,
    QuestionOutcome,
    Relevance,
    aggregate,
    judge_hits,
)
from flowbuilder.evaluation.questions import Question, QuestionFileError, load_questions

__all__ = [
    "RELEVANCE_MODES",
    "ChunkStats",
    "Metrics",
    "Question",
    "QuestionFileError",
    "QuestionOutcome",
    "Relevance",
    "WholeRecordIndex",
    "aggregate",
    "compute_chunk_stats",
    "judge_hits",
    "load_questions",
]
