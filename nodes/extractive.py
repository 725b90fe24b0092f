"""``answer.extractive``: answer by quoting the retrieved chunks; no generation, so nothing is invented.

Each retrieved chunk is cut into units that are quoted whole (``nodes/passages.py``): the fields of a
labelled record, else sentences, list items, table rows and code blocks. A unit's score weighs four things:
its own similarity to the question (the flow's embedder), how much of the question's rarer words it holds
(term overlap weighted by how few retrieved units hold each word), its chunk's similarity, and the
retriever's rank of that chunk, so a relevant top hit is not passed over for a look-alike sentence in chunk
[5]. A question whose wording asks for a kind of answer (a quantity, a clock time, a version, an environment
variable, an exception, a status code) prefers a unit that holds one.

The answer is written for a person: a lead sentence in the question's terms (``nodes/phrasing.py``), then
the supporting quotes with their chunk numbers, each with the sentence that gives it context, then a line
saying it was found by quoting, not written by a model. For a labelled record the lead names the record's
id and title, then quotes the field that answers (Expected Result, or the steps when the question asks how),
and lists other records that scored nearly as well; a field the question names ("What priority ...") is quoted
too. It refuses (the answer says the retrieved context does not hold an answer, and ``eval`` counts a refusal)
when its confidence is under the threshold. For prose the confidence is calibrated (0-1): the best unit's score
and how far it stands out, with how well the best units *support* every content word of the question (leaving a
word out of the question must cost them similarity: a near-miss on the same topic matches the rest of the question
but not "Okta"), combined by a logistic regression fitted on the team's tuning sets. Prose is refused whatever
the confidence, with the reason in the answer, when no best unit holds the kind of answer asked for ("What time
...?" and no time), or when the question names something (a proper noun, an identifier, "HTTP/3") no retrieved
chunk mentions: a name has no paraphrase. The same answerer stands in
for a chat model that cannot be reached (``when_unreachable: extractive``) and for an
agent without one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Annotated, Any, NotRequired, TypedDict, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.formats.native import NODE_MIGRATIONS, NodeMigration
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.passages import ParsedChunk, Passage, parse_chunk
from flowbuilder.nodes.phrasing import (
    expected,
    expected_kind,
    lead_for_record,
    lead_for_span,
    mentions,
    name_key,
    named_terms,
    record_noun,
)
from flowbuilder.portvalues import Answer, Hits, Message, Prompt
from flowbuilder.registry import register_node
from flowbuilder.services import Embedder

NOT_FOUND = "Not found in the retrieved context: the retrieved chunks do not contain an answer to this question."
QUOTED = "Found by quoting the retrieved chunks; no model wrote this answer."
CALIBRATED_THRESHOLD = 0.45
"""Least confidence (0-1) to answer from prose (sentences, list items, rows): see :data:`PROSE_CONFIDENCE`. Chosen
with ``python benchmarks/answers.py --calibrate`` on the tuning sets only (issue 32's fifth round: the team's older
sets, the tuning halves, the paraphrased and no-answer tuning sets and the fresh ``starlette_tune``; 229 answerable
and 65 unanswerable prose questions, those :func:`cannot_answer` refuses counted as refused at any threshold): it
refuses 44 answerable (36 of the 218 whose chunks hold the fact) and 49 unanswerable ones. It is both the balanced
optimum the script prints and the knee of the sweep: 0.43 refuses 38 and 41, 0.44 refuses 42 and 47, and 0.46
refuses 6 more answerable questions and no more unanswerable ones. The fourth round's confidence and threshold
(0.43) refused 28 and 39 of its 186 and 57. In the sixth round (counts of what was asked, deeper heading paths,
names across separators) the same sweep still puts the balanced optimum at 0.45, which now refuses 40 answerable
(33 of 218) and 51 unanswerable; 0.44 refuses 37 and 48, 0.46 refuses 44 and 51. Reported on the report halves
and fresh held-out sets only (README, "Answers without a model")."""
PROSE_CONFIDENCE = (2.58, 8.91, -1.13)
"""``(a, b, c)`` of the prose confidence ``1 / (1 + exp(-(a * sure + b * support + c)))``: ``sure`` is the best
unit's score plus how far it stands out (:func:`confidence`), ``support`` how much the best quotes answer every
content word of the question (:func:`support`). A logistic regression fitted by ``benchmarks/answers.py
--calibrate`` on the tuning sets: answerable questions whose chunks hold the fact against questions the documents
do not answer, leaving out those :func:`cannot_answer` decides (refitted in issue 32's sixth round, whose rules
decide 3 more; the fifth round's was ``(2.69, 9.18, -1.20)``, the fourth's ``(3.05, 9.93, -1.37)``, the third's
``(4.35, 9.74, -2.30)``)."""
RECORD_THRESHOLD = 0.30
"""Least ``sure`` to answer from labelled records, whose short fields score on another scale (``support`` adds
nothing there: a record's fields repeat the question's words whether or not it is the one asked about). Chosen on
the same script's record sets (vwo500_userworded, vwo500_paraphrased, the tuning half of vwo500_asked, and
docs.jsonl asked of the test-case store as off-topic): it refused 34 of the 57 off-topic questions and 11 of
the 121 answerable ones; none of the 4 in-domain unanswerable ones (paraphrased test-case questions with no
test case look as close as answerable ones to this scorer)."""
PEAK_WEIGHT = 1.0
"""``sure`` = the best unit's score + this x how far its cosine stands above the mean of the top 10: a
unit that answers stands out from its neighbours, a near-miss does not."""
SUPPORT_UNITS = 8
"""How many of the best units ``support`` looks at."""
WORD_WEIGHT_SHARE = 0.5
"""In ``support``, each word's drop is counted beyond this share of the word's own weight in the question (how far
leaving it out moves the question's embedding). Chosen on the tuning sets (leave-one-set-out cross-validation of the
logistic fit: 0.4-0.75 all separate answerable from unanswerable questions better than 0, the plain drop)."""
WEIGHTS = {"unit": 0.4, "overlap": 0.2, "chunk": 0.1, "rank": 0.05}
"""Weight of the unit's cosine, its idf-weighted term overlap, its chunk's cosine and the retriever's rank
(1/rank); chosen with the threshold on the tuning halves."""
NUMBER_PENALTY = 0.20
"""Taken off a unit that does not hold the kind of answer the question asks for: no number for how many / how long /
what price, no clock time for "what time", no version for "which version" (``phrasing.ANSWER_KINDS``)."""

ANSWER_FIELDS = ("Expected Result", "Expected Results", "Answer", "Result", "Outcome", "Resolution")
STEP_FIELDS = ("Test Steps", "TestSteps", "Steps", "Steps to Execute", "Procedure")
_PASSAGE_HEADER = re.compile(r"^\[(\d+)\] \(source: ([^\n]*)\)[ \t]*$", re.MULTILINE)
_PROMPT_QUESTION = re.compile(r"^[ \t]*(?:question|query|user question)[ \t]*:[ \t]*(.+?)[ \t]*$", re.I | re.M)
_PROMPT_SECTION = re.compile(r"\n\s*\n(?=[ \t]*[A-Z][\w ]{0,30}:)")
_ASKS_STEPS = re.compile(
    r"\b(?:steps?|how (?:do|can|should|would) (?:i|we|you) (?:test|check|verify|reproduce))\b", re.I
)


class ExtractiveConfig(BaseModel):
    """Settings of ``answer.extractive``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(
        CALIBRATED_THRESHOLD,
        ge=-1.0,
        le=1.0,
        description=(
            "Least confidence (0-1) that the best quotes answer, for prose; under it the answer is 'not found in "
            "the retrieved context'. The confidence combines the best quote's score (its cosine, term overlap, "
            "its chunk's cosine and the retriever's rank) with how well the quotes support every word of the "
            "question; weights and threshold were fitted on the tuning halves of the team's question sets "
            "(answerable and unanswerable questions over Markdown docs and the PRD) and reported on the other "
            "halves. See README, 'Answers without a model'."
        ),
    )
    record_threshold: float = Field(
        RECORD_THRESHOLD,
        ge=-1.0,
        le=1.0,
        description=(
            "Least score of the best field for an answer from labelled records (a CSV row per chunk), whose short "
            "fields score on another scale; calibrated on the team's test-case question sets."
        ),
    )
    max_quotes: int = Field(
        4, ge=1, le=10, description="Most passages quoted (the best one first, then others nearly as good)."
    )
    margin: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="A further quote or a record listed as 'also close' must score within this of the best one.",
    )
    always_fields: list[str] = Field(
        default_factory=lambda: list(ANSWER_FIELDS),
        description=(
            "Fields of the best record always quoted with it (labels as the chunk writes them; case is ignored): "
            "by default the ones that hold an outcome, e.g. a test case's 'Expected Result'. A question asking "
            "for steps gets the steps field instead."
        ),
    )
    alternatives: int = Field(
        3,
        ge=0,
        le=10,
        description="Other records scoring within the margin, listed after the answer as 'also close'.",
    )
    rank_weight: float = Field(
        WEIGHTS["rank"],
        ge=0.0,
        le=1.0,
        description="How much the retriever's rank (1/rank) counts next to the answerer's own scores.",
        json_schema_extra={"advanced": True},
    )


@dataclass(frozen=True)
class Quote:
    """One quoted sentence or field and the numbered chunk it comes from."""

    chunk: int
    """1-based number of the chunk, as the prompt numbers it."""
    label: str
    """The field's label, or "" for prose."""
    text: str
    score: float
    parts: frozenset[int] = frozenset()
    """Which units of the chunk it quotes."""
    context: str = ""
    section: str = ""
    after: str = ""
    """What follows the unit in its paragraph (the next sentence), or the rest of its table."""

    @property
    def shown(self) -> str:
        """What the quote's line shows of its chunk, as it reads."""
        body = f"{self.label}: {self.text}" if self.label else self.text
        if self.context and not self.label:
            body = f"{self.context} {body}"
        return f"{body} {self.after}" if self.after else body

    def overlaps(self, other: Quote) -> bool:
        return self.chunk == other.chunk and bool(self.parts & other.parts)

    def line(self, hit: Hit) -> str:
        where = citation_label(hit.document)
        if self.section and self.section not in where:
            where = f"{where}, {self.section}" if where else self.section
        separator = ", " if self.label else ": "
        return f"> [{self.chunk}] {where + separator if where else ''}{self.shown}"


@dataclass
class Extraction:
    """An extractive answer: the quotes, the best score and whether anything was found."""

    answer: str
    quotes: list[Quote]
    best_score: float | None
    found: bool
    lead: str = ""
    also: list[int] = field(default_factory=list)
    """Chunk numbers of the other records listed as 'also close'."""
    shape: str = ""
    """"records" or "prose": which threshold judged the confidence."""
    signals: dict[str, float] = field(default_factory=dict)
    """What the confidence was made of (``sure``, and ``support`` for prose)."""

    def details(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "method": "quoting (no model)",
            "shape": self.shape,
            "best_score": None if self.best_score is None else round(self.best_score, 4),
            "signals": self.signals,
            "lead": self.lead,
            "quotes": [
                {"chunk": q.chunk, "label": q.label, "score": round(q.score, 4), "text": q.text[:200]}
                for q in self.quotes
            ],
            "also_close": self.also,
        }


def citation_label(document: Document) -> str:
    """The record id (or source and page) a quote names."""
    meta = document.metadata
    if meta.get("record_id") is not None:
        return str(meta["record_id"])
    if meta.get("record_ids"):
        return _record_range([str(r) for r in meta["record_ids"]])
    source = str(meta.get("source") or "")
    if meta.get("page") is not None:
        return f"{source} page {meta['page']}".strip()
    return source


_PAGE_RECORD = re.compile(r"^(.*)#page(\d+)$")


def _record_range(ids: list[str]) -> str:
    """``a.pdf#page4, a.pdf#page5`` -> ``a.pdf pages 4-5`` (a chunk of a whole PDF spans pages); other ids listed."""
    pages = [_PAGE_RECORD.match(i) for i in ids]
    if all(pages) and len({m.group(1) for m in pages if m}) == 1:
        numbers = sorted(int(m.group(2)) for m in pages if m)
        source = pages[0].group(1) if pages[0] else ""
        if len(numbers) == 1:
            return f"{source} page {numbers[0]}"
        return f"{source} pages {numbers[0]}-{numbers[-1]}"
    return ", ".join(ids)


def units_of(text: str) -> list[tuple[str, str]]:
    """``(label, text)`` per quotable unit: the fields of a labelled record, else the prose units."""
    return [(p.label, p.text) for p in parse_chunk(text).passages]


QUESTION_WORDS = frozenset(
    {
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "done",
        "can",
        "could",
        "may",
        "might",
        "must",
        "shall",
        "should",
        "would",
        "i",
        "me",
        "my",
        "mine",
        "we",
        "us",
        "our",
        "you",
        "your",
        "he",
        "she",
        "him",
        "her",
        "his",
        "them",
        "its",
        "here",
        "have",
        "has",
        "had",
        "been",
        "being",
        "am",
        "were",
        "get",
        "gets",
        "got",
        "any",
        "anyone",
        "anybody",
        "someone",
        "somebody",
        "anything",
        "something",
        "some",
        "all",
        "about",
        "so",
        "only",
        "also",
        "just",
        "still",
        "ever",
        "really",
        "please",
        "tell",
        "know",
        "want",
        "need",
        "happen",
        "happens",
        "happened",
        "out",
        "up",
        "from",
        "over",
        "than",
        "more",
        "most",
        "much",
        "many",
        "one",
        "there",
        "s",
        "t",
    }
)
"""Words that say how a question is asked, not what it is about (on top of BM25's English stopwords)."""


_WORD = re.compile(r"(?u)\b\w+\b")


def _terms(text: str) -> set[str]:
    """The content words of ``text``, stemmed (Snowball English: "required" and "requirements" meet at
    "requir"). Single digits are kept: "Phase 1" and "Phase 3" differ by theirs."""
    return set(_stems(text.lower()))


@lru_cache(maxsize=4096)
def _stems(text: str) -> tuple[str, ...]:
    from flowbuilder.nodes.hybrid.terms import english_stopwords

    stop = english_stopwords() | QUESTION_WORDS
    words = [w for w in _WORD.findall(text) if w not in stop and (len(w) > 1 or w.isdigit())]
    return tuple(_stemmer().stemWords(words))


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def overlap(question_terms: set[str], text: str) -> float:
    if not question_terms:
        return 0.0
    return len(question_terms & _terms(text)) / len(question_terms)


@dataclass
class _Scored:
    chunk: int
    passage: Passage
    score: float


@dataclass(frozen=True)
class Features:
    """What a unit's score is made of (each 0..1, the rank as 1/rank)."""

    unit: float
    overlap: float
    chunk: float
    rank: float
    lacks_kind: bool
    """The question asks for a kind of answer (a number, a clock time, a version ...) the unit does not hold."""

    def score(self, weights: dict[str, float], number_penalty: float = NUMBER_PENALTY) -> float:
        value = (
            weights["unit"] * self.unit
            + weights["overlap"] * self.overlap
            + weights["chunk"] * self.chunk
            + weights["rank"] * self.rank
        )
        return value - (number_penalty if self.lacks_kind else 0.0)


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    return np.asarray(vectors @ query / np.maximum(np.linalg.norm(vectors, axis=1) * np.linalg.norm(query), 1e-9))


def passage_features(
    question: str, hits: Sequence[Hit], parsed: Sequence[ParsedChunk], embedder: Embedder
) -> list[tuple[int, Passage, Features]]:
    """``(chunk number, unit, features)`` for every unit of every chunk."""
    units = [(n, p) for n, chunk in enumerate(parsed, start=1) for p in chunk.passages]
    if not units:
        return []
    vectors = np.asarray(
        embedder.embed_documents([p.embed_text for _, p in units] + [hit.document.text for hit in hits]),
        dtype=np.float32,
    )
    query = np.asarray(embedder.embed_query(question), dtype=np.float32)
    cosines = _cosines(vectors, query)
    unit_cos, chunk_cos = cosines[: len(units)], cosines[len(units) :]
    unit_terms = [_terms(f"{p.label} {p.text} {p.context} {p.section}") for _, p in units]
    q_terms = _terms(question)
    df: dict[str, int] = {}
    for terms in unit_terms:
        for term in terms & q_terms:
            df[term] = df.get(term, 0) + 1
    # A question word that few retrieved units hold says more about which unit answers than one all hold;
    # one that none holds lowers every unit's overlap (a sign the chunks do not answer).
    idf = {t: math.log((len(units) + 1) / (df.get(t, 0) + 0.5)) for t in q_terms}
    total = sum(idf.values()) or 1.0
    # The kind alone steers the choice; "a number of what" is left to cannot_answer (steering by it too picked
    # other units' counts and answered an unanswerable tuning question, for no verdict gained).
    kind = expected_kind(question)
    rows = []
    for (number, passage), cos, terms in zip(units, unit_cos, unit_terms, strict=True):
        rank = hits[number - 1].rank if hits[number - 1].rank and hits[number - 1].rank > 0 else number
        features = Features(
            float(cos),
            sum(idf[t] for t in q_terms & terms) / total,
            float(chunk_cos[number - 1]),
            1.0 / rank,
            kind is not None and not kind.held.search(f"{passage.text} {passage.context}"),
        )
        rows.append((number, passage, features))
    return rows


def score_passages(
    question: str, hits: Sequence[Hit], parsed: Sequence[ParsedChunk], embedder: Embedder, rank_weight: float
) -> tuple[list[_Scored], float]:
    """Every unit of every chunk scored for ``question``, best first, and ``sure``: the best unit's score plus how
    far it stands out (see :func:`confidence`)."""
    weights = {**WEIGHTS, "rank": rank_weight}
    features = passage_features(question, hits, parsed, embedder)
    scored = [_Scored(n, p, f.score(weights)) for n, p, f in features]
    scored.sort(key=lambda s: -s.score)
    return scored, confidence(scored[0].score, [f.unit for _, _, f in features])


def confidence(best_score: float, unit_cosines: Sequence[float]) -> float:
    """The best unit's score plus how far the best cosine stands above the mean of the top 10 (see
    :data:`PEAK_WEIGHT`)."""
    top = sorted(unit_cosines, reverse=True)[:10]
    return best_score + PEAK_WEIGHT * (top[0] - sum(top) / len(top)) if top else best_score


_CONTENT_WORD = re.compile(r"[\w'’-]+")


def content_words(question: str) -> list[re.Match[str]]:
    """The words of ``question`` that say what it is about (not how it is asked)."""
    from flowbuilder.nodes.hybrid.terms import english_stopwords

    stop = english_stopwords() | QUESTION_WORDS
    return [m for m in _CONTENT_WORD.finditer(question) if len(m.group(0)) > 1 and m.group(0).lower() not in stop]


def support(question: str, units: Sequence[Passage], embedder: Embedder) -> float:
    """How well the best ``units`` answer *every* part of the question: for each content word, how much the
    closest unit's cosine drops when the word is left out of the question, less :data:`WORD_WEIGHT_SHARE` of how
    far leaving it out moves the question itself; the least of these.

    A unit that answers is similar to the question *because of* its specific words ("Okta", "upload",
    "how many days"), so leaving one out costs similarity. A near-miss on the same topic matches the rest of
    the question and not that word: leaving it out costs nothing, or gains. Synonyms count (the unit need not
    repeat the word), which term overlap cannot see. Each word is held to its own weight in the question: a word
    the question turns on ("fee", "smartwatch") moves the question far when left out, so a unit that answers must
    lose at least a share of that too; a filler ("today", "thing") moves neither and costs nothing."""
    words = content_words(question)
    if not words or not units:
        return 0.0
    variants = [" ".join(f"{question[: m.start()]}{question[m.end() :]}".split()) for m in words]
    vectors = np.asarray(embedder.embed_documents([question, *variants, *(u.embed_text for u in units)]))
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    asked, without, quoted = vectors[0], vectors[1 : 1 + len(words)], vectors[1 + len(words) :]
    drops = (quoted @ asked)[None, :] - without @ quoted.T  # (words, units)
    weight = 1.0 - without @ asked  # how far each word's absence moves the question
    return float((drops.max(axis=1) - WORD_WEIGHT_SHARE * weight).min())


def prose_confidence(sure: float, supported: float) -> float:
    """The calibrated confidence (0-1) that the best prose quotes answer (see :data:`PROSE_CONFIDENCE`)."""
    a, b, c = PROSE_CONFIDENCE
    return 1.0 / (1.0 + math.exp(-(a * sure + b * supported + c)))


def extract(
    question: str, hits: Sequence[Hit], embedder: Embedder, config: ExtractiveConfig | None = None
) -> Extraction:
    """The answer to ``question`` quoted from ``hits`` (a lead sentence, then quotes), or the not-found answer."""
    config = config or ExtractiveConfig()
    parsed = [parse_chunk(hit.document.text, _record_id(hit.document)) for hit in hits]
    if not question.strip() or not any(chunk.passages for chunk in parsed):
        return Extraction(_refusal(), [], None, False)
    scored, sure = score_passages(question, hits, parsed, embedder, config.rank_weight)
    best = scored[0]
    records = parsed[best.chunk - 1].record is not None
    shape = "records" if records else "prose"
    signals = {"sure": round(sure, 4)}
    reason = ""
    if records:
        score, threshold = sure, config.record_threshold
    else:
        supported = support(question, [s.passage for s in scored[:SUPPORT_UNITS]], embedder)
        score, threshold = prose_confidence(sure, supported), config.threshold
        signals["support"] = round(supported, 4)
        cannot = cannot_answer(question, hits, [s.passage for s in scored[:SUPPORT_UNITS]])
        if cannot is not None:
            signals[cannot[0]] = 1.0
            score, reason = -1.0, cannot[1]  # refused at any threshold but -1 (refusals off)
    if score < threshold:
        return Extraction(_refusal(reason), [], score, False, shape=shape, signals=signals)
    if records:
        extraction = _record_answer(question, hits, parsed, scored, config)
    else:
        extraction = _prose_answer(question, hits, parsed, scored, config)
    extraction.best_score, extraction.shape, extraction.signals = score, shape, signals
    return extraction


def cannot_answer(question: str, hits: Sequence[Hit], best: Sequence[Passage]) -> tuple[str, str] | None:
    """``(signal, reason)`` when the best prose units cannot answer ``question`` whatever their scores: it asks for
    a kind of answer (a number, a clock time, a version ...) none of them holds, or names something (a proper noun,
    an identifier) no retrieved chunk mentions. Prose about a product rarely renames "Okta" or "HTTP/3"; labelled
    records are left out, since testers call a browser "Mozilla's" or "Apple's"."""
    wanted = expected(question)
    if wanted is not None and not any(wanted.held_by(f"{p.context} {p.text}") for p in best):
        return "lacks", f"None of them holds {wanted}."
    absent = absent_names(question, hits)
    if absent:
        return "absent", "None of them mentions " + ", ".join(f'"{name}"' for name in absent) + "."
    return None


def _record_id(document: Document) -> str:
    record_id = document.metadata.get("record_id")
    return str(record_id) if record_id is not None else ""


def _refusal(reason: str = "") -> str:
    return f"{NOT_FOUND} {reason}".rstrip() + f"\n\n{QUOTED}"


def absent_names(question: str, hits: Sequence[Hit]) -> list[str]:
    """The names in ``question`` (:func:`named_terms`) that no retrieved chunk mentions (:func:`mentions`: case,
    separators and a plural 's' ignored)."""
    from flowbuilder.nodes.hybrid.terms import english_stopwords

    text = name_key(" ".join(hit.document.text for hit in hits))
    names = named_terms(question, english_stopwords() | QUESTION_WORDS)
    absent = [name for name in names if not mentions(text, name)]
    return list(dict.fromkeys(absent))  # a name asked twice is said once


def _quote(item: _Scored) -> Quote:
    p = item.passage
    return Quote(item.chunk, p.label, p.text, item.score, frozenset({p.index}), p.context, p.section)


def _record_answer(
    question: str, hits: Sequence[Hit], parsed: Sequence[ParsedChunk], scored: list[_Scored], config: ExtractiveConfig
) -> Extraction:
    best = scored[0]
    chunk = parsed[best.chunk - 1]
    record = chunk.record
    assert record is not None
    noun = record_noun(record.id_label, str(hits[best.chunk - 1].document.metadata.get("source") or ""))
    lead = lead_for_record(record.id, record.title, f"[{best.chunk}]", noun)
    wanted_labels = STEP_FIELDS if _ASKS_STEPS.search(question) else tuple(config.always_fields)
    wanted = {label.strip().lower() for label in wanted_labels if label.strip()}
    skip = {record.id_label.lower(), record.title_label.lower()}
    # A field the question names ("What priority ...", "... preconditions?") is what it asks for.
    asked = _terms(question)
    wanted |= {p.label.lower() for p in chunk.passages if p.label.lower() not in skip and _terms(p.label) & asked}
    chosen: list[Quote] = []
    if best.passage.label.lower() not in skip and best.passage.label.lower() not in wanted:
        chosen.append(_quote(best))
    for item in scored:
        label = item.passage.label.lower()
        if item.chunk == best.chunk and label in wanted and not any(label == q.label.lower() for q in chosen):
            chosen.append(_quote(item))
    best_per_chunk: dict[int, _Scored] = {}
    for item in scored:
        best_per_chunk.setdefault(item.chunk, item)
    also = [
        n
        for n, item in best_per_chunk.items()
        if n != best.chunk and parsed[n - 1].record is not None and item.score >= best.score - config.margin
    ][: config.alternatives]
    lines = [lead]
    if chosen:
        lines += ["", *[q.line(hits[q.chunk - 1]) for q in chosen]]
    if also:
        close = []
        for n in also:
            other = parsed[n - 1].record
            assert other is not None
            close.append(f'{other.id}, "{other.title}" [{n}]' if other.title != other.id else f"{other.id} [{n}]")
        lines += ["", f"Also close: {'; '.join(close)}."]
    lines += ["", QUOTED]
    return Extraction("\n".join(lines), chosen, best.score, True, lead, also)


MAX_TABLE_ROWS = 8
"""A table up to this many rows is quoted whole when one of its rows answers (rows read with their neighbours)."""


def _prose_quote(item: _Scored, passages: Sequence[Passage]) -> Quote:
    """The unit with what gives it context: the sentence before and the one after it in its paragraph (a topic
    sentence is often followed by the one that answers), or its whole table when the table is small; a sentence
    that ends in a colon brings what it introduces (the command, list or table after it: "Create one with the
    client:" is answered by the code block that follows)."""
    p = item.passage
    same = [q for q in passages if q.group == p.group]
    parts = {p.index} | _context_units(p, passages)
    after: list[str] = []
    last = p
    if p.kind == "sentence":
        following = [q for q in same if q.index == p.index + 1]
        if following:
            after.append(following[0].text)
            parts.add(p.index + 1)
            last = following[0]
    elif p.kind == "row" and 1 < len(same) <= MAX_TABLE_ROWS:
        after.append(" ".join(q.text for q in same if q.index != p.index))
        parts |= {q.index for q in same}
    if last.kind == "sentence" and last.text.endswith(":"):
        introduced = _introduced(last, passages)
        after += [q.text for q in introduced]
        parts |= {q.index for q in introduced}
    return Quote(item.chunk, "", p.text, item.score, frozenset(parts), p.context, p.section, " ".join(after))


def _context_units(unit: Passage, passages: Sequence[Passage]) -> set[int]:
    """The units a quote of ``unit`` shows as its context: the sentence before a sentence, the lead-in sentences of a
    list item or a code block (so a quote is known to hold them, and is not quoted again beside them)."""
    if not unit.context or unit.kind == "row":  # a row's context is its table's header, which is no unit
        return set()
    if unit.kind == "sentence":
        return {unit.index - 1}
    # The lead-in is the last sentence before the list or block (with the one before it after a bare "For example:");
    # a list's later items sit further from it.
    before = [q.index for q in passages if q.kind == "sentence" and q.index < unit.index and q.text in unit.context]
    return {at for at in before if at >= max(before) - 1} if before else set()


def _introduced(sentence: Passage, passages: Sequence[Passage]) -> list[Passage]:
    """The code block, list or table right after ``sentence`` (when it is small enough to quote whole)."""
    following = [q for q in passages if q.index == sentence.index + 1 and q.group != sentence.group]
    if not following or following[0].kind not in ("code", "item", "row"):
        return []
    block = [q for q in passages if q.group == following[0].group]
    return block if len(block) <= MAX_TABLE_ROWS else block[:1]


def _prose_answer(
    question: str, hits: Sequence[Hit], parsed: Sequence[ParsedChunk], scored: list[_Scored], config: ExtractiveConfig
) -> Extraction:
    best = scored[0]
    chosen = [_prose_quote(best, parsed[best.chunk - 1].passages)]
    taken = 1
    for item in scored[1:]:
        if taken >= config.max_quotes or item.score < best.score - config.margin:
            break
        if any(q.chunk == item.chunk and item.passage.index in q.parts for q in chosen):
            continue  # already quoted as another quote's context
        passages = parsed[item.chunk - 1].passages
        quote = _prose_quote(item, passages)
        if any(q.chunk == quote.chunk and quote.parts <= q.parts for q in chosen):
            continue  # everything it would show is already shown
        taken += 1
        inside = [at for at, q in enumerate(chosen) if q.chunk == quote.chunk and q.parts <= quote.parts]
        if inside:  # it shows all of one or more earlier quotes: it stands where the first of them stood
            chosen[inside[0]] = replace(quote, score=chosen[inside[0]].score)
            chosen = [q for at, q in enumerate(chosen) if at == inside[0] or at not in inside]
            continue
        for at, earlier in enumerate(chosen):
            merged = _merged(earlier, quote, passages) if earlier.overlaps(quote) else None
            if merged is not None:
                chosen[at] = merged
                break
        else:
            chosen.append(quote)
    chosen = _once(chosen)
    lead = lead_for_span(question, _lead_span(best.passage, parsed[best.chunk - 1].passages), f"[{best.chunk}]")
    lines = [lead, "", *[q.line(hits[q.chunk - 1]) for q in chosen], "", QUOTED]
    return Extraction("\n".join(lines), chosen, best.score, True, lead)


def _once(quotes: Sequence[Quote]) -> list[Quote]:
    """The quotes without a repeat of what an earlier one of the same chunk shows: a document can repeat its own words
    (the same row or sentence twice), and two merged quotes can come out as the same words."""
    seen: set[tuple[int, str, str]] = set()
    kept = []
    for quote in quotes:
        if (quote.chunk, quote.section, quote.shown) not in seen:
            seen.add((quote.chunk, quote.section, quote.shown))
            kept.append(quote)
    return kept


LEAD_BLOCK_CHARS = 160
"""The longest command, list or table a lead sentence that ends in a colon takes along (longer, the quote shows it)."""


def _lead_span(unit: Passage, passages: Sequence[Passage]) -> str:
    """What the lead sentence quotes: the unit, and when it ends in a colon the short block it introduces ("You can
    install SOCKS support using pip:" says nothing without ``pip install httpx[socks]``)."""
    introduced = _introduced(unit, passages) if unit.kind == "sentence" and unit.text.endswith(":") else []
    shown = [" ".join(q.text.split()) for q in introduced]
    if not shown or sum(len(text) for text in shown) > LEAD_BLOCK_CHARS:
        return unit.text
    if introduced[0].kind == "code":
        shown = [f"`{text}`" if "`" not in text else text for text in shown]
    return f"{unit.text} {'; '.join(shown)}"


def _merged(earlier: Quote, later: Quote, passages: Sequence[Passage]) -> Quote | None:
    """Two quotes that overlap, as one where the earlier one stood, so no sentence is quoted twice: sentences of one
    paragraph become one quote of them in order, and items of one list under the same lead-in become one quote of
    the lead-in and those items in order. None for anything else (a table or a block a sentence introduces keeps
    its own layout)."""
    indices = earlier.parts | later.parts
    units = [p for p in passages if p.index in indices]
    if len(units) != len(indices):
        return None
    if all(p.kind == "sentence" and p.group == units[0].group for p in units):
        text = " ".join(p.text for p in units)
        return Quote(earlier.chunk, "", text, earlier.score, frozenset(indices), "", earlier.section)
    items = [p for p in units if p.kind == "item"]
    one_list = bool(items) and all(p.group == items[0].group for p in items)
    lead_ins = all(p.kind == "sentence" and p.text in earlier.context for p in units if p.kind != "item")
    if one_list and lead_ins and earlier.context == later.context and not (earlier.after or later.after):
        text = " ".join(p.text for p in items)
        return Quote(earlier.chunk, "", text, earlier.score, frozenset(indices), earlier.context, earlier.section)
    return None


def hits_from_prompt(prompt: str) -> list[Hit]:
    """The numbered passages a ``prompt.template`` rendered (``[n] (source: ..., record R, score s)``)."""
    headers = list(_PASSAGE_HEADER.finditer(prompt))
    hits: list[Hit] = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(prompt)
        body = prompt[header.end() : end].strip("\n")
        if index + 1 == len(headers):  # the last passage ends where the template's next section starts
            section = _PROMPT_SECTION.search(body)
            body = body[: section.start()] if section else body
        meta: dict[str, Any] = {}
        score = 0.0
        listing = False  # after "records A": the parts that follow, up to the next key, are more records
        source, *parts = header.group(2).split(", ")  # the header's "source: " is outside the group
        meta["source"] = source
        for part in parts:
            key, _, value = part.partition(" ")
            if key == "record":
                meta["record_id"] = value
            elif key == "records":
                meta["record_ids"], listing = [value], True
                continue
            elif listing and key not in ("page", "score"):
                meta["record_ids"].append(part)
                continue
            elif key == "page":
                meta["page"] = value
            elif key == "score":
                try:
                    score = float(value)
                except ValueError:
                    score = 0.0
            listing = False
        hits.append(Hit(document=Document(text=body.strip(), metadata=meta), score=score, rank=int(header.group(1))))
    return hits


def question_from_prompt(prompt: str) -> str:
    """The text after the last ``Question:`` line of a prompt, or ""."""
    found = _PROMPT_QUESTION.findall(prompt)
    return found[-1] if found else ""


def default_embedder(ctx: RunContext) -> Embedder:
    """The offline MiniLM embedder, for an answerer with no embedder connected."""
    from flowbuilder.nodes.embedders.local import LocalEmbedder

    return cast(Embedder, LocalEmbedder(cache_dir=ctx.data_dir))


def answer_from_prompt(prompt: str, ctx: RunContext, config: ExtractiveConfig | None = None) -> Extraction:
    """The extractive answer to a rendered RAG prompt; a NodeError when it numbers no passages or asks nothing."""
    hits = hits_from_prompt(prompt)
    question = question_from_prompt(prompt)
    if not hits or not question:
        missing = (
            "numbered passages ('[1] (source: ...)', as prompt.template renders hits)"
            if not hits
            else ("a 'Question: ...' line")
        )
        raise NodeError(f"the prompt has no {missing}, so there is nothing to quote from")
    return extract(question, hits, default_embedder(ctx), config)


def _drop_old_default(name: str, *old: float) -> NodeMigration:
    """A saved value equal to an earlier default of the answerer is dropped, so the node takes the new default:
    before issue 32 the scores had no rank or idf-weighted overlap; in its first round the prose threshold was on
    the raw score (0.46), then on the calibrated confidence (0-1; 0.41 until its fourth round refitted it). Each
    was calibrated anew."""

    def migrate(node: dict[str, Any]) -> dict[str, Any]:
        config = node.get("config")
        if isinstance(config, dict) and config.get(name) in old:
            node["config"] = {k: v for k, v in config.items() if k != name}
        return node

    return migrate


NODE_MIGRATIONS.setdefault("answer.extractive", {}).update(
    {
        "config.threshold": _drop_old_default("threshold", 0.30, 0.46, 0.41, 0.43),
        "config.margin": _drop_old_default("margin", 0.08),
        "config.max_quotes": _drop_old_default("max_quotes", 2),
    }
)


class ExtractiveIn(TypedDict):
    """The input ports of ``answer.extractive``."""

    question: NotRequired[Annotated[Message, "The user's question."]]
    context: NotRequired[Annotated[Hits, "The retrieved chunks to quote from."]]
    prompt: NotRequired[
        Annotated[Prompt, "Or a prompt.template's output: its numbered passages and 'Question:' line are used."]
    ]
    embedder: NotRequired[Annotated[Embedder, "Scores the quotes; empty = the offline MiniLM embedder."]]


class AnswerOut(TypedDict):
    """The output ports of ``answer.extractive``."""

    answer: Annotated[Answer, "A lead sentence, then the quotes with their chunk citations; or 'not found'."]


@register_node
class ExtractiveAnswer(Node[ExtractiveConfig, ExtractiveIn, AnswerOut]):
    """Answer by quoting the retrieved chunks that best match the question (no model, never invents)."""

    type_name = "answer.extractive"
    category = "Models"
    display_name = "Extractive Answer (no model)"
    aliases = ("Quote answer", "Offline answer")
    Config = ExtractiveConfig

    def run(self, inputs: ExtractiveIn, ctx: RunContext) -> AnswerOut:
        config = self.config
        embedder = inputs.get("embedder") or default_embedder(ctx)
        hits = inputs.get("context")
        question = inputs.get("question")
        prompt = inputs.get("prompt")
        if hits is None and prompt is not None:
            hits = hits_from_prompt(prompt)
            ctx.details["context_from"] = "prompt"
        if not question and prompt is not None:
            question = question_from_prompt(prompt)
        if not question:
            raise NodeError("no question: connect 'question' (a chat input) or a 'prompt' with a 'Question:' line")
        if hits is None:
            raise NodeError("nothing to quote: connect 'context' (a retriever's hits) or 'prompt' (a prompt.template)")
        extraction = extract(question, hits, embedder, config)
        ctx.details.update(extraction.details())
        ctx.details["threshold"] = config.record_threshold if extraction.shape == "records" else config.threshold
        if not hits:
            ctx.warn("no chunks were retrieved: answered 'not found'")
        return {"answer": extraction.answer}

    def summarize(self, outputs: AnswerOut) -> str:
        flat = " ".join(outputs["answer"].split())
        return flat if len(flat) <= 60 else flat[:59] + "…"
