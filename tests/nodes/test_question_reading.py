"""What the extractive answerer reads off a question's wording (``nodes/phrasing.py``): the kind of answer it asks
for and the names in it. Questions come from users and from strangers' eval sets, so any text must be read."""

from __future__ import annotations

import random

from flowbuilder.nodes.phrasing import (
    counted_noun,
    counts,
    expected_kind,
    face_reader,
    focus,
    mentions,
    name_key,
    named_terms,
)

COMMON = frozenset({"the", "a", "is", "does", "do", "i", "my", "on", "what", "which", "how", "can"})


def test_the_kind_of_answer_a_question_asks_for() -> None:
    kinds = {
        "What time does the Friday demo start?": "clock time",
        "After how many failed attempts is an account locked?": "quantity",
        "Which Python versions are supported?": "version",
        "Which environment variable moves the cache?": "environment variable",
        "What exception do I get on a timeout?": "exception",
        "Which HTTP status code comes back when I am throttled?": "status code",
        "What phone number do I call for support?": "phone number",
        "How often does staging get fresh data?": "frequency",
        "How frequently is the key rotated?": "frequency",
        "What is the biggest file I can upload?": "quantity",
    }
    for question, name in kinds.items():
        kind = expected_kind(question)
        assert kind is not None and kind.name == name, question
    assert expected_kind("How do I turn caching off?") is None
    assert expected_kind("Why does pip download old versions?") is None  # "versions" asked about, not for


def test_a_kind_is_held_by_the_text_that_gives_one() -> None:
    time = expected_kind("What time does the freeze start?")
    assert time is not None and time.held.search("The freeze starts at 14:00 on Tuesday.")
    assert not time.held.search("The freeze starts on Tuesday.")
    often = expected_kind("How often does staging get fresh data?")
    assert often is not None and often.held.search("| staging | every Sunday night |")  # no digit, still an answer
    assert often.held.search("Backups run nightly.") and often.held.search("Keys rotate every 90 days.")
    assert not often.held.search("Staging holds a copy of production data.")


def test_any_text_is_read_and_every_name_comes_from_the_question() -> None:
    rng = random.Random(32)
    alphabet = "aZ9_/.-+ ?:'\"`$%é漢\n\t" + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    for _ in range(3000):
        question = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        names = named_terms(question, COMMON)
        assert all(name in question for name in names)
        kind = expected_kind(question)
        if kind is not None:
            kind.held.search(question)
        keyed = name_key(question)
        assert all(mentions(keyed, name) for name in names)  # a name is found in the text it came from
        noun = counted_noun("how many " + question)
        assert noun is None or noun in question.lower()
        counts(question, noun or "x")
        assert isinstance(face_reader(question), str)
    long_token = "1" * 50_000 + "x" + "ab_" * 20_000 + "/3"
    assert named_terms(f"Does it take {long_token}?", COMMON) == [long_token]


def test_the_lead_turns_the_question_to_the_reader_but_keeps_what_names_things() -> None:
    # "me" in a path or in quotes names a route and a handler; rewriting it to "you" changed the question.
    assert face_reader("I have /users/me and the 'me' handler never runs. What am I doing wrong?") == (
        "you have /users/me and the 'me' handler never runs. What are you doing wrong?"
    )
    assert face_reader("I'm stuck: my me.id field is empty and I've checked \"me\"") == (
        "you're stuck: your me.id field is empty and you've checked \"me\""
    )
    assert face_reader("Where is my Remember Me box? Tell me.") == "Where is your Remember Me box? Tell you."


def test_what_a_how_many_question_counts_and_where_a_text_counts_it() -> None:
    assert counted_noun("After how many failed attempts is an account locked?") == "attempts"
    assert counted_noun("How many single-use backup codes do I get?") == "codes"
    assert counted_noun("How many people can join a workspace?") == "people"
    assert counted_noun("What is the limit?") is None
    assert counts("Accounts lock after 5 failed login attempts.", "attempts")
    assert counts("Max attempts: 5", "attempts") and counts("You get ten backup codes.", "codes")
    assert counts("| Black Friday | 1200 | 60 minutes |", "users")  # a table row: its header names the column
    assert not counts("Both testers must agree on a swap, within 2 days.", "testers")
    assert not counts("Run it on port 8000.", "workers")


def test_the_lead_keeps_a_what_question_whole_enough_to_read() -> None:
    # Dropping "does" left "which time the Friday demo start"; the lead now reads as the question asked it.
    assert focus("What time does the Friday demo start?") == "What time does the Friday demo start"
    assert focus("Which Python versions does pip support for my project?") == (
        "Which Python versions does pip support for your project"
    )
    assert focus("What is the biggest message Starlette will accept?") == "the biggest message Starlette will accept"
