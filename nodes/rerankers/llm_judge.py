"""``reranker.llm``: a chat model judges each candidate 0-10 and the best are kept.

This is the "RAG from scratch" article's judge: one short prompt per candidate, the number in the
reply is its score. A reply without a number scores 0 and is listed in ``details["unparsed"]``, so a
judge that ignores the instructions is visible instead of silently reordering at random.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Literal

from pydantic import Field

from flowbuilder.errors import ProviderError
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.structured import ask, score_schema
from flowbuilder.nodes.prompts import render_template
from flowbuilder.nodes.rerankers.common import (
    RerankConfig,
    RerankedOut,
    RerankerNode,
    RerankIn,
    question,
    reorder,
    score_table,
)
from flowbuilder.registry import register_node
from flowbuilder.services import ChatModel

DEFAULT_JUDGE_PROMPT = (
    "You judge search results. Rate how well the passage answers the question, from 0 (unrelated) "
    "to 10 (answers it completely). Reply with the number only.\n\n"
    "Question: {question}\n\n"
    "Passage:\n{passage}\n\n"
    "Score (0-10):"
)

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SCALE = re.compile(r"\(?\b0\s*(?:-|to)\s*10\b\)?|/\s*10\b")  # an echoed "(0-10)" or "/10" is not the score


def parse_score(reply: str) -> float | None:
    """The first number 0-10 in a judge's reply ("8", "Score: 7.5/10"), or None."""
    for match in _NUMBER.finditer(_SCALE.sub(" ", reply)):
        value = float(match.group(0))
        if value <= 10.0:
            return value
    return None


class LLMJudgeConfig(RerankConfig):
    """Settings of ``reranker.llm``: the saved config, and the inspector's form."""

    prompt: str = Field(
        DEFAULT_JUDGE_PROMPT,
        description="The judge's prompt, sent once per candidate; {question} and {passage} are filled in.",
        json_schema_extra={"multiline": True},
    )
    if_model_fails: Literal["fail", "continue"] = Field(
        "fail",
        description="When the judge cannot be reached: fail, or keep the incoming order (a warning).",
    )


class JudgeIn(RerankIn):
    """The input ports of ``reranker.llm``."""

    model: Annotated[ChatModel, "The judge: a chat model (llm.* 'model' output)."]


@register_node
class LLMJudgeReranker(RerankerNode[LLMJudgeConfig, JudgeIn]):
    """Rerank hits with a chat model that scores each candidate 0-10 (an LLM judge)."""

    type_name = "reranker.llm"
    display_name = "LLM Reranker"
    aliases = ("rerank", "reranker", "LLM")
    Config = LLMJudgeConfig
    cacheable = False

    @classmethod
    def config_problems(cls, config: LLMJudgeConfig) -> list[tuple[str | None, str]]:
        problems = super().config_problems(config)
        if "{passage}" not in config.prompt:
            problems.append((None, "the judge prompt has no {passage}; the model would never see the candidate."))
        return problems

    def run(self, inputs: JudgeIn, ctx: RunContext) -> RerankedOut:
        config = self.config
        hits, query = inputs["hits"], question(inputs)
        model = inputs["model"]
        candidates = hits[: config.candidates]
        started = time.perf_counter()
        scores: list[float] = []
        replies: list[str] = []
        unparsed: list[int] = []
        formats: set[str] = set()
        for number, hit in enumerate(candidates, start=1):
            ctx.progress(number - 1, len(candidates), "judging")
            prompt = render_template(config.prompt, {"question": query, "passage": hit.document.text})
            try:
                answer = ask(model, prompt, score_schema("score"), "score")
            except ProviderError as exc:
                if config.if_model_fails == "fail":
                    raise
                ctx.warn(f"not reranked, the incoming order is kept: {exc}")
                ctx.details["model_failed"] = str(exc)
                return {"hits": candidates[: config.keep]}
            reply = answer.text
            formats.add(answer.mode)
            score = parse_score(reply)
            if score is None:
                unparsed.append(hit.rank)
                score = 0.0
            scores.append(score)
            replies.append(reply.strip()[:200])
        ctx.progress(len(candidates), len(candidates), "judged")
        seconds = time.perf_counter() - started
        ctx.details["query"] = query
        ctx.details["judge"] = f"{model.provider}/{model.model}"
        ctx.details["reply_format"] = ", ".join(sorted(formats))
        ctx.details["prompt_template"] = config.prompt
        if candidates:
            ctx.details["first_prompt"] = render_template(
                config.prompt, {"question": query, "passage": candidates[0].document.text}
            )
        ctx.details["seconds"] = round(seconds, 3)
        ctx.details["seconds_per_candidate"] = round(seconds / len(candidates), 3) if candidates else 0.0
        table = score_table(candidates, scores)
        for row, reply in zip(table, replies, strict=True):
            row["reply"] = reply
        ctx.details["scores"] = table
        if unparsed:
            ctx.details["unparsed"] = unparsed
            ctx.log(f"{len(unparsed)} judge replies had no 0-10 number (scored 0): input ranks {unparsed}")
        return {"hits": reorder(candidates, scores, config.keep)}
