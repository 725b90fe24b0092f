"""Executor overhead on synthetic flows of no-op nodes.

Prints, for chains of 10, 100 and 1,000 ``util.passthrough`` nodes: the time to load the JSON,
validate, order and run, and the executor's overhead per node.
Targets: executor overhead under 1 ms per node; validating a 1,000-node flow under 200 ms.

    python benchmarks/executor.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from flowbuilder.cache import ResultCache
from flowbuilder.executor import Executor
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.formats.native import load_flow, save_flow
from flowbuilder.graph import analyze
from flowbuilder.registry import default_registry

REPEATS = 5


def chain(n: int) -> Flow:
    nodes = [NodeSpec(id=f"n{i:04d}", type="util.passthrough") for i in range(n)]
    edges = [
        Edge(source=f"n{i:04d}", source_port="value", target=f"n{i + 1:04d}", target_port="value") for i in range(n - 1)
    ]
    return Flow(name=f"chain of {n}", nodes=nodes, edges=edges)


def median_ms(fn, repeats: int = REPEATS) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    registry = default_registry()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (10, 100, 1000):
            path = Path(tmp) / f"chain{n}.json"
            save_flow(chain(n), path)
            flow = load_flow(path)
            load = median_ms(lambda p=path: load_flow(p))
            validate = median_ms(lambda f=flow: analyze(f, registry))
            order = median_ms(lambda f=flow: analyze(f, registry).order())
            executor = Executor(registry=registry, cache=ResultCache(max_entries=0), data_dir=Path(tmp))
            run = median_ms(lambda f=flow, e=executor: e.run(f, use_cache=False))
            overhead = (run - validate) / n
            rows.append((n, load, validate, order, run, overhead))
    print(f"{'nodes':>6} {'load ms':>9} {'validate ms':>12} {'order ms':>9} {'run ms':>9} {'overhead ms/node':>17}")
    for n, load, validate, order, run, overhead in rows:
        print(f"{n:>6} {load:>9.2f} {validate:>12.2f} {order:>9.2f} {run:>9.2f} {overhead:>17.4f}")
    last = rows[-1]
    print(f"\ntarget: overhead < 1 ms/node -> {'met' if max(r[5] for r in rows) < 1 else 'NOT met'}")
    print(f"target: validate 1,000 nodes < 200 ms -> {'met' if last[2] < 200 else 'NOT met'} ({last[2]:.1f} ms)")


if __name__ == "__main__":
    main()
