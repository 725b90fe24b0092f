"""Reading YAML that came from a stranger (Dify DSL): PyYAML's safe loader, with the JSON reader's limits.

``yaml.safe_load`` builds only plain values (no Python objects), but YAML still has ways to cost a lot from
a small file: aliases (``*a``) that repeat an anchored value without copying it ("billion laughs"), and deep
nesting. This loader refuses every alias (Dify writes none) and any tag outside the plain YAML types, and
then the parsed value goes through :func:`limits.check_structure` like any JSON flow file: depth, sizes and
counts, lone surrogates mended. Values JSON has no form for become what JSON would hold: dates as ISO text,
keys as text; ``.inf`` and ``.nan`` are refused as in JSON.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import yaml

from flowbuilder.errors import FlowFileError
from flowbuilder.formats.limits import MAX_DEPTH, MAX_FLOW_BYTES, check_structure


class _Refused(ValueError):
    pass


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing aliases and nesting beyond :data:`limits.MAX_DEPTH` while composing."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            line = event.start_mark.line + 1 if event.start_mark else "?"
            raise _Refused(f"uses a YAML alias (*{event.anchor}, line {line}); aliases are refused in flow files")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"is nested too deeply (more than {MAX_DEPTH} levels)")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_untrusted_yaml(text: str, origin: object) -> Any:
    """Parse ``text`` with every limit applied; raise :class:`FlowFileError` naming ``origin``."""
    if len(text) > MAX_FLOW_BYTES:
        raise FlowFileError(
            origin, f"is {len(text) / 1e6:.1f} MB; flow files over {MAX_FLOW_BYTES / 1e6:.0f} MB are refused"
        )
    try:
        data = yaml.load(text, Loader=_Loader)
    except _Refused as exc:
        raise FlowFileError(origin, str(exc)) from None
    except RecursionError:
        raise FlowFileError(origin, f"is nested too deeply (at most {MAX_DEPTH} levels)") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise FlowFileError(origin, f"is not valid YAML{where}: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise FlowFileError(origin, f"is not valid YAML ({str(exc).splitlines()[0][:120]})") from None
    except ValueError as exc:  # an integer of thousands of digits, a bad date
        raise FlowFileError(origin, f"is not valid YAML ({str(exc)[:120]})") from None
    try:
        plain = _plain(data, 0)
    except _Refused as exc:
        raise FlowFileError(origin, str(exc)) from None
    return check_structure(plain, origin)


def _plain(value: Any, depth: int) -> Any:
    """``value`` as JSON would hold it (the loader already bounded the depth)."""
    if isinstance(value, dict):
        return {_key(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if len(str(abs(value))) > 30:
            raise _Refused(f"has an integer of {len(str(abs(value)))} digits (at most 30)")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused("has .inf or .nan, which JSON cannot hold")
        return value
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        raise _Refused("has a !!binary value; flow files hold text")
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)
