"""``flowbuilder nodes``: list the registered node types."""

from __future__ import annotations

import argparse
import json
from typing import Any

from flowbuilder.registry import default_registry


def register(subparsers: Any) -> None:
    """Add ``flowbuilder nodes`` (list the node types) to the CLI's subcommands."""
    parser = subparsers.add_parser("nodes", help="list the node types", description="List the registered node types.")
    parser.add_argument("--json", action="store_true", help="print ports, credentials and config schemas as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``flowbuilder nodes`` with the parsed arguments (list the node types); returns the exit code."""
    registry = default_registry()
    if args.json:
        print(json.dumps(registry.describe(), indent=2))
        return 0
    category = None
    for cls in registry:
        if cls.category != category:
            category = cls.category
            print(f"\n{category}")
        ins = ", ".join(p.describe() for p in cls.input_ports(None)) or "-"
        outs = ", ".join(p.describe() for p in cls.output_ports(None)) or "-"
        print(f"  {cls.type_name:<24} {cls.description()}")
        print(f"  {'':<24} in: {ins}  out: {outs}")
    return 0
