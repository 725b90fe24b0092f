"""Text from a flow, shown on a terminal, cannot steer the terminal.

A flow file is written by a stranger: a node id, a config value or a server's reply can carry escape
sequences (move the cursor, clear the line, set the title) or a carriage return, and so make the terminal
show "valid" over an error. :func:`escape_controls` turns every control character (C0 but newline and tab,
DEL, C1), bidirectional overrides and lone surrogates into a visible ``\\uXXXX``; :class:`SafeStream` does
it for everything written to ``stdout``/``stderr`` by the command line. Our own progress line uses
:meth:`SafeStream.control` for its carriage return.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any, TextIO

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def escape_controls(text: str) -> str:
    """``text`` with control characters, bidi overrides and lone surrogates shown as ``\\uXXXX``."""
    return _CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def excerpt(text: object, limit: int = 120) -> str:
    """A short, escaped excerpt of untrusted text (a server's reply, a config value) for one error line."""
    value = escape_controls(str(text).replace("\n", " ").replace("\t", " "))
    return value if len(value) <= limit else value[: limit - 1] + "…"


def quote_argv(argv: Sequence[str]) -> str:
    """A command as one shell-quoted line (``bash -c 'touch /tmp/x'``), controls escaped."""
    return escape_controls(shlex.join([str(a) for a in argv]))


class SafeStream:
    """A text stream wrapper that escapes control characters in everything written to it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(escape_controls(text))
        return len(text)

    def control(self, text: str) -> None:
        """Write our own terminal control (a progress line's carriage return) unescaped."""
        self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def write_control(stream: Any, text: str) -> None:
    """``stream.control(text)`` on a :class:`SafeStream`, else a plain write."""
    control = getattr(stream, "control", None)
    if callable(control):
        control(text)
    else:
        stream.write(text)


__all__ = ["SafeStream", "escape_controls", "excerpt", "quote_argv", "write_control"]
