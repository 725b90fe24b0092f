"""Import speed of LangFlow (and n8n) exports: median milliseconds per file, target < 150 ms.

    python benchmarks/import_langflow.py [--runs N] [FILE ...]

Without files it times every flow in ../shared/corpus/flows (beside the clone). Each run is a full
import: read, parse, detect, convert and check the flow (nothing is written).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from flowbuilder.formats.convert import import_file

TARGET_MS = 150.0
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "flows"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    files = args.files or sorted(CORPUS.glob("*.json"))
    if not files:
        raise SystemExit(f"no flow files given and none found in {CORPUS}")
    import_file(files[0])  # warm-up: module imports and the node registry load once
    print(f"{'file':<48} {'size KB':>8} {'median ms':>10} {'max ms':>8}  target < {TARGET_MS:.0f} ms")
    largest = max(files, key=lambda p: p.stat().st_size)
    for path in files:
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            import_file(path)
            times.append((time.perf_counter() - start) * 1000)
        median = statistics.median(times)
        mark = "ok" if median < TARGET_MS else "SLOW"
        star = " (largest)" if path == largest else ""
        print(
            f"{path.name[:48]:<48} {path.stat().st_size / 1024:>8.0f} {median:>10.1f} {max(times):>8.1f}  {mark}{star}"
        )


if __name__ == "__main__":
    main()
