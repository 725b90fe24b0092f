"""A one-line guess at what imported code does, from its text alone.

n8n Code nodes and LangFlow custom components carry source that Flowbuilder never runs. The report
still says what the code seemed to do, so a user knows what the placeholder stands for. This reads
the text with a few patterns; nothing is parsed, compiled or executed.
"""

from __future__ import annotations

import re

# (pattern, what it suggests); the first few that match, in this order, make the summary.
_SIGNS: tuple[tuple[str, str], ...] = (
    (r"\b(fetch|axios|\$http|httpRequest|requests\.(get|post)|urllib|http\.request)\b", "calls a web API"),
    (r"\$input\.all\(\)|\$items\(|items\.map|for\s*\(\s*const\s+\w+\s+(of|in)\s+\$input", "reads every item"),
    (r"pageContent|\.metadata\b|document\.", "reads documents (text and metadata)"),
    (r"JSON\.parse|json\.loads", "parses JSON"),
    (r"JSON\.stringify|json\.dumps|toJsonString", "writes JSON"),
    (r"\.split\(|\.slice\(|chunk", "splits text or lists"),
    (r"\.join\(|\+=\s*[\"'`]|concat", "joins text"),
    (r"\.replace\(|re\.sub|RegExp|/[^/\n]+/[gimsuy]*\.test", "cleans or rewrites text"),
    (r"\.filter\(|\bif\s*\(", "filters items"),
    (r"\.map\(|\.reduce\(|list comprehension|\[\s*\w+\s+for\s+\w+\s+in\b", "transforms each item"),
    (r"\bDate\b|\$now|datetime", "uses dates"),
    (r"\bMath\.random|uuid|crypto", "makes ids or random values"),
    (r"\bopenai\b|\bembed|\bllm\b|ChatOpenAI", "calls a model"),
)
_RETURN = re.compile(r"return\s*\{?\s*\[?\s*\{?\s*['\"]?(\w+)['\"]?\s*:", re.MULTILINE)


def summarize_code(source: object, language: str = "") -> str:
    """E.g. ``JavaScript, 9 lines: reads every item; joins text; returns {context}``."""
    if not isinstance(source, str) or not source.strip():
        return "no code"
    text = source
    lines = [line for line in text.splitlines() if line.strip() and not line.strip().startswith(("//", "#"))]
    lang = language or ("Python" if re.search(r"^\s*(def |import |from \w+ import)", text, re.M) else "JavaScript")
    found = [what for pattern, what in _SIGNS if re.search(pattern, text)]
    returned = _RETURN.search(text)
    parts = found[:4]
    if returned:
        parts.append(f"returns {{{returned.group(1)}}}")
    shown = "; ".join(parts) if parts else "does something this summary cannot tell"
    return f"{lang}, {len(lines)} line{'s' if len(lines) != 1 else ''}: {shown}"
