"""answer.extractive with the real MiniLM embedder: quotes with citations, 'not found' under the threshold,
hits read back from a rendered prompt, and the LLM nodes' ``when_unreachable: extractive`` path."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.evaluation.answers import citations, evaluate_answers, is_refusal
from flowbuilder.evaluation.questions import load_questions
from flowbuilder.executor import Executor
from flowbuilder.formats.native import load_flow
from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.local import LocalEmbedder
from flowbuilder.nodes.extractive import (
    NOT_FOUND,
    QUOTED,
    ExtractiveAnswer,
    ExtractiveConfig,
    citation_label,
    extract,
    hits_from_prompt,
    question_from_prompt,
    support,
    units_of,
)
from flowbuilder.nodes.passages import Passage
from flowbuilder.nodes.phrasing import mentions, name_key, named_terms
from flowbuilder.nodes.prompts import DEFAULT_TEMPLATE, render_template
from tests.evaluation.answer_flow import write_corpus
from tests.fakes.llm_server import free_port

RECORDS = [
    (
        "LOGIN-004",
        "Verify Login - remember me checkbox",
        "The session persists after the browser restarts when remember me is ticked.",
    ),
    (
        "INVALID-011",
        "Verify Invalid Login - email with consecutive dots",
        "The email is rejected with the message 'Enter a valid email address' and no request reaches the server.",
    ),
    ("ADMIN-015", "Verify Admin - enable mandatory 2FA", "Every user must set up two-step verification at next login."),
]


def record_hits() -> list[Hit]:
    hits = []
    for rank, (rid, description, expected) in enumerate(RECORDS, start=1):
        text = f"Scenario TID: {rid}\nDescription: {description}\nExpected Result: {expected}\nPriority: High"
        doc = Document(text=text, metadata={"source": "cases.csv", "record_id": rid})
        hits.append(Hit(document=doc, score=0.5, rank=rank))
    return hits


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_a_record_answer_leads_with_its_id_and_title_then_the_field_that_answers(embedder: LocalEmbedder) -> None:
    hits = record_hits()
    config = ExtractiveConfig()
    result = extract("How is an email with two dots in a row handled at login?", hits, embedder, config)

    assert result.found and result.best_score is not None and result.best_score >= config.record_threshold
    lead, *_rest = result.answer.split("\n")
    assert lead == 'The closest test case is INVALID-011, "Verify Invalid Login - email with consecutive dots" [2].'
    assert "> [2] INVALID-011, Expected Result: The email is rejected" in result.answer
    assert result.answer.rstrip().endswith(QUOTED)  # says it was found by quoting, not by a model
    assert 2 in citations(result.answer)
    for quote in result.quotes:  # every quote is verbatim text of the chunk it cites: nothing is invented
        assert quote.text in hits[quote.chunk - 1].document.text
    assert not is_refusal(result.answer)


def test_a_question_about_steps_gets_the_steps_field(embedder: LocalEmbedder) -> None:
    doc = Document(
        text="Scenario TID: LOGIN-067\nDescription: Verify Login - Remember Me persistence\n"
        "Test Steps: 1. Tick Remember Me | 2. Sign in | 3. Restart the browser\n"
        "Expected Result: The session is still open after the restart.\nPriority: High",
        metadata={"record_id": "LOGIN-067", "source": "cases.csv"},
    )
    hits = [Hit(document=doc, score=0.5, rank=1)]
    steps = extract("What are the steps to check that Remember Me survives a browser restart?", hits, embedder)
    outcome = extract("What should happen to Remember Me after a browser restart?", hits, embedder)

    assert "Test Steps: 1. Tick Remember Me" in steps.answer and "Expected Result" not in steps.answer
    assert "Expected Result: The session is still open" in outcome.answer


def test_the_retrievers_top_hit_is_not_passed_over_for_a_look_alike_further_down(embedder: LocalEmbedder) -> None:
    # Two records answer the question equally well by their words; the retriever ranked the first one first.
    def record(rid: str, rank: int) -> Hit:
        text = f"Scenario TID: {rid}\nDescription: Verify Login - landscape orientation\nPriority: Medium"
        return Hit(document=Document(text=text, metadata={"record_id": rid}), score=0.5, rank=rank)

    others = [
        Hit(document=Document(text=f"Scenario TID: X-{n}\nDescription: Verify Admin - export {n}"), score=0.3, rank=n)
        for n in range(2, 5)
    ]
    result = extract("Does sign-in work with the phone turned sideways?", [record("LOGIN-029", 1), *others,
                     record("LOGIN-129", 5)], embedder)  # fmt: skip
    assert result.answer.startswith("The closest test case is LOGIN-029")


def test_says_not_found_when_nothing_scores_above_the_threshold(embedder: LocalEmbedder) -> None:
    result = extract("What phone number do I call for billing support?", record_hits(), embedder)

    assert result.answer.startswith(NOT_FOUND) and not result.found and result.quotes == []
    assert result.best_score is not None and result.best_score < ExtractiveConfig().record_threshold
    assert is_refusal(result.answer)  # eval counts it as a refusal, not as an answer
    assert extract("anything", [], embedder).answer.startswith(NOT_FOUND)


PROSE = (
    "# Billing\n\n## Refunds\n\nRefunds go back to the original card. They arrive within 5 working days of the "
    "request, e.g. on a Friday for a Monday request. The path is `~/.config/app/refunds.log` on Linux.\n\n"
    "Invoices are emailed monthly."
)


def test_prose_is_cut_into_whole_sentences() -> None:
    assert [t for _, t in units_of(PROSE)] == [
        "Refunds go back to the original card.",
        "They arrive within 5 working days of the request, e.g. on a Friday for a Monday request.",
        "The path is `~/.config/app/refunds.log` on Linux.",
        "Invoices are emailed monthly.",
    ]


def test_a_prose_answer_is_a_lead_sentence_then_whole_quoted_sentences(embedder: LocalEmbedder) -> None:
    hit = Hit(document=Document(text=PROSE, metadata={"source": "billing.md"}), score=0.4, rank=1)
    result = extract("How many days until a refund reaches my card?", [hit], embedder)

    lead, blank, quote, *_rest = result.answer.split("\n")
    assert lead.startswith('How many days until a refund reaches your card: "') and lead.endswith('" [1].')
    assert blank == "" and quote.startswith("> [1] billing.md, Refunds: ")
    # the answering sentence with the one before it, whole: never cut mid-sentence
    assert "Refunds go back to the original card. They arrive within 5 working days of the request" in quote
    quotes = [line for line in result.answer.split("\n") if line.startswith("> [")]
    assert quotes[0] == quote and all(line.endswith(".") for line in quotes)
    assert result.answer.rstrip().endswith(QUOTED)
    assert not is_refusal(result.answer)


def test_quoted_words_that_sound_like_a_refusal_do_not_make_the_answer_one(embedder: LocalEmbedder) -> None:
    text = "## Plans\n\nThe free plan does not include single sign-on. Single sign-on comes with Enterprise."
    hit = Hit(document=Document(text=text, metadata={"source": "plans.md"}), score=0.5, rank=1)
    result = extract("Does the free plan include single sign-on?", [hit], embedder, ExtractiveConfig(threshold=0.0))
    assert "does not include single sign-on" in result.answer and not is_refusal(result.answer)


def test_hits_and_question_are_read_back_from_a_rendered_prompt() -> None:
    hits = record_hits()
    prompt = render_template(DEFAULT_TEMPLATE, {"context": hits, "question": "Which test enables 2FA?"})

    parsed = hits_from_prompt(prompt)

    assert [h.document.text for h in parsed] == [h.document.text for h in hits]
    assert [h.document.metadata["record_id"] for h in parsed] == ["LOGIN-004", "INVALID-011", "ADMIN-015"]
    assert question_from_prompt(prompt) == "Which test enables 2FA?"
    assert hits_from_prompt("Answer this: what is 2+2?") == []
    assert {h.document.metadata["source"] for h in parsed} == {"cases.csv"}


def test_a_chunk_of_a_whole_pdf_is_cited_by_the_pages_it_spans() -> None:
    # loader.file mode "whole" over a PDF: a chunk across a page break names both pages
    meta = {"source": "prd.pdf", "record_ids": ["prd.pdf#page4", "prd.pdf#page5"]}
    hits = [Hit(document=Document(text="Scalability: 99.9% uptime.", metadata=meta), score=0.6, rank=1)]
    prompt = render_template(DEFAULT_TEMPLATE, {"context": hits, "question": "What uptime is required?"})

    [parsed] = hits_from_prompt(prompt)

    assert parsed.document.metadata == meta
    assert citation_label(parsed.document) == "prd.pdf pages 4-5"
    assert citation_label(Document(text="", metadata={"record_ids": ["prd.pdf#page2"]})) == "prd.pdf page 2"


def test_a_record_field_the_question_names_is_quoted(embedder: LocalEmbedder) -> None:
    result = extract("What priority does the two-dots email test have?", record_hits(), embedder)

    assert result.answer.startswith("The closest test case is INVALID-011")
    assert "> [2] INVALID-011, Priority: High" in result.answer


def test_support_is_higher_for_a_passage_that_answers_every_part_of_the_question(embedder: LocalEmbedder) -> None:
    # Both sentences are about signing in; only one says anything about Okta.
    answers = Passage(0, "sentence", "Single sign-on works through Okta, Azure AD and Google Workspace.")
    near_miss = Passage(0, "sentence", "Single sign-on is available on the Enterprise plan for every workspace.")
    question = "Does single sign-on work through Okta?"

    assert support(question, [answers], embedder) > support(question, [near_miss], embedder)
    assert support("?", [answers], embedder) == 0.0  # nothing asked: no support either way


def test_prose_the_chunk_does_not_answer_is_refused_on_the_default_threshold(embedder: LocalEmbedder) -> None:
    # On topic (single sign-on) but silent on price: the calibrated confidence refuses it, and answers what the
    # same chunk does say.
    text = (
        "## Single sign-on\n\nSingle sign-on is available on the Enterprise plan for every workspace. "
        "Admins turn it on under Settings, Security. Members then sign in with their company account."
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "sso.md"}), score=0.5, rank=1)]

    refused = extract("How much does single sign-on cost per seat?", hits, embedder)
    answered = extract("Where do admins turn on single sign-on?", hits, embedder)

    assert is_refusal(refused.answer) and not refused.found and refused.shape == "prose"
    assert refused.best_score is not None and refused.best_score < ExtractiveConfig().threshold
    assert answered.found and "Settings, Security" in answered.lead


def test_a_question_word_nothing_quoted_is_about_is_refused_by_its_weight(embedder: LocalEmbedder) -> None:
    # Every quote is about passwords and their reset; none says anything about a fee. The word the question turns
    # on moves the question far when left out, so the quotes must lose as much to support it: they do not, and the
    # question is refused (the third round's plain drop answered it). The strength question is still answered.
    text = (
        "## Password management\n\n"
        "- Password Requirements: Enforced security standards for password complexity\n"
        "- Forgot Password Flow: Streamlined password reset process with secure token generation\n"
        "- Password Strength Indicators: Visual feedback for password requirements and strength\n\n"
        "## Interface design\n\n"
        "- Responsive Design: Mobile-optimized interface with touch-friendly controls\n"
        "- Auto-focus: Automatic focus on the first input field to reduce user interactions\n"
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "prd.md"}), score=0.5, rank=1)]

    fee = extract("Is there a fee for resetting a password?", hits, embedder)
    strength = extract("Will I see how strong my password is while I type it?", hits, embedder)

    assert is_refusal(fee.answer) and fee.signals["support"] < strength.signals["support"]
    assert strength.found and "Visual feedback for password requirements" in strength.lead


def test_a_question_asking_for_a_time_or_a_count_is_refused_when_no_quote_holds_one(embedder: LocalEmbedder) -> None:
    # On topic, close in wording, and nothing in the chunk says when or how many: a near-miss quote cannot answer
    # "what time" or "after how many", so the answer says not found. The same chunk answers a question it holds.
    text = (
        "## Demo day\n\n"
        "Every team presents what it learned at the Friday demo. The demo is held in the large meeting room. "
        "Slides are optional; a short live walkthrough is preferred.\n\n"
        "## Locked accounts\n\n"
        "Too many failed sign-in attempts lock the account. A locked account is unlocked by an administrator.\n"
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "handbook.md"}), score=0.6, rank=1)]
    lenient = ExtractiveConfig(threshold=0.0)  # the kind decides, not the calibrated threshold

    when = extract("What time does the Friday demo start?", hits, embedder, lenient)
    count = extract("After how many failed attempts is an account locked?", hits, embedder, lenient)
    where = extract("Where is the Friday demo held?", hits, embedder, lenient)

    assert is_refusal(when.answer) and when.signals.get("lacks") == 1.0
    assert is_refusal(count.answer) and count.signals.get("lacks") == 1.0
    assert "None of them holds a clock time." in when.answer
    assert "None of them holds a number of attempts." in count.answer
    variable = extract("Which environment variable sets the demo room?", hits, embedder, lenient)
    assert "None of them holds an environment variable." in variable.answer
    assert where.found and "large meeting room" in where.answer and "lacks" not in where.signals


def test_a_count_must_be_a_count_of_what_was_asked(embedder: LocalEmbedder) -> None:
    # The chunk has numbers (a port, a timeout), but none counts workers: "how many workers" is refused. The same
    # chunk answers how many connections, which it counts.
    text = (
        "## Running in production\n\n"
        "Run the app behind uvicorn on port 8000 with a 30 second keep-alive timeout. "
        "The server keeps at most 100 open connections. Uvicorn then restarts a worker that stops answering.\n"
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "deploy.md"}), score=0.6, rank=1)]
    lenient = ExtractiveConfig(threshold=0.0)

    workers = extract("How many uvicorn workers should I run in production?", hits, embedder, lenient)
    connections = extract("How many connections can the server keep open?", hits, embedder, lenient)

    assert is_refusal(workers.answer) and "None of them holds a number of workers." in workers.answer
    assert connections.found and "100 open connections" in connections.answer


def test_a_question_naming_something_no_chunk_mentions_is_refused_and_says_which(embedder: LocalEmbedder) -> None:
    # Close in wording (sign-on, providers), but "Okta" is a name: no retrieved chunk mentions it, so nothing
    # retrieved can say whether it is supported. Naming what is there ("SAML") is answered.
    text = (
        "## Single sign-on\n\n"
        "Enterprise workspaces can sign in through any SAML 2.0 identity provider. An owner turns single sign-on "
        "on under Settings, then Security, and pastes the provider's metadata URL.\n"
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "sso.md"}), score=0.7, rank=1)]
    lenient = ExtractiveConfig(threshold=0.0)

    okta = extract("Does single sign-on work through Okta?", hits, embedder, lenient)
    saml = extract("Which SAML version does single sign-on take?", hits, embedder, lenient)

    assert is_refusal(okta.answer) and okta.signals.get("absent") == 1.0 and '"Okta"' in okta.answer
    twice = extract("Does SSO work through Okta, or only through Okta Verify?", hits, embedder, lenient)
    assert twice.answer.count('"Okta"') == 1 and '"Verify"' in twice.answer
    assert saml.found and "SAML 2.0" in saml.answer


def test_named_terms_are_proper_nouns_identifiers_and_names_with_digits() -> None:
    common = frozenset({"does", "support", "can", "i", "the", "my", "what", "on", "with", "a"})
    assert named_terms("Does Starlette support HTTP/3?", common) == ["Starlette", "HTTP/3"]
    assert named_terms("Can I call set_cookie with maxAge on my Response?", common) == [
        "set_cookie",
        "maxAge",
        "Response",
    ]
    # Sentence-initial capitals, plain numbers and short acronyms (often spelled out by the documents) are not names.
    assert named_terms("What is the URL for 2 users on the SSO page?", common) == []


def test_a_name_is_found_however_the_documents_separate_or_case_its_words() -> None:
    # Docs write ``set_cookie`` under a "Set Cookie" heading, ``SameSite`` as ``samesite``, ``maxAge`` as
    # ``max_age``: none of these is a name the documents lack. "HTTP/3" beside "HTTP/2" and "Okta" still are.
    keyed = name_key("### Response > #### Set Cookie\n* `samesite` - Defaults to 'lax'. * `max_age` - HTTP/2 only.")
    for name in ("set_cookie", "setCookie", "SameSite", "maxAge", "HTTP/2", "Responses"):
        assert mentions(keyed, name), name
    for name in ("HTTP/3", "Okta", "set_header"):
        assert not mentions(keyed, name), name
    # Platforms go by each other's names ("Unix" for "Linux"), as whole words: a "machine" is no Mac.
    assert mentions(name_key("On Unix the cache is ~/.cache/pip."), "Linux")
    assert mentions(name_key("On Mac it is ~/Library/Caches/pip."), "macOS")
    assert not mentions(name_key("The build machine keeps its cache."), "macOS")


def test_a_quote_holding_the_kind_of_answer_asked_for_is_preferred(embedder: LocalEmbedder) -> None:
    # Both sentences are about the config file; only one names an environment variable, which is what is asked.
    text = (
        "The client reads its settings from a config file in your home folder, and the config file can also "
        "point the client at another settings file. Set QS_CONFIG to a path to use that file instead."
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "config.md"}), score=0.6, rank=1)]

    result = extract(
        "Which environment variable makes the client read another config file?",
        hits,
        embedder,
        ExtractiveConfig(threshold=0.0),
    )

    assert result.found and "QS_CONFIG" in result.lead


def test_two_quotes_of_one_paragraph_that_overlap_are_quoted_once(embedder: LocalEmbedder) -> None:
    # The two best sentences sit two apart: each brings the sentence between them as context, so quoted apart the
    # middle one would be read twice. They become one quote of the paragraph's sentences in order.
    sentences = [
        "Guests can read a shared note.",
        "A guest link expires after 30 days.",
        "Guests can never edit a note.",
        "You can make a guest link expire sooner when you create it.",
        "Guest links are switched off on the Free plan.",
    ]
    hits = [Hit(document=Document(text=" ".join(sentences), metadata={"source": "sharing.md"}), score=0.6, rank=1)]

    result = extract("When does a guest link expire?", hits, embedder, ExtractiveConfig(threshold=0.0, margin=1.0))

    quoted = "\n".join(line for line in result.answer.splitlines() if line.startswith("> "))
    assert all(quoted.count(sentence) <= 1 for sentence in sentences)
    assert sentences[1] in quoted and sentences[3] in quoted
    assert f"{sentences[1]} {sentences[2]} {sentences[3]}" in quoted  # one quote, in the paragraph's order


def test_a_block_and_the_sentence_that_introduces_it_are_quoted_once(embedder: LocalEmbedder) -> None:
    # The code block is quoted with its lead-in as context, and the lead-in, quoted for itself, brings the block it
    # introduces: without knowing the one holds the other, the answer showed the same quote twice. Items of one list
    # quoted apart each repeated their lead-in.
    text = (
        "## Handling HTTP methods\n\nRoutes can also specify which HTTP methods are handled by an endpoint:\n\n"
        '```python\nRoute(\'/users/{user_id:int}\', user, methods=["GET", "POST"])\n```\n\n'
        "By default, function endpoints will only accept `GET` requests, unless specified.\n\n"
        "Allowed methods are checked in this order:\n\n* The methods listed on the route.\n* The router's methods.\n"
        "* The mount's methods.\n* `GET` alone, when no method is listed anywhere.\n"
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "routing.md"}), score=0.6, rank=1)]

    result = extract(
        "Which HTTP methods does a route handle if I do not list them?", hits, embedder,
        ExtractiveConfig(threshold=0.0, margin=1.0, max_quotes=6),
    )  # fmt: skip

    quoted = [line for line in result.answer.splitlines() if line.startswith("> ")]
    assert len(quoted) == len(set(quoted)), quoted
    bodies = [line.split(": ", 1)[1] for line in quoted]
    assert not any(a != b and a in b for a in bodies for b in bodies), quoted  # no quote inside another
    assert sum(line.count("methods=") for line in quoted) == 1
    assert sum(line.count("`GET` alone") for line in quoted) <= 1
    # Items of one list under one lead-in are one quote: the lead-in once, the items in the list's order.
    assert sum(line.count("checked in this order:") for line in quoted) == 1
    listed = next(line for line in quoted if "checked in this order:" in line)
    assert listed.index("listed on the route") < listed.index("`GET` alone")


def test_words_a_document_repeats_are_quoted_once(embedder: LocalEmbedder) -> None:
    text = (
        "## Timeouts\n\nThe default timeout is 5 seconds.\n\nPools keep connections open.\n\n"
        "The default timeout is 5 seconds.\n\n| setting | value |\n|---|---|\n| timeout | 5 |\n\n"
        "| setting | value |\n|---|---|\n| timeout | 5 |\n"
    )
    hits = [Hit(document=Document(text=text, metadata={"source": "timeouts.md"}), score=0.6, rank=1)]
    result = extract("What is the default timeout?", hits, embedder, ExtractiveConfig(threshold=0.0, margin=1.0))
    quoted = [line for line in result.answer.splitlines() if line.startswith("> ")]
    assert quoted and len(quoted) == len(set(quoted)), quoted


def test_random_markdown_never_breaks_an_answer_or_repeats_a_quote(embedder: LocalEmbedder) -> None:
    pieces = ["## H\n", "Intro sentence:\n\n", "```\n", "* item\n", "* other item\n", "| a | b |\n", "|---|---|\n",
              "| 1 | 2 |\n", "Plain sentence. Another one.\n", "For example:\n\n", "\n", "1. first\n"]  # fmt: skip
    rnd = random.Random(32)
    for _ in range(120):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 25)))
        hits = [
            Hit(document=Document(text=text, metadata={"source": "x.md"}), score=0.5, rank=1),
            Hit(document=Document(text=text[::-1], metadata={"source": "y.md"}), score=0.4, rank=2),
        ]
        config = ExtractiveConfig(threshold=-1.0, margin=1.0, max_quotes=6)
        answer = extract("What does the intro sentence list?", hits, embedder, config).answer
        quoted = [line for line in answer.splitlines() if line.startswith("> ")]
        assert len(quoted) == len(set(quoted)), (text, answer)


def test_node_takes_question_and_hits_or_a_prompt(tmp_path: Path) -> None:
    ctx = RunContext("answer", data_dir=tmp_path)
    node = ExtractiveAnswer(ExtractiveConfig())
    question = "Which test turns on compulsory two-step verification?"
    direct = node.run({"question": question, "context": record_hits()}, ctx)["answer"]
    prompt = render_template(DEFAULT_TEMPLATE, {"context": record_hits(), "question": question})
    from_prompt = node.run({"prompt": prompt}, RunContext("answer", data_dir=tmp_path))["answer"]

    assert direct == from_prompt and direct.startswith("The closest test case is ADMIN-015")
    assert ctx.details["found"] is True and ctx.details["quotes"][0]["chunk"] == 3
    with pytest.raises(NodeError, match="nothing to quote"):
        node.run({"question": question}, ctx)
    with pytest.raises(NodeError, match="no question"):
        node.run({"context": record_hits()}, ctx)


def help_flow(tmp_path: Path, when_unreachable: str) -> tuple[Any, Path]:
    """The help-centre RAG flow with llm.ollama on a port where nothing listens."""
    flow_path, questions = write_corpus(tmp_path, "unused", f"help-{when_unreachable}")
    data = json.loads(flow_path.read_text())
    for node in data["nodes"]:
        if node["id"] == "llm":
            node["type"] = "llm.ollama"
            node["config"] = {"base_url": f"http://127.0.0.1:{free_port()}", "when_unreachable": when_unreachable}
    flow_path.write_text(json.dumps(data))
    return load_flow(flow_path), questions


def test_unreachable_llm_answers_extractively_with_a_warning(tmp_path: Path) -> None:
    flow, _ = help_flow(tmp_path, "extractive")
    run = Executor(data_dir=tmp_path / "fbdata").run(
        flow, inputs="How many backup codes do I get with 2FA?", base_dir=tmp_path
    )

    llm = run.results["llm"]
    assert llm.status == "warning" and "answered extractively" in llm.warning and "Ollama" in llm.warning
    answer = run.results["answer"].outputs["message"]
    assert "10 recovery codes" in answer and citations(answer)
    assert llm.details["fallback"]["path"] == "extractive"


def test_unreachable_llm_fails_by_default(tmp_path: Path) -> None:
    flow, _ = help_flow(tmp_path, "error")
    run = Executor(data_dir=tmp_path / "fbdata").run(
        flow, inputs="How many backup codes do I get with 2FA?", base_dir=tmp_path
    )
    assert run.results["llm"].status == "failed" and "answer" not in run.results["answer"].outputs


def test_eval_scores_extractive_answers_offline(tmp_path: Path) -> None:
    flow, questions = help_flow(tmp_path, "extractive")
    evaluation = evaluate_answers(
        flow, load_questions(questions), base_dir=tmp_path, executor=Executor(data_dir=tmp_path / "fbdata")
    )

    metrics = evaluation.metrics
    assert metrics.errors == 0
    assert metrics.answer_accuracy is not None and metrics.answer_accuracy >= 0.5
    verdicts = {r.question.id: r.verdict for r in evaluation.results}
    assert verdicts["q1"] == "correct"
    assert verdicts["q5"] == "refused" and metrics.refusal_rate == 1.0  # no question without an answer answered


def test_a_flow_saved_with_the_old_defaults_takes_the_recalibrated_ones() -> None:
    from flowbuilder.formats.native import migrate_nodes

    old = {"type": "answer.extractive", "config": {"threshold": 0.30, "margin": 0.08, "max_quotes": 2}}
    chosen = {"type": "answer.extractive", "config": {"threshold": 0.55, "max_quotes": 4}}
    round_one = {"type": "answer.extractive", "config": {"threshold": 0.46}}  # the raw-score default of round one
    round_three = {"type": "answer.extractive", "config": {"threshold": 0.41}}  # before support weighed each word
    round_four = {"type": "answer.extractive", "config": {"threshold": 0.43}}  # before the gates and the refit
    data = migrate_nodes({"nodes": [old, chosen, round_one, round_three, round_four]})
    assert all(data["nodes"][n]["config"] == {} for n in (0, 2, 3, 4))
    assert data["nodes"][1]["config"] == {"threshold": 0.55, "max_quotes": 4}  # a user's own choice stays
    assert migrate_nodes(data) == data


def test_a_chunk_with_a_huge_token_is_cut_in_linear_time() -> None:
    # a minified blob or a long hash in a document: the path-and-code guard must not backtrack over it
    from flowbuilder.nodes.passages import parse_chunk

    text = "Run it. " + "a" * 200_000 + " and then ~/.cache/pip/x. Done. See `a.b/c` now."
    assert [p.text[-12:] for p in parse_chunk(text).passages] == ["Run it.", "cache/pip/x.", "Done.", "`a.b/c` now."]


def test_a_block_after_a_bare_for_example_keeps_the_sentence_that_says_what_it_shows() -> None:
    # "For example:" names nothing: the code's context reaches back to the sentence that states the rule, which is
    # what a question about the rule needs quoted. A lead-in that says something stays the only context.
    from flowbuilder.nodes.passages import parse_chunk

    text = (
        "## Route priority\n\nMore specific routes must be listed before general ones.\n\nFor example:\n\n"
        "```python\nroutes = [Route('/users/me', me), Route('/users/{name}', user)]\n```\n\n"
        "The values are read in this order:\n\n* The environment.\n* The `.env` file.\n"
    )
    passages = parse_chunk(text).passages
    code = next(p for p in passages if p.kind == "code")
    assert code.context == "More specific routes must be listed before general ones. For example:"
    items = [p for p in passages if p.kind == "item"]
    assert [p.context for p in items] == ["The values are read in this order:"] * 2


def test_a_sentence_ending_in_a_colon_is_quoted_with_the_command_it_introduces(embedder: LocalEmbedder) -> None:
    text = (
        "## Guest links\n\nGuest links let people outside the workspace read one note. Create one with the client:\n\n"
        "```\nqs share --guest --expires 7d\n```\n\nGuest links are off on the Free plan."
    )
    hit = Hit(document=Document(text=text, metadata={"source": "sharing.md"}), score=0.6, rank=1)
    result = extract("How do I share a note with someone outside the workspace?", [hit], embedder,
                     ExtractiveConfig(threshold=0.0))  # fmt: skip
    first = next(line for line in result.answer.split("\n") if line.startswith("> [1]"))
    assert "Create one with the client: qs share --guest --expires 7d" in first


def test_a_lead_that_ends_in_a_colon_says_the_short_command_it_introduces(embedder: LocalEmbedder) -> None:
    # "... which you can install using pip:" promises the command; the lead says it, not only the quote below.
    text = (
        "## Proxies\n\nHTTPX can route requests through a SOCKS proxy. SOCKS support is an optional extra, which you "
        "can install using `pip`:\n\n```shell\n$ pip install httpx[socks]\n```\n\n"
        "Then pass a `socks5://` URL as the proxy."
    )
    question = "How do I get SOCKS proxy support?"
    hits = [Hit(document=Document(text=text, metadata={"source": "proxies.md"}), score=0.6, rank=1)]
    lead = extract(question, hits, embedder, ExtractiveConfig(threshold=0.0)).answer.split("\n", 1)[0]
    assert lead.endswith('install using `pip`: `$ pip install httpx[socks]`" [1].'), lead
    # A block too long to read in one line stays in the quote only.
    long_block = text.replace("$ pip install httpx[socks]", "\n".join(f"$ pip install package-{n}" for n in range(12)))
    hits = [Hit(document=Document(text=long_block, metadata={"source": "proxies.md"}), score=0.6, rank=1)]
    result = extract(question, hits, embedder, ExtractiveConfig(threshold=0.0))
    lead = result.answer.split("\n", 1)[0]
    assert lead.endswith('install using `pip`:" [1].') and "package-11" in result.answer, result.answer


def test_an_indented_pdf_bullet_ends_where_a_line_starts_left_of_its_marker() -> None:
    text = (
        "Analytics\n\n    ● Personalization: Customized login experience based on user history and\n"
        "    preferences\nThis PRD serves as the foundation for the login dashboard."
    )
    assert [t for _, t in units_of(text)] == [
        "Personalization: Customized login experience based on user history and preferences",
        "This PRD serves as the foundation for the login dashboard.",
    ]
