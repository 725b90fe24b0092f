"""What an import did, node by node: the report printed by ``flowbuilder import``.

The report never holds a secret value: plaintext keys found in a file are recorded by location only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from flowbuilder.placeholder import PLACEHOLDER_TYPE


@dataclass
class NodeOutcome:
    """One source node and what it became (zero, one or several Flowbuilder nodes, or a note)."""

    source_name: str
    source_type: str
    targets: list[tuple[str, str]] = field(default_factory=list)
    """``(node id, Flowbuilder type)`` pairs; a placeholder is ``placeholder.unsupported``."""
    note: str = ""

    @property
    def unsupported(self) -> bool:
        return any(t == PLACEHOLDER_TYPE for _, t in self.targets)

    def describe(self) -> str:
        if self.unsupported:
            became = f"unsupported: {self.source_type} (kept as placeholder '{self.targets[0][0]}')"
        elif self.targets:
            became = " + ".join(f"{t} '{i}'" for i, t in self.targets)
            if len(self.targets) > 1:
                became += f" (one source node became {len(self.targets)})"
        else:
            became = self.note or "nothing"
        extra = f"; {self.note}" if self.note and self.targets else ""
        return f"{self.source_name!r} [{self.source_type}] -> {became}{extra}"


@dataclass
class ParamIssue:
    """A foreign parameter the import changed or could not carry, and why."""

    node: str
    parameter: str
    detail: str


@dataclass
class ExpressionKept:
    """A foreign expression kept as text (never evaluated)."""

    node: str
    parameter: str
    expression: str


@dataclass
class CredentialFound:
    """A credential the foreign node used: the slot it binds and whether it is bound."""

    node: str
    slot: str
    provider: str
    name: str
    bound: bool | None = None
    """True/False once checked against a resolver; None when the node type takes no credential."""
    hint: str = ""


@dataclass
class ImportReport:
    """Everything an importer did and could not do; printable as text or JSON."""

    source_format: str
    source_file: str = ""
    flow_name: str = ""
    output_file: str = ""
    nodes: list[NodeOutcome] = field(default_factory=list)
    not_carried: list[ParamIssue] = field(default_factory=list)
    defaults_applied: list[ParamIssue] = field(default_factory=list)
    expressions: list[ExpressionKept] = field(default_factory=list)
    credentials: list[CredentialFound] = field(default_factory=list)
    secrets_found: list[ParamIssue] = field(default_factory=list)
    local_swaps: list[ParamIssue] = field(default_factory=list)
    connections_dropped: list[str] = field(default_factory=list)
    notes: int = 0
    warnings: list[str] = field(default_factory=list)

    # -- recording -------------------------------------------------------------------------------
    def node(self, source_name: str, source_type: str) -> NodeOutcome:
        outcome = NodeOutcome(source_name, source_type)
        self.nodes.append(outcome)
        return outcome

    def drop(self, node: str, parameter: str, detail: str = "not carried") -> None:
        self.not_carried.append(ParamIssue(node, parameter, detail))

    def default(self, node: str, parameter: str, value: Any, why: str = "omitted in the export") -> None:
        self.defaults_applied.append(ParamIssue(node, parameter, f"{value!r} ({why})"))

    def expression(self, node: str, parameter: str, expression: str) -> None:
        self.expressions.append(ExpressionKept(node, parameter, expression))

    def secret(self, node: str, parameter: str, reason: str = "") -> None:
        """A plaintext secret at ``node``.``parameter``; ``reason`` says how it was recognised (never its value)."""
        found = f"plaintext secret found ({reason})" if reason else "plaintext secret found"
        self.secrets_found.append(ParamIssue(node, parameter, f"{found}: not carried"))

    # -- output ----------------------------------------------------------------------------------
    @property
    def unsupported_count(self) -> int:
        return sum(1 for n in self.nodes if n.unsupported)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for entry, outcome in zip(data["nodes"], self.nodes, strict=True):
            entry["targets"] = [{"id": i, "type": t} for i, t in outcome.targets]
            entry["unsupported"] = outcome.unsupported
        data["unsupported_count"] = self.unsupported_count
        return data

    def to_text(self) -> str:
        lines = [f"Imported {self.source_format} flow {self.flow_name!r} from {self.source_file}"]
        if self.output_file:
            lines[0] += f" -> {self.output_file}"
        lines.append(f"Nodes ({len(self.nodes)} source nodes, {self.unsupported_count} unsupported):")
        lines += [f"  {n.describe()}" for n in self.nodes]
        sections: list[tuple[str, list[str]]] = [
            (
                "Defaults applied (the source omits default values)",
                [f"{p.node}.{p.parameter} = {p.detail}" for p in self.defaults_applied],
            ),
            ("Parameters not carried", [f"{p.node}.{p.parameter}: {p.detail}" for p in self.not_carried]),
            (
                "Expressions kept unevaluated (our default used instead)",
                [f"{e.node}.{e.parameter}: {e.expression}" for e in self.expressions],
            ),
            ("Credentials", [self._credential_line(c) for c in self.credentials]),
            ("Secrets", [f"{s.node}.{s.parameter}: {s.detail}" for s in self.secrets_found]),
            ("Swapped for local components (--local)", [f"{p.node}: {p.detail}" for p in self.local_swaps]),
            ("Connections not carried", list(self.connections_dropped)),
            ("Warnings", list(self.warnings)),
        ]
        for title, items in sections:
            if items:
                lines.append(f"{title}:")
                lines += [f"  {item}" for item in items]
        if self.notes:
            lines.append(f"Notes: {self.notes} kept as canvas notes")
        return "\n".join(lines)

    @staticmethod
    def _credential_line(cred: CredentialFound) -> str:
        where = f"{cred.node}.{cred.slot}" if cred.slot else cred.node
        state = {True: "bound", False: "UNBOUND", None: "not used by the imported node"}[cred.bound]
        line = f"{where}: {cred.provider} / {cred.name!r} ({state})"
        return f"{line}: {cred.hint}" if cred.hint and cred.bound is False else line
