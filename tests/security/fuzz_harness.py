"""Mutation fuzzing of every reader of flow files: import, validate and export.

Seeds are real flow files: the example flows and the formats tests' fixtures and real exports (n8n,
LangFlow, Flowise JSON and Dify YAML). Each case mutates one seed (structure-aware mutations, written back
as JSON or YAML, raw-text mutations and YAML bombs: aliases, Python tags, .inf), plants a canary
secret in it, and pushes it through ``import`` (or native loading), ``validate`` and ``export`` to both
formats. An outcome is one of:

- ``clean``: it worked, or failed with a :class:`FlowbuilderError` (one clear line);
- ``traceback``: any other exception escaped (a bug);
- ``hang``: a step took longer than the time limit;
- ``leak``: the canary secret reached a written flow, a report or an export.

``python scripts/fuzz.py --count 10000`` runs a long campaign; the test suite runs a short one.
"""

from __future__ import annotations

import copy
import json
import random
import signal
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from flowbuilder.errors import FlowbuilderError

ROOT = Path(__file__).resolve().parents[2]
CANARY = "canary-Zx81Qp47Lm0Rt5Vb93Kd"
"""A plaintext secret no real file has: it must never come out of the importer."""
STEP_SECONDS = 5.0
FIRST_CASE_SECONDS = 120.0
"""The first case also pays for importing the readers and building the node registry (many seconds on a
loaded machine): a longer limit there, so a cold start is not reported as a hang of that input."""


@dataclass
class Outcome:
    kind: str
    step: str = ""
    detail: str = ""


@dataclass
class Campaign:
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, Any, str]] = field(default_factory=list)
    seconds: float = 0.0
    KINDS: ClassVar[tuple[str, ...]] = ("clean", "traceback", "hang", "leak")
    UNIT: ClassVar[str] = "files"

    def table(self) -> str:
        total = sum(self.counts.values())
        rows = [f"{'outcome':<11} {self.UNIT:>7}", f"{'-' * 11} {'-' * 7}"]
        for kind in self.KINDS:
            rows.append(f"{kind:<11} {self.counts.get(kind, 0):>7}")
        rows.append(f"{'total':<11} {total:>7}   ({self.seconds:.1f} s)")
        return "\n".join(rows)


def seed_files() -> list[Path]:
    paths = sorted((ROOT / "flows").rglob("*.json"))
    for folder in ("fixtures", "corpus"):  # the formats tests' files: real exports and hand-made oddities
        for pattern in ("*.json", "*.yml", "*.yaml"):  # Dify's DSL is YAML
            paths += sorted((ROOT / "tests" / "formats" / folder).rglob(pattern))
    return paths


_YAML_BOMBS = (
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b]\n",
    "app: !!python/object/apply:os.system ['echo owned']\nkind: app\nversion: '0.1.5'\n",
    "kind: app\nversion: !!binary aGVsbG8=\napp: {mode: workflow}\n",
    "kind: app\nversion: .inf\napp: {mode: .nan}\nworkflow: {graph: {nodes: [], edges: []}}\n",
    "app:\n" + "  " * 0 + "".join(" " * (2 * i) + f"k{i}:\n" for i in range(1, 200)),
)


# --- mutations -----------------------------------------------------------------------------------

_WEIRD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    10**40,
    1e308,
    "",
    "x" * 5000,
    "\ud800lone",
    "inf",
    "NaN",
    "-1e999",
    [],
    {},
    [[[[]]]],
    {"id": None},
    "={{ $env.OPENAI_API_KEY }}",
    "../../../../etc/passwd",
]


def _containers(data: Any) -> list[tuple[Any, Any]]:
    """Every ``(container, key)`` in ``data`` (iteratively)."""
    out: list[tuple[Any, Any]] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                out.append((item, key))
                stack.append(value)
        elif isinstance(item, list):
            for index, value in enumerate(item):
                out.append((item, index))
                stack.append(value)
    return out


def _mutate_structure(data: Any, rng: random.Random) -> Any:
    places = _containers(data)
    if not places:
        return rng.choice(_WEIRD_VALUES)
    for _ in range(rng.randint(1, 4)):
        places = _containers(data) or places
        container, key = rng.choice(places)
        op = rng.randrange(8)
        try:
            if op == 0:
                del container[key]
            elif op == 1:
                container[key] = copy.deepcopy(rng.choice(_WEIRD_VALUES))
            elif op == 2 and isinstance(container, list):
                container.append(copy.deepcopy(container[key]))  # duplicate ids, duplicate edges
            elif op == 3:
                other_container, other_key = rng.choice(places)
                container[key] = copy.deepcopy(other_container[other_key])
            elif op == 4:
                nested: Any = container[key]
                for _ in range(rng.choice([3, 50, 200])):
                    nested = [nested]
                container[key] = nested
            elif op == 5 and isinstance(container[key], str):
                container[key] = container[key][::-1] if rng.random() < 0.5 else container[key] + "\u0000\ud83d"
            elif op == 6 and isinstance(container[key], int | float) and not isinstance(container[key], bool):
                container[key] = rng.choice([-(10**12), 10**12, 0.5, -0.0, 2**63])
            elif op == 7:
                _self_loop(data, rng)
        except (KeyError, IndexError, TypeError):
            continue
    return data


def _self_loop(data: Any, rng: random.Random) -> None:
    """Connect a node to itself, in whichever format ``data`` is."""
    if not isinstance(data, dict):
        return
    if isinstance(data.get("connections"), dict) and isinstance(data.get("nodes"), list) and data["nodes"]:
        node = rng.choice(data["nodes"])
        if isinstance(node, dict) and isinstance(node.get("name"), str):
            data["connections"][node["name"]] = {"main": [[{"node": node["name"], "type": "main", "index": 0}]]}
    edges = data.get("edges") if "edges" in data else (data.get("data") or {}).get("edges")
    nodes = data.get("nodes") if "edges" in data else (data.get("data") or {}).get("nodes")
    if isinstance(edges, list) and isinstance(nodes, list) and nodes and isinstance(nodes[0], dict):
        node_id = nodes[0].get("id")
        if edges and isinstance(edges[0], dict):
            loop = copy.deepcopy(edges[0])
            for key in ("source", "target"):
                loop[key] = node_id
            edges.append(loop)


def _plant_canary(data: Any, rng: random.Random) -> Any:
    """Put the canary where a careless importer would carry it: a secret-named field or a random value."""
    places = [(c, k) for c, k in _containers(data) if isinstance(c, dict)]
    if not places:
        return data
    container, _ = rng.choice(places)
    choice = rng.randrange(3)
    if choice == 0:
        container["api_key"] = CANARY
    elif choice == 1:
        container["value"] = CANARY
        container["password"] = True
    else:
        container["apiKey"] = {"value": CANARY}
    return data


def _mutate_text(text: str, rng: random.Random) -> str:
    op = rng.randrange(7)
    if op == 6:
        return rng.choice(_YAML_BOMBS)
    if op == 0 and text:
        return text[: rng.randrange(len(text))]
    if op == 1:
        return text.replace("1", "9" * 5000, 1)
    if op == 2:
        return text.replace(": 0", ": NaN", 1).replace(": 1", ": Infinity", 1)
    if op == 3:
        return "[" * 10_000 + "]" * 10_000
    if op == 4 and text:
        cut = rng.randrange(len(text))
        return text[:cut] + '"\\ud800"' + text[cut:]
    return text.replace("position", "\\u0000position", 1)


def cases(count: int, seed: int = 0) -> Iterator[tuple[str, str]]:
    """``(label, text)`` of ``count`` mutated flow files, deterministic for a seed."""
    import yaml

    rng = random.Random(seed)
    seeds = [(p, p.read_text(encoding="utf-8-sig")) for p in seed_files()]
    for index in range(count):
        path, text = rng.choice(seeds)
        label = f"{index}:{path.name}"
        if rng.random() < 0.15:
            yield label, _mutate_text(text, rng)
            continue
        is_yaml = path.suffix in (".yml", ".yaml")
        try:
            data = _mutate_structure(yaml.safe_load(text) if is_yaml else json.loads(text), rng)
            if rng.random() < 0.5:
                data = _plant_canary(data, rng)
            if is_yaml and rng.random() < 0.7:
                yield label, yaml.safe_dump(data, allow_unicode=rng.random() < 0.5)
                continue
            yield label, json.dumps(data, ensure_ascii=rng.random() < 0.5)
        except (RecursionError, yaml.YAMLError):  # too deep for the dumper: nest in the text instead
            yield label, "[" * 5000 + text + "]" * 5000


# --- running -------------------------------------------------------------------------------------


class StepTimeout(BaseException):
    """A step ran past its limit: a hang."""


WALL_SECONDS = 300.0
"""Backstop for a step that waits without computing; the CPU budget is what tells a hang from a busy machine."""

_TIMERS = {signal.SIGPROF: signal.ITIMER_PROF, signal.SIGALRM: signal.ITIMER_REAL}


def _interrupt(signum: int, frame: Any) -> None:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            # never inside an import: a package whose import is cut short keeps the submodules it had loaded
            # in sys.modules but not as attributes, and the rest of the process then fails with "module
            # 'chromadb' has no attribute 'errors'". Try again once the import is done.
            signal.setitimer(_TIMERS[signum], 0.05)
            return
        frame = frame.f_back
    raise StepTimeout()


@contextmanager
def step_limit(cpu_seconds: float, wall_seconds: float = WALL_SECONDS) -> Iterator[None]:
    """Raise :class:`StepTimeout` in the block once this process has spent ``cpu_seconds`` of CPU in it (a loop
    that never ends burns CPU whatever the machine's load; a slow, shared machine only stretches the wall
    clock) or ``wall_seconds`` have passed (a wait that never ends). Main thread only (signals)."""
    previous = {sig: signal.signal(sig, _interrupt) for sig in _TIMERS}
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)
    try:
        yield
    finally:
        for sig, timer in _TIMERS.items():
            signal.setitimer(timer, 0)
            signal.signal(sig, previous[sig])


def run_case(text: str, workdir: Path, limit: float = STEP_SECONDS) -> Outcome:
    """Push one file through import / validate / export; classify what happened."""
    from flowbuilder.formats.convert import IMPORT_FORMATS, export_flow, import_file, parse_flow_text
    from flowbuilder.formats.native import detect_format, dump_flow, load_flow
    from flowbuilder.graph import analyze

    path = workdir / "case.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    outputs: list[str] = []
    step = "read"
    try:
        with step_limit(limit):
            try:
                data = parse_flow_text(text, path)  # JSON, or YAML (a Dify DSL): the importer's own reading
            except FlowbuilderError:
                data = None  # the reader under test must say why, clearly
            if detect_format(data) in IMPORT_FORMATS:
                step = "import"
                flow, report = import_file(path, local=True)
                outputs += [dump_flow(flow), json.dumps(report.to_dict()), report.to_text()]
            else:
                step = "load"
                flow = load_flow(path)
            step = "validate"
            analyze(flow)
            for fmt in ("n8n", "langflow"):
                step = f"export {fmt}"
                exported, warnings = export_flow(flow, fmt)
                outputs += [json.dumps(exported, allow_nan=False), "\n".join(warnings)]
    except FlowbuilderError:
        pass
    except StepTimeout:
        return Outcome("hang", step)
    except Exception as exc:  # the whole point: anything else is a bug to report
        return Outcome("traceback", step, f"{type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc(limit=-3))
    if any(CANARY in out for out in outputs):
        return Outcome("leak", step)
    return Outcome("clean", step)


def campaign(count: int, workdir: Path, seed: int = 0) -> Campaign:
    result = Campaign()
    started = time.perf_counter()
    for number, (label, text) in enumerate(cases(count, seed)):
        outcome = run_case(text, workdir, FIRST_CASE_SECONDS if number == 0 else STEP_SECONDS)
        result.counts[outcome.kind] += 1
        if outcome.kind != "clean":
            result.failures.append((label, outcome, text[:2000]))
    result.seconds = time.perf_counter() - started
    return result
