"""What the source tool did without a node, made explicit after an import.

LangFlow and n8n convert values where a connection needs it: a store's hits wired into a chat output
become text, a parser's rows become one message. Flowbuilder's ports are typed, so the importer puts
the conversion in as a node of its own (``parser.stringify``) and the report says where.
"""

from __future__ import annotations

import re

from flowbuilder.flow import Edge, Flow, NodeSpec, Position
from flowbuilder.formats import roles
from flowbuilder.formats.report import ImportReport
from flowbuilder.ports import PortType, compatible
from flowbuilder.registry import NodeRegistry, default_registry

# A prompt variable ``{name}``; ``{{`` and ``}}`` are literal braces (prompt.template's own reading).
_PROMPT_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Values a source tool turns into text implicitly, and the text-like ports that take them.
_TO_TEXT_FROM = {PortType.HITS, PortType.RECORDS, PortType.CHUNKS}
_TEXT_PORTS = {PortType.TEXT, PortType.MESSAGE, PortType.PROMPT, PortType.ANSWER}


def convert_implicitly(flow: Flow, report: ImportReport, registry: NodeRegistry | None = None) -> None:
    """Insert a ``parser.stringify`` on each connection whose source tool turned items into text."""
    registry = registry or default_registry()
    for edge in list(flow.edges):
        source, target = flow.find_node(edge.source), flow.find_node(edge.target)
        if source is None or target is None or source.type not in registry or target.type not in registry:
            continue
        outs = {p.name: p.type for p in registry.get(source.type).outputs}
        ins = {p.name: p.type for p in registry.get(target.type).inputs}
        out_type, in_type = outs.get(edge.source_port), ins.get(edge.target_port)
        if out_type is None or in_type is None or compatible(out_type, in_type):
            continue
        if out_type not in _TO_TEXT_FROM or in_type not in _TEXT_PORTS:
            continue
        node_id = f"{source.id}-as-text"
        while flow.find_node(node_id) is not None:
            node_id += "-1"
        parser = NodeSpec(id=node_id, type=roles.STRINGIFY, name=f"{source.name or source.id} as text")
        flow.nodes.append(parser)
        a, b = flow.position(source.id), flow.position(target.id)
        flow.layout.positions[node_id] = Position(x=(a.x + b.x) / 2, y=(a.y + b.y) / 2 + 80)
        flow.edges.remove(edge)
        flow.edges.append(Edge(source=source.id, source_port=edge.source_port, target=node_id, target_port="items"))
        flow.edges.append(Edge(source=node_id, source_port="text", target=target.id, target_port=edge.target_port))
        report.warnings.append(
            f"{target.id}: takes {in_type.value} but {source.id}.{edge.source_port} gives {out_type.value}; "
            f"the source tool turned them into text: parser '{node_id}' (added) does it here"
        )


def fill_unfed_variables(flow: Flow, report: ImportReport) -> None:
    """A prompt variable nothing feeds is an empty text, as LangFlow, Flowise and Dify render it: the
    variable leaves the template (one report line each) instead of failing validation. A prompt with no
    connection at all is left as written."""
    for spec in flow.nodes:
        template = spec.config.get("template")
        if not roles.is_prompt(spec.type) or not isinstance(template, str):
            continue
        fed = {e.target_port for e in flow.edges if e.target == spec.id}
        if not any(spec.id in (e.source, e.target) for e in flow.edges):
            continue  # a lone prompt (a round trip of one node) is left as written
        filled, unfed = _fill(template, fed)
        if unfed:
            spec.config["template"] = filled
            shown = ", ".join("{" + n + "}" for n in unfed)
            report.warnings.append(f"{spec.id}: prompt variable(s) {shown} fed by nothing: filled with empty text")


def _fill(template: str, fed: set[str]) -> tuple[str, list[str]]:
    """``template`` with each variable not in ``fed`` removed, and those variables in order."""
    unfed: list[str] = []

    def keep(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None or name in fed:
            return match.group(0)
        if name not in unfed:
            unfed.append(name)
        return ""

    return _PROMPT_TOKEN.sub(keep, template), unfed
