"""Retrieval evaluation: question sets, ranking metrics, chunk statistics and flow-vs-flow comparison.

Gold evidence is named by *record* (``record_id`` such as ``ABTEST-018``, or ``<file>#page<N>``) and
by an optional fact string, never by chunk id, so the same question set judges any chunking of the
same sources fairly.
"""

from flowbuilder.evaluation.chunk_stats import ChunkStats, compute_chunk_stats
from flowbuilder.evaluation.metrics import Metrics, QuestionOutcome, aggregate, judge_hits
from flowbuilder.evaluation.questions import Question, QuestionFileError, load_questions

__all__ = [
    "ChunkStats",
    "Metrics",
    "Question",
    "QuestionFileError",
    "QuestionOutcome",
    "aggregate",
    "compute_chunk_stats",
    "judge_hits",
    "load_questions",
]
