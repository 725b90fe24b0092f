"""How far public n8n, LangFlow, Flowise and Dify RAG exports get: import, import --local, validate, first
offline run, round trip.

    python benchmarks/import_corpus.py [--rows N] [--csv FILE] [FILE ...]

Without files it measures every export in ``tests/formats/corpus_public`` (public files that are not in
../shared; see the README there). For each file it:

1. imports it (as ``flowbuilder import``);
2. imports it with ``--local`` (remote embedders, chat models and stores swapped for local ones);
3. validates the ``--local`` flow (as ``flowbuilder validate``, credentials included);
4. runs it offline, for the first time, to each node that retrieves (a fresh data folder, no cache), with
   the sample CSV as every file input and a question as every chat input; "retrieves" means some node
   returned hits. Each file gets its own empty data folder, so no flow sees what another one stored.
   A flow whose only retrieval is an agent's tool is run whole (the agent fallback of the
   local-model work shows its hits, where it is built);
5. exports the imported flow back to its own format and re-imports it: "round trip" when every node and
   connection survives ("n/a" for a format we do not export: Dify); "other": the export to another format
   (LangFlow for n8n files, n8n for the others) succeeds without ``--lossy``.

The last lines give the counts per format.

The CSV is cut to its first ``--rows`` rows (default 60) so the table finishes on a loaded 2-core machine;
``--rows 0`` uses it whole. Nothing here needs a key or the network.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "formats" / "corpus_public"
SAMPLE_CSV = ROOT / "data" / "VWO_500_Test_Cases.csv"
QUESTION = "How do I check that a locked account cannot log in?"


@dataclass
class Row:
    name: str
    imported: str = "-"
    local: str = "-"
    valid: str = "-"
    retrieves: str = "-"
    round_trip: str = "-"
    cross: str = "-"
    why: str = ""
    fmt: str = "?"


def sample_csv(source: Path, rows: int, folder: Path) -> Path:
    if rows <= 0:
        return source
    target = folder / f"sample_{rows}.csv"
    with source.open(encoding="utf-8-sig", newline="") as fin, target.open("w", encoding="utf-8", newline="") as fout:
        reader, writer = csv.reader(fin), csv.writer(fout)
        for i, record in enumerate(reader):
            if i > rows:
                break
            writer.writerow(record)
    return target


def measure(path: Path, csv_path: Path, data_dir: Path) -> Row:
    from flowbuilder.errors import FlowbuilderError
    from flowbuilder.executor import Executor
    from flowbuilder.formats.convert import EXPORT_FORMATS, convert_data, export_flow, import_file, read_export
    from flowbuilder.formats.mapping import PLACEHOLDER
    from flowbuilder.graph import analyze
    from flowbuilder.outputs import is_hits
    from flowbuilder.trust.credentials import CredentialResolver

    row = Row(path.name)
    try:
        kind = read_export(path)[1]
        row.fmt = kind
        flow, _ = import_file(path)
        row.imported = "yes"
    except FlowbuilderError as exc:
        row.imported, row.why = "NO", str(exc)[:90]
        return row
    except Exception as exc:  # a traceback: the one thing no file may cause
        row.imported, row.why = "CRASH", f"{type(exc).__name__}: {exc}"[:90]
        return row
    row.round_trip = _round_trip(flow, path, kind, export_flow, convert_data) if kind in EXPORT_FORMATS else "n/a"
    other = "langflow" if kind == "n8n" else "n8n"
    try:
        export_flow(flow, other, lossy=False)
        row.cross = "yes"
    except FlowbuilderError:
        row.cross = "NO"
    try:
        local, _ = import_file(path, local=True)
        row.local = "yes"
    except FlowbuilderError as exc:
        row.local, row.why = "NO", str(exc)[:90]
        return row
    resolver = CredentialResolver()
    graph = analyze(local, resolver=resolver, base_dir=path.parent)
    row.valid = "yes" if not graph.issues else "NO"
    if graph.issues:
        row.why = f"{len(graph.issues)} issue(s): {graph.issues[0]}"[:120]
    # a node that gives hits and is asked (its query wired, or its hits used): a store whose only searcher is an
    # agent's tool is asked by the agent, so such a flow is run whole (below)
    asked_ids = {e.target for e in local.edges if e.target_port == "query"} | {
        e.source for e in local.edges if e.source_port == "hits"
    }
    retrievers = [
        n.id for n in local.nodes
        if n.id in graph.nodes and "hits" in graph.nodes[n.id].outputs and n.id in asked_ids
    ]  # fmt: skip
    # a search: a store asked a question, a retriever or search tool (a pipeline that only fills a store, or a
    # flow with no store, has no retrieval step)
    asked = {e.target for e in local.edges if e.target_port == "query"} | {
        e.source for e in local.edges if e.source_port in ("store", "hits")
    }
    searches = [
        n for n in local.nodes
        if (n.type.startswith("vectorstore.") and n.id in asked) or n.type.startswith("retriever.")
        or (n.type == PLACEHOLDER and n.id in asked)
    ]  # fmt: skip
    if not searches:
        row.retrieves = "n/a"  # nothing in the flow retrieves (a document Q&A that reads the whole file)
        return row
    inputs: dict[str, str] = {"*": QUESTION}
    for node in local.nodes:
        if node.id in graph.nodes and graph.nodes[node.id].cls.run_input == "file":
            inputs[node.id] = str(csv_path)
    executor = Executor(resolver=resolver, data_dir=data_dir)  # a first run: its own empty stores
    found = False
    errors: list[str] = []
    targets: list[str | None] = list(retrievers) or [None]
    for target in targets:
        try:
            run = executor.run(local, inputs=inputs, to=target, use_cache=False, base_dir=path.parent)
        except FlowbuilderError as exc:
            errors.append(str(exc).splitlines()[0][:100])
            continue
        hits = [r for r in run.results.values() if any(is_hits(v) for v in r.outputs.values())]
        hits += [r for r in run.results.values() if r.details.get("hits")]
        if hits:
            found = True
            break
        failed = run.failed()
        errors.append(f"{failed[0].node_id}: {failed[0].error}"[:100] if failed else "ran, no hits")
    row.retrieves = "yes" if found else "NO"
    if not found and not row.why:
        row.why = errors[0] if errors else "no retrieval node"
    return row


def _round_trip(flow, path: Path, kind: str, export_flow, convert_data) -> str:  # type: ignore[no-untyped-def]
    from flowbuilder.errors import FlowbuilderError

    try:
        data, _ = export_flow(flow, kind, lossy=True)
        again, _ = convert_data(data, kind, f"{path.name} (re-import)")
    except FlowbuilderError as exc:
        return "NO: " + str(exc)[:60]
    same = len(again.nodes) == len(flow.nodes) and len(again.edges) == len(flow.edges)
    return "yes" if same else f"NO {len(flow.nodes)}/{len(flow.edges)}->{len(again.nodes)}/{len(again.edges)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--rows", type=int, default=60, help="CSV rows to ingest (0 = all)")
    parser.add_argument("--csv", type=Path, default=SAMPLE_CSV)
    args = parser.parse_args()
    files = args.files or sorted(p for p in CORPUS.iterdir() if p.suffix in (".json", ".yml", ".yaml"))
    if not files:
        raise SystemExit(f"no flow files given and none found in {CORPUS}")
    work = Path(tempfile.mkdtemp(prefix="flowbuilder-corpus-"))
    os.environ["FLOWBUILDER_DATA_DIR"] = str(work / "data")  # a first run: fresh stores, no cache
    os.environ["FLOWBUILDER_CREDENTIALS"] = str(work / "credentials.json")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    csv_path = sample_csv(args.csv, args.rows, work)
    from flowbuilder.nodes.vectorstores.qdrant import close_local_clients

    started = time.perf_counter()
    rows: list[Row] = []
    print(f"{'file':<52} {'import':>6} {'local':>6} {'valid':>6} {'hits':>5} {'round trip':>10} {'other':>5}  why not")
    for index, path in enumerate(files):
        row = measure(path, csv_path, work / f"data-{index}")
        close_local_clients()  # an embedded Qdrant folder stays open otherwise, and its client errs at exit
        rows.append(row)
        print(
            f"{row.name[:52]:<52} {row.imported:>6} {row.local:>6} {row.valid:>6} {row.retrieves:>5} "
            f"{row.round_trip[:10]:>10} {row.cross:>5}  {row.why}",
            flush=True,
        )
    count = {k: sum(1 for r in rows if getattr(r, k) == "yes") for k in ("imported", "local", "valid", "retrieves")}
    none = sum(1 for r in rows if r.retrieves == "n/a")
    trips = sum(1 for r in rows if r.round_trip == "yes")
    cross = sum(1 for r in rows if r.cross == "yes")
    print(
        f"\n{len(rows)} files: imported {count['imported']}, imported --local {count['local']}, "
        f"validate {count['valid']}, retrieve on first offline run {count['retrieves']} "
        f"(of {len(rows) - none} that retrieve; {none} have no retrieval), round trip {trips}, "
        f"export to the other format without --lossy {cross} "
        f"({time.perf_counter() - started:.0f} s, CSV rows {args.rows or 'all'})"
    )
    for fmt in sorted({r.fmt for r in rows}):
        some = [r for r in rows if r.fmt == fmt]
        counts = {
            k: sum(1 for r in some if getattr(r, k) == "yes") for k in ("imported", "local", "valid", "retrieves")
        }
        retrieving = sum(1 for r in some if r.retrieves != "n/a")
        print(
            f"  {fmt}: {len(some)} files, imported {counts['imported']}, --local {counts['local']}, "
            f"validate {counts['valid']}, retrieve {counts['retrieves']} of {retrieving}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
