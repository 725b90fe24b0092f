"""``flowbuilder import`` (n8n / LangFlow -> native) and ``flowbuilder export`` (native -> n8n / LangFlow)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flowbuilder.commands._common import add_cred_option, resolver_for
from flowbuilder.errors import CredentialError, FlowbuilderError
from flowbuilder.formats.convert import (
    EXPORT_FORMATS,
    default_import_path,
    export_file,
    import_file,
    write_flow,
    write_json_atomic,
)


def register(subparsers: Any) -> None:
    """Add ``flowbuilder import`` (convert an n8n, LangFlow, Flowise or Dify export into a Flowbuilder flow),
    ``flowbuilder export`` (write a Flowbuilder flow as n8n, LangFlow or Flowise JSON) to the CLI's subcommands."""
    imp = subparsers.add_parser(
        "import",
        help="convert an n8n, LangFlow, Flowise or Dify export into a Flowbuilder flow",
        description="Convert an n8n workflow, a LangFlow flow, a Flowise chatflow/agentflow or a Dify DSL (YAML) into "
        "a Flowbuilder flow and print what became of each node. A failed import writes nothing.",
    )
    imp.add_argument("file", help="the n8n, LangFlow or Flowise JSON export, or the Dify DSL YAML")
    imp.add_argument("-o", "--output", help="where to write the flow (default: ./<name>.flowbuilder.json)")
    imp.add_argument(
        "--local", action="store_true", help="swap remote embedders, chat models and Pinecone for local ones"
    )
    add_cred_option(imp, help_text="bind a credential (VALUE or env:VAR) to check it")
    imp.add_argument("--report-json", action="store_true", help="print the import report as JSON")
    imp.set_defaults(handler=handle_import)

    exp = subparsers.add_parser(
        "export",
        help="write a Flowbuilder flow as n8n, LangFlow or Flowise JSON",
        description="Export a flow to n8n, LangFlow or Flowise.",
    )
    exp.add_argument("flow", help="the Flowbuilder flow file")
    exp.add_argument("--to", required=True, choices=EXPORT_FORMATS, help="target format")
    exp.add_argument("-o", "--output", help="where to write (default: ./<name>.<format>.json)")
    exp.add_argument("--lossy", action="store_true", help="write the export even if nodes or links are left out")
    exp.set_defaults(handler=handle_export)


def _usage(message: str) -> FlowbuilderError:
    from flowbuilder.cli import UsageError

    return UsageError(message)


def handle_import(args: argparse.Namespace) -> int:
    """Run ``flowbuilder import`` with the parsed arguments (convert an n8n or LangFlow export into a Flowbuilder flow);
    returns the exit code."""
    source = Path(args.file)
    try:
        resolver = resolver_for(args)
    except CredentialError as exc:  # a malformed --cred is a usage mistake here, not a failed import
        raise _usage(str(exc)) from None
    flow, report = import_file(source, local=args.local, resolver=resolver)
    output = Path(args.output) if args.output else default_import_path(source)
    report.output_file = str(output)
    write_flow(flow, output)
    if args.report_json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.to_text())
    return 0


def handle_export(args: argparse.Namespace) -> int:
    """Run ``flowbuilder export`` with the parsed arguments (write a Flowbuilder flow as n8n or LangFlow JSON); returns
    the exit code."""
    data, warnings = export_file(args.flow, args.to, lossy=args.lossy)
    output = Path(args.output) if args.output else Path.cwd() / f"{Path(args.flow).name.split('.')[0]}.{args.to}.json"
    write_json_atomic(data, output)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"Wrote {args.to} export to {output}")
    return 0
