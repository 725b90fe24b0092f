"""Variants of one flow for a parameter sweep: ``--vary NODE.FIELD=V1,V2,...`` (repeatable).

Every combination of the given values (cartesian product) becomes a flow with those config fields
changed. Values are JSON when they parse as JSON (``300``, ``true``, ``["\\n\\n", "\\n"]``) and plain
strings otherwise; commas inside brackets, braces or quotes do not separate values. Each changed
config is validated by the node's own pydantic Config before anything runs, and unknown nodes or
fields are errors that list what exists. Each variant writes to its own vector-store collection
(the collection name gets a suffix derived from the variant), so variants never search each other's
chunks; the suffix is deterministic, so a re-run reuses what was already embedded.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from flowbuilder.errors import FlowError, UnknownNodeTypeError
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.registry import NodeRegistry, default_registry

MAX_VARIANTS = 200
"""A larger sweep is almost certainly a typo (and would take hours); say so instead of starting it."""


class VariantError(FlowError):
    """A ``--vary`` option is malformed or names a node, field or value the flow cannot take."""


@dataclass(frozen=True)
class Vary:
    """One parsed ``NODE.FIELD=V1,V2,...`` option."""

    node: str
    field: str
    values: tuple[Any, ...]

    @property
    def key(self) -> str:
        return f"{self.node}.{self.field}"


def split_values(text: str) -> list[str]:
    """``text`` split on commas that are not inside brackets, braces or double quotes."""
    parts: list[str] = []
    depth = 0
    quoted = escaped = False
    current: list[str] = []
    for char in text:
        if quoted:
            current.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def parse_value(text: str) -> Any:
    """JSON when ``text`` parses as JSON, else the text itself (stripped)."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        return stripped


def parse_vary(option: str) -> Vary:
    """``"splitter.chunk_size=300,500"`` as a :class:`Vary`; a malformed option is a :class:`VariantError`."""
    target, equals, raw_values = option.partition("=")
    node, dot, field = target.strip().rpartition(".")
    if not equals or not dot or not node or not field:
        raise VariantError(f"--vary '{option}': expected NODE.FIELD=V1,V2,... (e.g. splitter.chunk_size=300,500,1000)")
    raw = split_values(raw_values)
    if not raw_values.strip() or any(not part.strip() for part in raw):
        raise VariantError(f"--vary '{option}': give one or more comma-separated values after '=', none empty")
    values = tuple(parse_value(part) for part in raw)
    return Vary(node.strip(), field.strip(), values)


def build_variants(flow: Flow, varies: list[str], registry: NodeRegistry | None = None) -> list[tuple[str, Flow]]:
    """``(label, flow)`` for every combination of the ``varies`` values, in the order given.

    The label names the changed fields (``splitter.chunk_size=300 splitter.chunk_overlap=0``). Raises
    :class:`VariantError` naming the option and listing the flow's nodes or the node's fields.
    """
    if not varies:
        raise VariantError("no --vary option: give at least one NODE.FIELD=V1,V2,...")
    registry = registry or default_registry()
    parsed = [parse_vary(option) for option in varies]
    seen: set[str] = set()
    for vary in parsed:
        if vary.key in seen:
            raise VariantError(f"--vary {vary.key} is given twice; list all its values in one option")
        seen.add(vary.key)
        _check(flow, vary, registry)
    combinations = list(itertools.product(*(vary.values for vary in parsed)))
    if len(combinations) > MAX_VARIANTS:
        raise VariantError(
            f"--vary makes {len(combinations)} variants (more than {MAX_VARIANTS}); sweep fewer values at a time"
        )
    variants: list[tuple[str, Flow]] = []
    for values in combinations:
        changes = [(vary, value) for vary, value in zip(parsed, values, strict=True)]
        label = " ".join(f"{vary.key}={_show(value)}" for vary, value in changes)
        variant = flow.model_copy(deep=True)
        nodes = {node.id: node for node in variant.nodes}
        for vary, value in changes:
            nodes[vary.node].config[vary.field] = value
        for node_id in dict.fromkeys(vary.node for vary in parsed):
            _check_combination(nodes[node_id], label, registry)
        _separate_collections(variant, label, {vary.key for vary in parsed}, registry)
        variant.name = f"{flow.name} [{label}]"
        variants.append((label, variant))
    return variants


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _check(flow: Flow, vary: Vary, registry: NodeRegistry) -> None:
    nodes = {node.id: node for node in flow.nodes}
    node = nodes.get(vary.node)
    if node is None:
        raise VariantError(
            f"--vary {vary.key}: the flow has no node '{vary.node}'; its nodes are: {', '.join(sorted(nodes))}"
        )
    try:
        node_class = registry.get(node.type)
    except UnknownNodeTypeError:
        raise VariantError(f"--vary {vary.key}: node '{vary.node}' has the unknown type '{node.type}'") from None
    fields = node_class.Config.model_fields
    if vary.field not in fields:
        available = ", ".join(sorted(fields)) or "(none)"
        raise VariantError(
            f"--vary {vary.key}: node '{vary.node}' ({node.type}) has no field '{vary.field}'; its fields are: "
            f"{available}"
        )
    for value in vary.values:
        try:
            node_class.Config.model_validate({**node.config, vary.field: value})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or vary.field
            raise VariantError(
                f"--vary {vary.key}={_show(value)}: not a valid config for node '{vary.node}' ({node.type}): "
                f"{where}: {first.get('msg', exc)}"
            ) from None


def _check_combination(node: NodeSpec, label: str, registry: NodeRegistry) -> None:
    """The node's checks across fields (chunk_overlap <= chunk_size, ...) on one combination of values."""
    node_class = registry.get(node.type)
    try:
        config = node_class.Config.model_validate(node.config)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise VariantError(f"variant '{label}': node '{node.id}' ({node.type}): {first.get('msg', exc)}") from None
    problems = node_class.config_problems(config)
    if problems:
        raise VariantError(f"variant '{label}': node '{node.id}' ({node.type}): {problems[0][1]}")


def _separate_collections(flow: Flow, label: str, varied: set[str], registry: NodeRegistry) -> None:
    """Give every vector store of the variant its own collection, unless the sweep varies it itself."""
    suffix = hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]
    for node in flow.nodes:
        if f"{node.id}.collection" in varied or node.type not in registry:
            continue
        config_class = registry.get(node.type).Config
        if "collection" not in config_class.model_fields:
            continue
        base = str(getattr(config_class.model_validate(node.config), "collection", "") or "flowbuilder")
        trimmed = re.sub(r"[^A-Za-z0-9._-]", "-", base)[:50].rstrip("._-") or "flowbuilder"
        node.config["collection"] = f"{trimmed}-v{suffix}"
