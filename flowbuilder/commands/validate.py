"""``flowbuilder validate FLOW``: check a flow without running it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from flowbuilder.commands._common import add_cred_option, resolver_for
from flowbuilder.formats.native import load_flow
from flowbuilder.graph import analyze
from flowbuilder.trust.credentials import CredentialStore

SHOWN_ISSUES = 50
"""A stranger's file can hold thousands of problems; the first fifty say what is wrong."""


def register(subparsers: Any) -> None:
    """Add ``flowbuilder validate`` (check a flow and list every problem) to the CLI's subcommands."""
    parser = subparsers.add_parser(
        "validate",
        help="check a flow and list every problem",
        description="Check a flow: node types, configs, connections, cycles and credentials. "
        "Exit 0 when valid, 1 listing every issue.",
    )
    parser.add_argument("flow", help="a Flowbuilder flow file (.json)")
    parser.add_argument("--no-credentials", action="store_true", help="do not check that credentials are bound")
    parser.add_argument("--json", action="store_true", help="print the issues as JSON")
    add_cred_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``flowbuilder validate`` with the parsed arguments (check a flow and list every problem); returns the exit
    code."""
    flow = load_flow(args.flow)
    resolver = resolver_for(args, flow)
    if args.no_credentials:  # no key checks and the credentials file is not read; the flags' approvals still count
        resolver.store = CredentialStore(Path("/nonexistent/flowbuilder-no-credentials.json"))
    graph = analyze(flow, resolver=resolver, flow_file=Path(args.flow))
    if args.no_credentials:
        graph.issues = [i for i in graph.issues if i.code not in ("missing-credential", "unsafe-credential")]
    issues = graph.issues
    if args.json:
        # a list of issues, as before; warnings and implicit dependencies are marked by their codes
        rows = [{"code": i.code, "node": i.node_id, "port": i.port, "message": i.message} for i in issues]
        for row, issue in zip(rows, issues, strict=True):
            if issue.code == "untrusted-path":  # the resolved path, and the folder an approval would cover
                row.update({k: issue.detail[k] for k in ("path", "folder") if k in issue.detail})
            if issue.code == "untrusted-store":  # the collection's address, what --allow-store approves
                row.update({k: issue.detail[k] for k in ("store", "collection") if k in issue.detail})
        rows += [
            {"code": i.code, "node": i.node_id, "port": i.port, "message": i.message, "severity": "warning"}
            for i in graph.warnings
        ]
        rows += [
            {"code": "alternatives" if " alternatives (" in note else "note", "message": note, "severity": "info"}
            for note in graph.notes
        ]
        rows += [
            {
                "code": "key",
                "node": node_id,
                "port": plan.slot.name,
                "provider": plan.slot.provider,
                "account": plan.account,
                "source": plan.source,
                "destination": ", ".join(plan.destinations),
                "verdict": plan.verdict,
                "message": plan.describe(node_id),
                "severity": "info",
            }
            for node_id, plan in graph.keys
        ]
        rows += [
            {
                "code": "implicit-dependency",
                "node": d.reader,
                "port": None,
                "writer": d.writer,
                "message": d.reason,
                "severity": "info",
            }
            for d in graph.implicit
        ]
        print(json.dumps(rows, indent=2))
    else:
        if issues:
            print(f"{args.flow}: {len(issues)} problem(s)")
            for issue in issues[:SHOWN_ISSUES]:
                print(f"  - {issue}")
            if len(issues) > SHOWN_ISSUES:
                print(f"  ... and {len(issues) - SHOWN_ISSUES} more (--json lists them all)")
        else:
            print(f"{args.flow}: valid ({len(flow.nodes)} nodes, {len(flow.edges)} connections)")
        for warning in graph.warnings:
            print(f"  warning: {warning}")
        for note in graph.notes:
            print(f"  note: {note}")
        for node_id, plan in graph.keys:
            print(f"  {plan.describe(node_id)}")
        for dep in graph.implicit:
            print(f"  runs first: '{dep.writer}' before '{dep.reader}' ({dep.reason})")
    return 1 if issues else 0
