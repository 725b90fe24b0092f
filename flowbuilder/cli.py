"""The ``flowbuilder`` command line.

Exit codes: 0 ok; 1 invalid flow, failed node or failed threshold; 2 usage error (bad arguments,
missing or unreadable file). A :class:`FlowbuilderError` prints one clear message, never a traceback.
Each subcommand lives in its own module under :mod:`flowbuilder.commands`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from flowbuilder import __version__
from flowbuilder.errors import FlowbuilderError, FlowFileError, FlowValidationError
from flowbuilder.trust.secrets import install_log_filter, redact
from flowbuilder.trust.terminal import SafeStream, excerpt

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(FlowbuilderError):
    """Bad command-line usage (exit code 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flowbuilder", description="Build, run, inspect and compare RAG flows.")
    parser.add_argument("--version", action="version", version=f"flowbuilder {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more detail to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    import flowbuilder.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"flowbuilder.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Everything it prints goes through :class:`SafeStream`: a flow's text cannot
    steer the terminal (escape sequences and carriage returns are shown escaped)."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(stdout), SafeStream(stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    install_log_filter()
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(handler(args) or 0)
    except FlowValidationError as exc:
        print(redact(str(exc)), file=sys.stderr)
        return EXIT_FAILED
    except (UsageError, FlowFileError) as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except FlowbuilderError as exc:
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        # a bug or the machine's limits, not the user's input: one line (run with -v for the traceback)
        if args.verbose:
            raise
        detail = excerpt(redact(str(exc)), 300)
        print(f"error: {type(exc).__name__}: {detail} (run with -v for the traceback)", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
