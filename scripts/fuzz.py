"""Fuzz every reader of flow files, and every node type's Config fields, and print the counts.

    python scripts/fuzz.py [--count 10000] [--seed 0] [--show 5]              # mutated flow files
    python scripts/fuzz.py --schema [--count 10000] [--seed 0] [--show 5]     # field values per node type
    python scripts/fuzz.py --documents [--count 2000] [--seed 0] [--show 5]   # broken and hostile documents

Exit 1 when any traceback, node crash, hang, leak or egress was found. The harnesses live in
tests/security/fuzz_harness.py and tests/security/schema_fuzz.py (the test suite runs short campaigns of
the same code); tests/security/document_fuzz.py for loader.file's document readers.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "security"))

import document_fuzz
import fuzz_harness
import schema_fuzz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="how many failures to print in full")
    parser.add_argument(
        "--schema", action="store_true", help="fuzz node Config fields (validate, run, export, builder)"
    )
    parser.add_argument(
        "--documents", action="store_true", help="fuzz the document readers (zip bombs, broken files, wrong types)"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the schema campaign listens to the executor's debug records itself
    with tempfile.TemporaryDirectory() as tmp:
        harness = schema_fuzz if args.schema else document_fuzz if args.documents else fuzz_harness
        result = harness.campaign(args.count, Path(tmp), args.seed)
        from flowbuilder.nodes.vectorstores.qdrant import close_local_clients

        close_local_clients()  # before the folders go: else qdrant-client's __del__ prints tracebacks at exit
    print(result.table())
    by_step = {}
    for _, outcome, _ in result.failures:
        by_step.setdefault((outcome.kind, outcome.step, outcome.detail.split("\n")[0][:120]), 0)
        by_step[(outcome.kind, outcome.step, outcome.detail.split("\n")[0][:120])] += 1
    for (kind, step, detail), n in sorted(by_step.items(), key=lambda kv: -kv[1]):
        print(f"{n:>6}  {kind:<9} {step:<15} {detail}")
    for label, outcome, case in result.failures[: args.show]:
        shown = case if args.schema or args.documents else ""
        print(f"\n--- {label}: {outcome.kind} in {outcome.step} {shown}\n{outcome.detail}")
    return 1 if result.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
