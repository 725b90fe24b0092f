"""The lead sentence of an extractive answer, in the question's terms, built without a model.

The question's *focus* is what it asks about, turned to face the reader ("How do I log in from a headless
machine?" -> "logging in from a headless machine" is beyond rules; "to log in from a headless machine" is
not). The lead joins the focus and the chosen span: ``On <focus>: "<span>" [n].``, or for a labelled
record ``The closest test case is LOGIN-027, "Verify Login - 1440px desktop layout" [1].``
The span is quoted as it stands in the document, never reworded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PRONOUNS = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "we": "you",
    "us": "you",
    "our": "your",
    "ours": "yours",
    "am": "are",
}
_HOW_TO = re.compile(r"^how (?:do|can|should|would|could|must) (?:i|we|you|one|users?|people|someone)\s+(.+)$", re.I)
_WHAT_IS = re.compile(r"^(?:what|which|who)(?:'s| is| are| was| were)\s+(.+)$", re.I)
_YES_NO = re.compile(
    r"^(is|are|was|were|does|do|did|can|could|may|will|would|should|must|has|have|had)\s+"
    r"(?:(i|we|you|it|they|there|he|she|one)\s+)?(.+)$",
    re.I,
)
_DO = {"do", "does", "did"}
_QUANTITY = re.compile(r"^(how (?:many|much|long|often|fast|big|large|old|soon|far))\s+(.+)$", re.I)
_WH = re.compile(r"^(when|where|why|who|whom|whose|which|what|how)\s+(.+)$", re.I)
_POLITE = re.compile(r"^(?:please\s+)?(?:(?:can|could) you\s+)?(?:tell me|explain|show me|describe)\s+", re.I)
NUMERIC = re.compile(
    r"^(?:(?:after|for|in|within|at|by|up to|about) )?"
    r"(?:how (?:many|much|long|often|fast|big|large|old|soon|far)|what (?:is the |are the )?(?:number|amount|"
    r"price|cost|percentage|percent|rate|size|limit|maximum|minimum|timeout|duration|version|uptime|target|"
    r"biggest|largest|smallest|longest|shortest))\b",
    re.I,
)
_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty|hundred|thousand|"
    r"once|twice|daily|weekly|monthly|hourly|annually|yearly)\b",
    re.I,
)


_WORD = re.compile(r"(?<![\w/.'\"`-])[A-Za-z]+(?![\w/'\"`-]|\.\w)")
"""A word standing alone: not part of a path (``/users/me``), an identifier (``me.id``) or a quoted string
(``the 'me' handler``), which name things and are kept as the user wrote them."""


def face_reader(text: str) -> str:
    """First person to second: "my workspace" -> "your workspace", "I'm" -> "you're"."""
    text = re.sub(r"\bI'(m|ve|d|ll)\b", lambda m: "you" + _CONTRACTED[m.group(1)], text)
    return _WORD.sub(lambda m: _swap(m.group(0)), text)


_CONTRACTED = {"m": "'re", "ve": "'ve", "d": "'d", "ll": "'ll"}


def _swap(word: str) -> str:
    # Only lower-case words (and "I"): a capitalised "Me" is part of a name ("Remember Me").
    if word != "I" and not word.islower():
        return word
    return _PRONOUNS.get(word.lower(), word)


def focus(question: str) -> str:
    """What the question asks about, facing the reader: "What is the minimum Python version?" ->
    "the minimum Python version"."""
    text = _POLITE.sub("", " ".join(question.split()).rstrip("?.! "))
    for pattern, shape in (
        (_HOW_TO, "how to {0}"),
        (_QUANTITY, "{0} {1}"),
        (_WHAT_IS, "{0}"),
        (_WH, "{0} {1}"),
    ):
        if pattern is _WH and (yes_no := _YES_NO.match(text)):
            return _whether(*yes_no.groups())
        match = pattern.match(text)
        if match:
            groups = [g for g in match.groups()]
            return face_reader(shape.format(*groups)).strip()
    return face_reader(text)


def _whether(aux: str, subject: str | None, rest: str) -> str:
    """ "Can I move my workspace" -> "whether you can move your workspace"; without a pronoun subject the
    rest is the topic: "Is two-factor authentication required" -> "two-factor authentication required"."""
    if subject is None:
        return face_reader(rest)
    verb = "" if aux.lower() in _DO else f" {aux.lower()}"
    if subject.lower() in ("i", "we") and verb == " am":
        verb = " are"
    return face_reader(f"whether {subject}{verb} {rest}").replace("whether you is", "whether you are")


@dataclass(frozen=True)
class AnswerKind:
    """A kind of answer a question's wording asks for, and what a passage that gives one holds."""

    name: str
    asked: re.Pattern[str]
    held: re.Pattern[str]


ANSWER_KINDS = (
    AnswerKind(
        "clock time",
        re.compile(r"^(?:at )?what time\b", re.I),
        re.compile(r"\b\d{1,2}(?::\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}[:.]\d\d\b|\b(?:noon|midnight)\b", re.I),
    ),
    AnswerKind(
        "version",
        re.compile(r"^(?:which|what) (?:[\w-]+ )?(?:versions?|releases?)\b", re.I),
        re.compile(r"\b\d+(?:\.\d+)+\b|\b(?:version|release|v)\s?\d+\b", re.I),
    ),
    AnswerKind(
        "environment variable",
        re.compile(r"\b(?:environment|env) var(?:iable)?s?\b", re.I),
        re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\$[A-Z][A-Z0-9_]+"),
    ),
    AnswerKind(
        "exception",
        re.compile(r"^(?:which|what) (?:[\w-]+ )?(?:exception|error class)", re.I),
        re.compile(r"\b[A-Z]\w*(?:Error|Exception|Timeout|Warning)\b"),
    ),
    AnswerKind(
        "status code",
        re.compile(r"\b(?:status|error|response) codes?\b", re.I),
        re.compile(r"\b[1-5]\d\d\b"),
    ),
    AnswerKind(
        "phone number",
        re.compile(r"\b(?:phone|telephone|fax) numbers?\b", re.I),
        re.compile(r"\+?\d[\d ()./-]{5,}\d"),
    ),
    AnswerKind(
        "frequency",
        re.compile(r"^(?:\w+ )?how (?:often|frequently)\b", re.I),
        re.compile(
            _NUMBER.pattern
            + r"|\bevery\b|\b(?:each|per|a|an) (?:day|week|month|year|night|morning|evening|hour|minute|second|sprint|"
            r"release|build)\b|\b(?:nightly|weekdays?|weekends?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?)\b",
            re.I,
        ),
    ),
    AnswerKind("quantity", NUMERIC, _NUMBER),
)
"""Checked in order; the first whose ``asked`` matches the question is what it asks for."""


_COUNTED = re.compile(r"\bhow many\s+([\w-]+(?:\s+[\w-]+){0,3})", re.I)


def counted_noun(question: str) -> str | None:
    """What a "how many" question counts, as asked ("attempts" in "After how many failed attempts is an account
    locked?"): the first of the next four words that ends in 's', else the next word."""
    match = _COUNTED.search(" ".join(question.split()))
    if not match:
        return None
    words = [w.lower() for w in match.group(1).split()]
    return next((w for w in words if len(w) > 3 and w.endswith("s") and not w.endswith("ss")), words[0])


def counts(text: str, noun: str) -> bool:
    """Whether ``text`` gives a number of ``noun``: a number within four words of a word sharing its stem
    ("5 failed login attempts", "attempts: 5", "one attempt"), or any number in a table row (its header names the
    column)."""
    if text.lstrip().startswith("|") and _NUMBER.search(text):
        return True
    stem = re.sub(r"(?:es|s)$", "", noun) if noun.endswith("s") and not noun.endswith("ss") else noun
    stem = stem[: max(4, len(stem) - 1)]
    words = re.findall(r"[\w.:%+-]+", text)
    for at, word in enumerate(words):
        if word.lower().startswith(stem) and _NUMBER.search(" ".join(words[max(0, at - 4) : at + 5])):
            return True
    return False


def expected_kind(question: str) -> AnswerKind | None:
    """The kind of answer ``question`` asks for, when its wording says (a number, a clock time, a version ...)."""
    text = " ".join(question.split())
    return next((kind for kind in ANSWER_KINDS if kind.asked.search(text)), None)


@dataclass(frozen=True)
class Expected:
    """What a question's wording says its answer holds: a kind, and for "how many" what is counted."""

    kind: AnswerKind
    counted: str | None = None

    def held_by(self, text: str) -> bool:
        return bool(self.kind.held.search(text)) and (self.counted is None or counts(text, self.counted))

    def __str__(self) -> str:
        if self.counted:
            return f"a number of {self.counted}"
        return ("an " if self.kind.name[0] in "aeiou" else "a ") + self.kind.name


def expected(question: str) -> Expected | None:
    """:func:`expected_kind`, with the counted noun of a "how many" question (:func:`counted_noun`)."""
    kind = expected_kind(question)
    if kind is None:
        return None
    return Expected(kind, counted_noun(question) if kind.name == "quantity" else None)


def lead_for_span(question: str, span: str, cite: str) -> str:
    """``On <focus>: "<span>" [n].``"""
    about = focus(question)
    about = about[0].upper() + about[1:] if about else "The documents"
    span = span.strip()
    return f'{about}: "{span}" {cite}.'


def lead_for_record(record_id: str, title: str, cite: str, noun: str = "record") -> str:
    titled = f', "{title}"' if title and title != record_id else ""
    return f"The closest {noun} is {record_id}{titled} {cite}."


def record_noun(id_label: str, source: str) -> str:
    """What to call a record: "test case" for a test-case id column, else "record"."""
    label = id_label.lower()
    if "scenario" in label or "test" in label or "tid" in label or "test" in source.lower():
        return "test case"
    return "record"


_TOKEN = re.compile(r"[A-Za-z0-9][\w./+-]*[\w+]|[A-Za-z0-9]")
_ACRONYM = re.compile(r"^[A-Z]{2,4}s?$")
"""Short all-caps words (URL, SMS, SSO, PDF): documents often spell them out or use another, so their absence
says little."""


def named_terms(question: str, common: frozenset[str]) -> list[str]:
    """The names in ``question`` that have no paraphrase: proper nouns ("Okta", "Docker"), identifiers
    (``set_cookie``, ``maxAge``) and names with a digit ("HTTP/3"). ``common`` are words never taken as names
    (stop words, question words). Plain numbers and short acronyms are left out."""
    names = []
    for at, match in enumerate(_TOKEN.finditer(question)):
        word = match.group(0).rstrip(".")
        if word.lower() in common or re.fullmatch(r"\d[\w.,:-]*", word):
            continue
        identifier = re.search(r"[a-z][A-Z]|_|/", word) or (re.search(r"\d", word) and re.search(r"[A-Za-z]", word))
        proper = at > 0 and word[0].isupper() and len(word) > 1 and not _ACRONYM.match(word)
        if identifier or proper:
            names.append(word)
    return names


_SEPARATORS = re.compile(r"[\s_./`-]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_key(text: str) -> str:
    """Lower case with ``_ - . / `` and runs of white space read as one space: the form in which a name and
    a text are compared, so ``set_cookie`` is found under a "Set Cookie" heading."""
    return _SEPARATORS.sub(" ", text.lower()).strip()


def mentions(keyed_text: str, name: str) -> bool:
    """Whether a text (already put through :func:`name_key`) mentions ``name``: written as asked, with its
    words apart (``maxAge``: "max age", ``set_cookie``: "set cookie") or run together (``SameSite``:
    "samesite"), a plural 's' ignored."""
    words = name_key(_CAMEL.sub(" ", name))
    forms = {name_key(name), words, words.replace(" ", "")}
    if any(form and (form in keyed_text or form.removesuffix("s") in keyed_text) for form in forms):
        return True
    family = next((f for f in _PLATFORM_FAMILIES if name_key(name) in f), ())
    return any(re.search(rf"\b{re.escape(other)}\b", keyed_text) for other in family)


_PLATFORM_FAMILIES = (
    frozenset({"linux", "unix", "posix", "unix like"}),
    frozenset({"macos", "mac", "osx", "os x", "darwin"}),
    frozenset({"windows", "win32", "win64"}),
)
"""Platform names documents use for one another: pip's docs say "Unix" where a user asks about "Linux"."""
