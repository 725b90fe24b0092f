"""Loader, labeller and splitter speed on the 500- and 5,000-row VWO test-case CSVs.

Prints, per file: loading (records and whole), labelling, and each splitter on the whole text and on
the records, with LangChain's time for the same split when it is installed (test dependency only).
Target: every step on the 3.7 MB 5,000-row file well under a second.

    python benchmarks/splitters.py
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flowbuilder.node import EmptyConfig, RunContext
from flowbuilder.nodes.labeller import RowLabeller, RowLabellerConfig
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig
from flowbuilder.nodes.splitters import (
    CharacterSplitter,
    CharacterSplitterConfig,
    MarkdownSplitter,
    MarkdownSplitterConfig,
    RecordSplitter,
    RecursiveSplitter,
    RecursiveSplitterConfig,
)

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 3
TEMPLATE = (
    "Scenario TID: {Scenario TID}\nDescription: {TestCase Description}\nPreCondition: {PreCondition}\n"
    "Test Steps: {TestSteps}\nExpected Result: {Expected Result}"
)


def find(name: str) -> Path | None:
    for folder in (ROOT / "data", ROOT.parent / "shared" / "corpus" / "data"):
        if (folder / name).is_file():
            return folder / name
    return None


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def langchain_ms(kind: str, text: str) -> str:
    try:
        from langchain_text_splitters import CharacterTextSplitter, RecursiveCharacterTextSplitter
    except ImportError:
        return "-"
    logging.getLogger("langchain_text_splitters").setLevel(logging.ERROR)
    if kind == "recursive":
        splitter: Any = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    else:
        splitter = CharacterTextSplitter(separator="\n", chunk_size=1000, chunk_overlap=200)
    ms, _ = timed(lambda: splitter.split_text(text))
    return f"{ms:.1f}"


def bench(path: Path) -> list[tuple[str, str, float, str, str]]:
    ctx = RunContext("bench")
    rows: list[tuple[str, str, float, str, str]] = []
    ms, records = timed(lambda: FileLoader(FileLoaderConfig(path=str(path))).run({}, ctx)["records"])
    rows.append((path.name, "loader.file records", ms, f"{len(records)} records", ""))
    ms, whole = timed(lambda: FileLoader(FileLoaderConfig(path=str(path), mode="whole")).run({}, ctx)["records"])
    rows.append((path.name, "loader.file whole", ms, f"{len(whole[0].text) / 1e6:.1f} MB", ""))
    # the LangFlow pattern needs the 500-row file's columns; the 5,000-row file has others: label them all
    template = TEMPLATE if "Scenario TID" in records[0].metadata["columns"] else ""
    labeller = RowLabeller(RowLabellerConfig(template=template, join=True))
    ms, joined = timed(lambda: labeller.run({"records": records}, ctx)["records"])
    rows.append((path.name, "labeller.row join", ms, f"{len(joined[0].text) / 1e6:.1f} MB", ""))
    splitters: list[tuple[str, Any, str]] = [
        ("splitter.recursive 1000/200", RecursiveSplitter(RecursiveSplitterConfig()), "recursive"),
        (
            "splitter.character \\n 1000/200",
            CharacterSplitter(CharacterSplitterConfig(separator="\\n")),
            "character",
        ),
        ("splitter.markdown 1000/0", MarkdownSplitter(MarkdownSplitterConfig()), ""),
    ]
    for name, node, kind in splitters:

        def split(documents: list[Any], node: Any = node) -> Any:
            return node.run({"documents": documents}, ctx)["chunks"]

        ms, chunks = timed(lambda: split(whole))
        reference = langchain_ms(kind, whole[0].text) if kind else "-"
        rows.append((path.name, f"{name} (whole)", ms, f"{len(chunks)} chunks", reference))
        ms, chunks = timed(lambda: split(records))
        rows.append((path.name, f"{name} (records)", ms, f"{len(chunks)} chunks", ""))
    ms, chunks = timed(lambda: RecordSplitter(EmptyConfig()).run({"documents": joined}, ctx)["chunks"])
    rows.append((path.name, "splitter.record (joined)", ms, f"{len(chunks)} chunks", ""))
    return rows


def main() -> None:
    print(f"{'file':<26} {'step':<42} {'ms':>8} {'result':>16} {'langchain ms':>13}")
    for name in ("VWO_500_Test_Cases.csv", "vwo_5000_test_cases.csv"):
        path = find(name)
        if path is None:
            print(f"{name:<26} (not found in data/ or ../shared/corpus/data/)")
            continue
        for file, step, ms, result, reference in bench(path):
            print(f"{file:<26} {step:<42} {ms:>8.1f} {result:>16} {reference:>13}")


if __name__ == "__main__":
    main()
