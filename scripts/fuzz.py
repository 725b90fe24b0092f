"""Fuzz every reader of flow files and print the counts.

    python scripts/fuzz.py [--count 10000] [--seed 0] [--show 5]

Exit 1 when any traceback, hang or leak was found. The harness lives in tests/security/fuzz_harness.py
(the test suite runs a short campaign of the same code).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "security"))

from fuzz_harness import campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="how many failures to print in full")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as tmp:
        result = campaign(args.count, Path(tmp), args.seed)
    print(result.table())
    by_step = {}
    for _, outcome, _ in result.failures:
        by_step.setdefault((outcome.kind, outcome.step, outcome.detail.split("\n")[0][:120]), 0)
        by_step[(outcome.kind, outcome.step, outcome.detail.split("\n")[0][:120])] += 1
    for (kind, step, detail), n in sorted(by_step.items(), key=lambda kv: -kv[1]):
        print(f"{n:>6}  {kind:<9} {step:<15} {detail}")
    for label, outcome, _ in result.failures[: args.show]:
        print(f"\n--- {label}: {outcome.kind} in {outcome.step}\n{outcome.detail}")
    return 1 if result.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
