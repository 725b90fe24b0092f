"""Reading JSON that came from a stranger: limits checked before any work, one clear line per breach.

Every flow file (native, n8n, LangFlow, an upload in the UI) is parsed here. The parser refuses what
no real flow has and what would make later code misbehave: nesting deep enough to exhaust the stack,
integers of thousands of digits, ``NaN`` / ``Infinity`` (strict JSON parsers reject them, so we never
write them back), floats that overflow, arrays and strings big enough to cost gigabytes. Lone UTF-16
surrogates (valid JSON escapes, but unwritable as UTF-8) become U+FFFD so the flow can still be saved.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from flowbuilder.errors import FlowFileError

MAX_FLOW_BYTES = 20 * 1024 * 1024
MAX_DEPTH = 100
"""LangFlow nests a group's whole sub-flow inside a node: about 30 levels; 100 leaves room."""
MAX_INT_DIGITS = 30
MAX_STRING_CHARS = 2_000_000
MAX_ARRAY_ITEMS = 100_000
MAX_VALUES = 2_000_000
MAX_NODES = 5_000
MAX_EDGES = 20_000

_SURROGATE = re.compile("[\ud800-\udfff]")


class _Refused(ValueError):
    """Raised from inside the parser hooks; turned into a FlowFileError naming the file."""


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"has an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"has a number too large to represent ({text[:20]}…)")
    return value


def _parse_constant(name: str) -> float:
    raise _Refused(f"has {name}, which is not JSON (strict parsers reject it)")


def check_size(origin: object, size: int) -> None:
    """Refuse a file over :data:`MAX_FLOW_BYTES` before reading it."""
    if size > MAX_FLOW_BYTES:
        raise FlowFileError(
            origin, f"is {size / 1e6:.1f} MB; flow files over {MAX_FLOW_BYTES / 1e6:.0f} MB are refused"
        )


def parse_untrusted_json(text: str, origin: object) -> Any:
    """Parse ``text`` with every limit applied; raise :class:`FlowFileError` naming ``origin``."""
    if len(text) > MAX_FLOW_BYTES:
        raise FlowFileError(
            origin, f"is {len(text) / 1e6:.1f} MB; flow files over {MAX_FLOW_BYTES / 1e6:.0f} MB are refused"
        )
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except _Refused as exc:
        raise FlowFileError(origin, str(exc)) from None
    except RecursionError:
        raise FlowFileError(origin, f"is nested too deeply (at most {MAX_DEPTH} levels)") from None
    except json.JSONDecodeError as exc:
        raise FlowFileError(origin, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:  # e.g. Python's own int digit limit
        raise FlowFileError(origin, f"is not valid JSON ({exc})") from None
    return check_structure(data, origin)


def check_structure(data: Any, origin: object) -> Any:
    """Walk ``data`` without recursion, enforcing depth, sizes and counts; mend lone surrogates in place."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    values = 0
    while stack:
        item, depth = stack.pop()
        values += 1
        if values > MAX_VALUES:
            raise FlowFileError(origin, f"has more than {MAX_VALUES:,} values; no real flow is that large")
        if depth > MAX_DEPTH:
            raise FlowFileError(origin, f"is nested too deeply (more than {MAX_DEPTH} levels)")
        if isinstance(item, dict):
            for key in list(item):
                value = item[key]
                if isinstance(key, str) and _SURROGATE.search(key):
                    del item[key]
                    key = _mend(key)
                    item[key] = value
                if isinstance(value, str):
                    item[key] = _checked_string(value, origin)
                elif isinstance(value, dict | list):
                    stack.append((value, depth + 1))
                else:
                    values += 1
        elif isinstance(item, list):
            if len(item) > MAX_ARRAY_ITEMS:
                raise FlowFileError(origin, f"has a list of {len(item):,} items (at most {MAX_ARRAY_ITEMS:,})")
            for index, value in enumerate(item):
                if isinstance(value, str):
                    item[index] = _checked_string(value, origin)
                elif isinstance(value, dict | list):
                    stack.append((value, depth + 1))
                else:
                    values += 1
        elif isinstance(item, str):
            data = _checked_string(item, origin)
    return data


def _checked_string(value: str, origin: object) -> str:
    if len(value) > MAX_STRING_CHARS:
        raise FlowFileError(origin, f"has a text of {len(value):,} characters (at most {MAX_STRING_CHARS:,})")
    return _mend(value) if _SURROGATE.search(value) else value


def _mend(value: str) -> str:
    return _SURROGATE.sub("\ufffd", value)


def check_counts(origin: object, nodes: object, edges: object) -> None:
    """Refuse a flow with more nodes or connections than the builder handles."""
    for what, items, limit in (("nodes", nodes, MAX_NODES), ("connections", edges, MAX_EDGES)):
        count = len(items) if isinstance(items, list | dict) else 0
        if count > limit:
            raise FlowFileError(origin, f"has {count:,} {what} (at most {limit:,}); split it into smaller flows")


def strict_dumps(data: Any, **kwargs: Any) -> str:
    """JSON text that strict parsers accept: a NaN or infinity is an error, never written."""
    try:
        return json.dumps(data, allow_nan=False, ensure_ascii=False, **kwargs)
    except ValueError as exc:
        raise FlowFileError("<output>", f"holds a number that JSON cannot represent ({exc})") from None
