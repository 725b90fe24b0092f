"""A retrieved chunk cut into the units an extractive answer can quote whole.

Two shapes of chunk:

* a **labelled record** (what ``labeller.row`` writes: ``Scenario TID: LOGIN-009\\nDescription: ...``), cut
  into its fields; the record's id and title (its description, title or summary field) lead the answer;
* **prose** (Markdown, PDF text, plain text), cut into sentences (pysbd), list items (a bullet and the
  lines wrapped under it), table rows (read with their header) and code blocks (whole). Headings are not
  quoted; they name the section a unit is in. Each unit keeps the text that gives it context: the
  sentence before it in its paragraph, the line that introduces its list or code block (with the sentence
  before a bare "For example:"), or its table's header.

No unit is ever cut: an answer quotes whole sentences, items, rows and blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

PassageKind = Literal["field", "sentence", "item", "row", "code"]

_FIELD = re.compile(r"^[ \t]*([A-Za-z][\w ()/&.#-]{0,48}?)[ \t]*:[ \t]*(\S.*)$", re.MULTILINE)
_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*(\S*)")
_ITEM = re.compile(r"^(\s*)(?:[-*+●•▪◦‣■□➢►]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+(?=\S)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_MYST_LABEL = re.compile(r"^\s*\([\w:.-]+\)=\s*$")
_INLINE_CODE = re.compile(r"`[^`\n]{1,500}`|(?<![^\s`])[^\s`/\\]*[/\\][^\s`]*[\w/\\]")
"""Inline code, and a path or URL (a token with a slash, matched from its start only: linear on any input)."""
_STASHED = re.compile(r"CODESPAN(\d+)X")
_CODE_DIRECTIVE = re.compile(r"cli|code|console|shell|prompt|literal", re.IGNORECASE)
_LINK_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(?:\S+)?\s*$")
_DIRECTIVE_OPTION = re.compile(r"^\s*:[\w-]+:")
_TERMINAL = re.compile(r"[.:;,!?)\]\"'’”]$")
ID_LABELS = re.compile(r"(?:^|\s)(?:t?id|key|ref|number|no\.?)$", re.IGNORECASE)
TITLE_LABELS = ("description", "testcase description", "test case description", "title", "summary", "name")


@dataclass(frozen=True)
class Passage:
    """One quotable unit of a chunk."""

    index: int
    kind: PassageKind
    text: str
    """The unit as quoted (whitespace runs folded to one space)."""
    label: str = ""
    """A record field's label."""
    context: str = ""
    """What gives the unit its context: the sentence before it, its list's lead-in line, its table's header."""
    section: str = ""
    """The heading the unit sits under ("" when none)."""
    group: int = 0
    """Units of one paragraph, table or list share a group."""

    @property
    def embed_text(self) -> str:
        """What the unit's similarity to the question is judged on."""
        if self.label:
            return f"{self.label}: {self.text}"
        if self.kind == "row" and self.context:
            return f"{self.context} {self.text}"
        return self.text


@dataclass
class Record:
    """A labelled record's identity: what an answer leads with."""

    id: str
    title: str
    id_label: str = ""
    title_label: str = ""


@dataclass
class ParsedChunk:
    """One chunk cut into the units an answer may quote, and the record it is when it is a labelled row, so
    the answerer can lead with the record's id and title."""

    passages: list[Passage] = field(default_factory=list)
    record: Record | None = None


def flat(text: str) -> str:
    return " ".join(text.split())


def parse_chunk(text: str, record_id: str = "") -> ParsedChunk:
    """The quotable units of one chunk, and its record identity when it is a labelled record."""
    lines = [line for line in text.splitlines() if line.strip()]
    fields = [(m.group(1).strip(), m.group(2).strip()) for m in _FIELD.finditer(text)]
    if len(fields) >= 2 and len(fields) * 2 >= len(lines) and not any(_ITEM.match(line) for line in lines[:1]):
        return _record(fields, record_id)
    return ParsedChunk(_prose(text))


def _record(fields: list[tuple[str, str]], record_id: str) -> ParsedChunk:
    seen: set[str] = set()
    passages: list[Passage] = []
    for label, value in fields:
        if value.lower() in seen:  # CSVs repeat columns (two "Expected Result"s): quote each value once
            continue
        seen.add(value.lower())
        passages.append(Passage(len(passages), "field", flat(value), label=label))
    id_field = next((p for p in passages if ID_LABELS.search(p.label)), passages[0])
    title_field = next((p for p in passages if p.label.lower() in TITLE_LABELS), None)
    if title_field is None:
        title_field = next((p for p in passages if p is not id_field), id_field)
    record = Record(record_id or id_field.text, title_field.text, id_field.label, title_field.label)
    return ParsedChunk(passages, record)


def _is_heading_line(lines: list[str], i: int) -> bool:
    """A short standalone line without end punctuation (PDF headings carry no ``#``)."""
    line = lines[i].strip()
    if not line or len(line) > 70 or _TERMINAL.search(line) or _ITEM.match(lines[i]) or line.startswith("|"):
        return False
    if len(line.split()) > 9 or not line[0].isupper():
        return False
    before = i == 0 or not lines[i - 1].strip()
    after = i + 1 < len(lines) and (not lines[i + 1].strip() or bool(_ITEM.match(lines[i + 1])))
    # a heading introduces something: a lone short line at the end of a chunk is text to quote
    return before and after and any(line.strip() for line in lines[i + 1 :])


_BARE_LEAD_IN = re.compile(r"(?:[\w'’-]+[ \t]+){0,2}[\w'’-]+:")
"""A lead-in of at most three words ending in a colon ("For example:", "See below:"): it introduces a block
without saying what the block is about."""


def _prose(text: str) -> list[Passage]:
    from flowbuilder.nodes.splitting.sentences import sentence_spans

    lines = text.splitlines()
    passages: list[Passage] = []
    section = ""
    last_sentence = ""
    before_last = ""  # the sentence before last_sentence, for a lead-in that says nothing by itself
    group = 0

    def add(kind: PassageKind, body: str, context: str = "") -> None:
        body = flat(body)
        if body:
            passages.append(Passage(len(passages), kind, body, context=flat(context), section=section, group=group))

    def introduction() -> str:
        """What introduces the block that follows: the last sentence, with the one before it when the last is a
        bare lead-in ("For example:", "See below:") that names nothing."""
        if _BARE_LEAD_IN.fullmatch(last_sentence) and before_last:
            return f"{before_last} {last_sentence}"
        return last_sentence

    def paragraph(block: list[str]) -> None:
        nonlocal last_sentence, before_last, group
        group += 1
        # Inline code and paths (`~/.local/state/app/logs`, ~/.cache/pip) hold no sentence end: hide them from the
        # segmenter.
        spans: list[str] = []

        def stash(match: re.Match[str]) -> str:
            spans.append(match.group(0))
            return f"CODESPAN{len(spans) - 1}X"

        joined = _INLINE_CODE.sub(stash, flat(" ".join(block)))
        previous = ""
        for start, end in sentence_spans(joined, 0, len(joined)):
            sentence = _STASHED.sub(lambda m: spans[int(m.group(1))], joined[start:end])
            add("sentence", sentence, previous)
            before_last, previous = previous or last_sentence, sentence
        last_sentence = previous

    i = 0
    block: list[str] = []
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        fence = _FENCE.match(line)
        if fence:
            if block:
                paragraph(block)
                block = []
            marker, info = fence.group(1), fence.group(2)
            body: list[str] = []
            i += 1
            closing = re.compile(rf"^\s{{0,3}}{re.escape(marker[0])}{{{len(marker)},}}\s*$")
            while i < len(lines) and not closing.match(lines[i]):
                body.append(lines[i])
                i += 1
            i += 1
            if info.startswith("{") and not _CODE_DIRECTIVE.search(info):  # MyST (note, versionadded ...): prose
                name, argument = info.strip("{}"), line[fence.end() :].strip()
                inside = [b for b in body if not _DIRECTIVE_OPTION.match(b) and not _FENCE.match(b)]
                if name in ("tab", "tab-item", "admonition") and argument:
                    inside = [f"{argument}:", *inside]  # "Linux: ~/.cache/pip"
                paragraph(inside or [f"{name} {argument}".strip()])
            elif any(b.strip() for b in body):
                group += 1
                add("code", "\n".join(body), introduction())
                last_sentence = before_last = ""
            continue
        if not stripped or _MYST_LABEL.match(line) or _LINK_DEFINITION.match(line):
            if block:
                paragraph(block)
                block = []
            i += 1
            continue
        heading = _ATX.match(line)
        if heading or (i + 1 < len(lines) and _SETEXT.match(lines[i + 1]) and not block and stripped):
            if block:
                paragraph(block)
                block = []
            title = heading.group(1) if heading else stripped
            section = title.split(" > ")[-1].lstrip("#").strip() if " > " in title else title
            i += 1 if heading else 2
            last_sentence = before_last = ""
            continue
        if _is_heading_line(lines, i) and not block:
            section = stripped
            last_sentence = before_last = ""
            i += 1
            continue
        if stripped.startswith("|"):
            if block:
                paragraph(block)
                block = []
            header = ""
            group += 1
            while i < len(lines) and lines[i].strip().startswith("|"):
                row = lines[i].strip()
                if _TABLE_SEPARATOR.match(row):
                    pass
                elif not header:
                    header = row
                else:
                    add("row", row, header)
                i += 1
            if header and not any(p.kind == "row" and p.context == flat(header) for p in passages):
                add("row", header)
            continue
        item = _ITEM.match(line)
        if item:
            if block:
                paragraph(block)
                block = []
            if not passages or passages[-1].kind != "item":
                group += 1
            lead_in = introduction() if last_sentence.endswith(":") else ""
            indent = len(item.group(1))
            body = [line[item.end() :]]
            i += 1
            while i < len(lines) and lines[i].strip() and not _ITEM.match(lines[i]) and not _FENCE.match(lines[i]):
                if lines[i].strip().startswith("|") or _ATX.match(lines[i]):
                    break
                outdented = len(lines[i]) - len(lines[i].lstrip()) < indent
                if outdented and (_is_heading_line(lines, i) or indent > 0):
                    break  # an indented bullet (PDF text) ends where a line starts left of its marker
                body.append(lines[i])
                i += 1
            add("item", " ".join(body), lead_in)
            last_sentence = lead_in or last_sentence
            continue
        block.append(line)
        i += 1
    if block:
        paragraph(block)
    return passages
