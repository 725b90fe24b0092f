"""Document loading: files per second per format, and memory per GB of a streamed text file or workbook.

1. ``speed``: every sample format (data/qa-handbook, the demo workbook and CSV, Calc's .xls fixture, the PRD PDF)
   loaded by ``loader.file``'s reader in this process, ``--repeat`` rounds of ``--files`` loads each; files/s and
   MB/s as min/median over the rounds.
2. ``text``: peak RSS while a generated text file (``--sizes`` MB of paragraphs) streams through the loader and
   ``splitter.recursive`` batch by batch, as the executor's stream chain runs them (flowbuilder/streaming.py);
   each size in a fresh process. ``--whole`` also loads the smaller sizes as one list (what ``--stream never``
   holds) for contrast.
3. ``sheet``: the same for a generated workbook (``--rows``: the demo's 500 test cases repeated) read row by row.
4. ``chain``: the whole flow (loader -> splitter -> wordllama embedder -> embedded Chroma) on a ``--chain-mb`` text
   file with the executor's default streaming: what a user's run holds, store included.

    python benchmarks/documents.py [--parts speed,text,sheet,chain] [--sizes 64,256,1024] [--rows 20000,200000]
        [--repeat 5] [--files 20] [--chain-mb 16] [--whole]

Generated files live in a temporary folder, removed at the end. The load is printed with every table: the machine
is shared, so the figures are what a loaded 2-core machine gives.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import loadavg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STREAM = """
import resource, sys, time
from pathlib import Path
from flowbuilder.node import RunContext
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig
from flowbuilder.nodes.splitters import RecursiveSplitter, RecursiveSplitterConfig
path, whole = Path(sys.argv[1]), sys.argv[2] == "whole"
start = time.perf_counter()
loader = FileLoader(FileLoaderConfig(path=str(path)))
splitter = RecursiveSplitter(RecursiveSplitterConfig(chunk_size=1000, chunk_overlap=0))
records = chunks = 0
if whole:
    held = loader.run({}, RunContext("load"))["records"]
    records = len(held)
else:
    for batch in loader.iter_batches({}, RunContext("load")):
        records += len(batch)
        chunks += len(splitter.run({"documents": batch}, RunContext("split"))["chunks"])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"RESULT {time.perf_counter() - start:.1f} {peak:.0f} {records} {chunks}")
"""

CHAIN = """
import resource, sys, time
from pathlib import Path
from flowbuilder.cache import ResultCache
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
path, data = Path(sys.argv[1]), Path(sys.argv[2])
flow = Flow(name="chain", nodes=[
    NodeSpec(id="load", type="loader.file", config={"path": str(path)}),
    NodeSpec(id="split", type="splitter.recursive", config={"chunk_size": 1000, "chunk_overlap": 0}),
    NodeSpec(id="emb", type="embedder.wordllama"),
    NodeSpec(id="store", type="vectorstore.chroma", config={"collection": "bench", "persist_directory": str(data)}),
], edges=[
    Edge(source="load", source_port="records", target="split", target_port="documents"),
    Edge(source="split", source_port="chunks", target="store", target_port="documents"),
    Edge(source="emb", source_port="embedder", target="store", target_port="embedder"),
])
start = time.perf_counter()
run = Executor(cache=ResultCache(max_entries=0), data_dir=data).run(flow, use_cache=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
failed = [str(r.error) for r in run.failed()]
streamed = "streamed" if "streamed" in run.results["load"].details else "whole"
count = run.results["store"].details.get("count")
print(f"RESULT {time.perf_counter() - start:.1f} {peak:.0f} {count} {streamed} {'; '.join(failed)}")
"""

SENTENCE = (
    "the release manager declares code freeze on tuesday and the regression suite runs on staging every night "
    "while testers write charters for exploratory sessions and triage new defects by severity and priority"
)
WORDS = SENTENCE.split(" ")


def write_text(path: Path, megabytes: int) -> None:
    """``megabytes`` of paragraphs (varied, so chunks differ): written in pieces, never held whole."""
    target = megabytes * 1024 * 1024
    written = 0
    with path.open("w", encoding="utf-8") as handle:
        number = 0
        while written < target:
            words = [WORDS[(number * 7 + i * 3) % len(WORDS)] for i in range(60 + number % 40)]
            paragraph = f"Paragraph {number}. " + " ".join(words) + ".\n\n"
            handle.write(paragraph)
            written += len(paragraph)
            number += 1


def write_workbook(path: Path, rows: int) -> None:
    """The demo's 500 test cases repeated to ``rows`` rows, written row by row (openpyxl's write-only mode)."""
    import csv

    from openpyxl import Workbook

    with (ROOT / "data" / "VWO_500_Test_Cases.csv").open(encoding="utf-8-sig", newline="") as handle:
        header, *body = list(csv.reader(handle))
    book = Workbook(write_only=True)
    sheet = book.create_sheet("Cases")
    sheet.append(header)
    for n in range(rows):
        row = list(body[n % len(body)])
        row[0] = f"{row[0]}-{n // len(body)}"
        sheet.append(row)
    book.save(path)


def run_child(script: str, *args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"child failed: {out.stderr[-2000:]}")
    return line.split(" ", 5)[1:]


def speed(repeat: int, files: int) -> None:
    from flowbuilder.nodes.loaders import FileLoaderConfig, load_file

    samples = sorted((ROOT / "data" / "qa-handbook").iterdir())
    samples += [ROOT / "data" / "VWO_500_Test_Cases.xlsx", ROOT / "data" / "VWO_500_Test_Cases.csv"]
    samples += [ROOT / "tests" / "nodes" / "fixtures" / "documents" / "runs.xls"]
    samples += [ROOT / "data" / "VWO_Login_Dashboard_PRD.pdf"]
    print(f"\nFiles per second per format ({repeat} rounds of {files} loads each; load before: {loadavg()})")
    print(f"{'file':<30} {'KB':>6} {'records':>7} {'files/s min':>11} {'files/s median':>14} {'MB/s median':>11}")
    config = FileLoaderConfig()
    for path in samples:
        records = len(load_file(path, config))  # warm: imports, caches
        rates = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(files):
                load_file(path, config)
            rates.append(files / (time.perf_counter() - start))
        size = path.stat().st_size
        median = statistics.median(rates)
        print(
            f"{path.name:<30} {size / 1024:>6.0f} {records:>7} {min(rates):>11.1f} {median:>14.1f} "
            f"{median * size / 1e6:>11.2f}"
        )
    print(f"load after: {loadavg()}")


def text(sizes: list[int], folder: Path, whole: bool) -> None:
    print(f"\nStreamed text file -> loader -> splitter.recursive (1000), fresh process per size (load: {loadavg()})")
    print(f"{'MB':>6} {'mode':<8} {'seconds':>8} {'peak RSS MB':>11} {'records':>8} {'chunks':>9}")
    for megabytes in sizes:
        path = folder / f"text-{megabytes}.md"
        write_text(path, megabytes)
        modes = ["stream", *(["whole"] if whole and megabytes <= 256 else [])]
        for mode in modes:
            seconds, peak, records, chunks = run_child(STREAM, str(path), mode)
            shown = chunks if mode == "stream" else "-"
            print(f"{megabytes:>6} {mode:<8} {seconds:>8} {peak:>11} {records:>8} {shown:>9}")
        path.unlink()
    print(f"load after: {loadavg()}")


def sheet(rows: list[int], folder: Path) -> None:
    print(f"\nStreamed workbook -> loader -> splitter.recursive, fresh process per size (load: {loadavg()})")
    print(f"{'rows':>8} {'xlsx MB':>8} {'seconds':>8} {'peak RSS MB':>11} {'records':>8}")
    for count in rows:
        path = folder / f"cases-{count}.xlsx"
        write_workbook(path, count)
        seconds, peak, records, _ = run_child(STREAM, str(path), "stream")
        print(f"{count:>8} {path.stat().st_size / 1e6:>8.1f} {seconds:>8} {peak:>11} {records:>8}")
        path.unlink()
    print(f"load after: {loadavg()}")


def chain(megabytes: int, folder: Path) -> None:
    path = folder / "chain.md"
    write_text(path, megabytes)
    print(f"\nWhole flow on {megabytes} MB of text (wordllama, embedded Chroma; load: {loadavg()})")
    seconds, peak, count, streamed, failed = [*run_child(CHAIN, str(path), str(folder / "data")), ""][:5]
    print(f"{'seconds':>8} {'peak RSS MB':>11} {'chunks stored':>13} {'loader':>9}")
    print(f"{seconds:>8} {peak:>11} {count:>13} {streamed:>9} {failed}")
    print(f"load after: {loadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="speed,text,sheet,chain")
    parser.add_argument("--sizes", default="64,256,1024", help="text file sizes in MB")
    parser.add_argument("--rows", default="20000,200000", help="workbook sizes in rows")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--chain-mb", type=int, default=16)
    parser.add_argument("--whole", action="store_true", help="also hold sizes up to 256 MB as one list")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "speed" in parts:
            speed(args.repeat, args.files)
        if "text" in parts:
            text([int(s) for s in args.sizes.split(",")], folder, args.whole)
        if "sheet" in parts:
            sheet([int(r) for r in args.rows.split(",")], folder)
        if "chain" in parts:
            chain(args.chain_mb, folder)


if __name__ == "__main__":
    main()
