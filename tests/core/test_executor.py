"""The executor: order, events, run-to, failures, disabled nodes, cancellation and the cache."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from core_helpers import Numbers, Slow, Take, edge, flow, node

from flowbuilder.cache import ResultCache
from flowbuilder.errors import FlowValidationError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.registry import NodeRegistry
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore


def executor(registry: NodeRegistry, tmp_path: Path, **kw) -> Executor:
    resolver = kw.pop("resolver", CredentialResolver(store=CredentialStore(tmp_path / "c.json"), environ={}))
    return Executor(registry=registry, resolver=resolver, data_dir=tmp_path, **kw)


def pipeline():
    return flow(
        [node("src", "test.numbers", count=5), node("take", "test.take", k=2)],
        [edge("src.records", "take.chunks")],
    )


def test_runs_in_lexicographic_topological_order_with_events(registry, tmp_path) -> None:
    f = flow(
        [node("b", "test.say"), node("a", "test.say"), node("j", "test.join")],
        [edge("b.text", "j.parts"), edge("a.text", "j.parts")],
    )
    events: list[RunEvent] = []
    started = time.perf_counter()
    run = executor(registry, tmp_path).run(f, on_event=events.append)
    wall = time.perf_counter() - started
    assert run.order == ["a", "b", "j"]
    assert run.results["j"].outputs["text"] == "hello+hello"
    kinds = [(e.kind, e.node_id) for e in events]
    assert kinds[0] == ("run_started", None) and kinds[-1] == ("run_finished", None)
    assert ("node_started", "a") in kinds and ("node_finished", "j") in kinds
    finished = next(e for e in events if e.kind == "node_finished" and e.node_id == "a")
    assert 0 < finished.data["duration"] <= wall and finished.data["summary"] == "5 chars"  # the node's own time
    assert finished.data["duration"] == run.results["a"].duration


def test_summary_counts_items(registry, tmp_path) -> None:
    run = executor(registry, tmp_path).run(pipeline())
    assert run.results["src"].summary == "5 records"
    assert run.results["take"].summary == "2 chunks"


def test_run_to_a_node_runs_only_its_ancestors(registry, tmp_path) -> None:
    f = pipeline()
    f.nodes.append(node("other", "test.say"))
    run = executor(registry, tmp_path).run(f, to="src")
    assert run.order == ["src"]
    with pytest.raises(FlowValidationError, match="--to names no node"):
        executor(registry, tmp_path).run(f, to="nope")


def test_run_to_ignores_problems_outside_its_scope(registry, tmp_path) -> None:
    f = pipeline()
    f.nodes.append(node("broken", "test.take"))  # missing input, but not upstream of src
    assert executor(registry, tmp_path).run(f, to="take").ok
    with pytest.raises(FlowValidationError):
        executor(registry, tmp_path).run(f)


def test_failure_stops_dependants_but_independent_branches_finish(registry, tmp_path) -> None:
    f = flow(
        [node("f", "test.fail"), node("after", "test.join"), node("src", "test.numbers"), node("take", "test.take")],
        [edge("f.text", "after.parts"), edge("src.records", "take.chunks")],
    )
    events: list[RunEvent] = []
    run = executor(registry, tmp_path).run(f, on_event=events.append)
    assert run.results["f"].status == "failed"
    assert "Node 'f' (test.fail) failed" in (run.results["f"].error or "")
    assert "give it something else" in (run.results["f"].error or "")
    assert run.results["after"].status == "skipped" and "'f'" in run.results["after"].summary
    assert run.results["take"].status == "ok" and len(run.results["take"].outputs["chunks"]) == 2
    assert not run.ok and [r.node_id for r in run.failed()] == ["f"]
    assert any(e.kind == "node_failed" and e.node_id == "f" for e in events)


def test_disabled_nodes_are_skipped_and_so_are_their_required_dependants(registry, tmp_path) -> None:
    f = pipeline()
    f.nodes[0].disabled = True
    run = executor(registry, tmp_path).run(f)
    assert run.results["src"].status == "disabled"
    assert run.results["take"].status == "skipped"
    assert Numbers.runs == 0


def test_run_input_goes_to_text_input_nodes(registry, tmp_path) -> None:
    f = flow([node("s", "test.say"), node("t", "test.say")])
    run = executor(registry, tmp_path).run(f, inputs={"*": "all", "t": "just t"})
    assert run.results["s"].outputs["text"] == "all"
    assert run.results["t"].outputs["text"] == "just t"


def test_cancel_inside_a_batch_node_keeps_completed_results(registry, tmp_path) -> None:
    f = flow([node("a", "test.numbers"), node("slow", "test.slow", steps=2000), node("z", "test.say")])
    cancel = threading.Event()
    progress: list[RunEvent] = []
    result = {}

    def work() -> None:
        result["run"] = executor(registry, tmp_path).run(
            f, cancel_event=cancel, on_event=lambda e: progress.append(e) if e.kind == "progress" else None
        )

    thread = threading.Thread(target=work)
    thread.start()
    assert Slow.started.wait(5)
    cancel.set()
    thread.join(10)
    run = result["run"]
    assert run.cancelled
    assert run.results["a"].status == "ok"
    assert run.results["slow"].status == "cancelled"
    assert run.results["z"].status == "cancelled"  # not started after the cancel
    assert progress and progress[-1].data["done"] < 2000


def test_cancel_before_start_runs_nothing(registry, tmp_path) -> None:
    cancel = threading.Event()
    cancel.set()
    run = executor(registry, tmp_path).run(pipeline(), cancel_event=cancel)
    assert run.cancelled and Numbers.runs == 0


def test_progress_events_are_throttled(registry, tmp_path) -> None:
    events: list[RunEvent] = []
    executor(registry, tmp_path).run(flow([node("slow", "test.slow", steps=100)]), on_event=events.append)
    progress = [e for e in events if e.kind == "progress"]
    assert 1 <= len(progress) < 30  # 100 steps over ~0.5 s at most 10 per second, plus the last
    assert progress[-1].data["done"] == 100


def test_cache_reuses_unchanged_upstream_when_a_downstream_config_changes(registry, tmp_path) -> None:
    ex = executor(registry, tmp_path)
    f = pipeline()
    first = ex.run(f)
    assert first.results["src"].status == "ok" and Numbers.runs == 1
    f.nodes[1].config["k"] = 4  # like changing a retriever's k
    second = ex.run(f)
    assert second.results["src"].status == "cached" and Numbers.runs == 1
    assert second.results["take"].status == "ok" and len(second.results["take"].outputs["chunks"]) == 4
    f.nodes[0].config["count"] = 6  # upstream change invalidates both
    third = ex.run(f)
    assert [third.results[n].status for n in ("src", "take")] == ["ok", "ok"]
    assert Take.runs == 3


def test_cache_can_be_bypassed(registry, tmp_path) -> None:
    ex = executor(registry, tmp_path)
    ex.run(pipeline())
    ex.run(pipeline(), use_cache=False)
    assert Numbers.runs == 2


def test_disk_cache_survives_a_new_executor(registry, tmp_path) -> None:
    executor(registry, tmp_path, cache=ResultCache(tmp_path / "cache")).run(pipeline())
    run = executor(registry, tmp_path, cache=ResultCache(tmp_path / "cache")).run(pipeline())
    assert run.results["src"].status == "cached" and Numbers.runs == 1
    assert run.results["src"].outputs["records"][4].text == "4"


@pytest.mark.parametrize("on_disk", [False, True])
def test_cached_results_belong_to_their_flow(registry, tmp_path, on_disk: bool) -> None:
    """Two flows with identical nodes and configs but different scopes (another file, another flow_id, built
    in code) never reuse each other's cached results (a hit skips the node's own path checks), even through
    one shared cache; each flow still reuses its own."""
    cache = ResultCache(tmp_path / "cache") if on_disk else ResultCache()
    ex = executor(registry, tmp_path, cache=cache)

    def mine(flow_id: str):
        f = pipeline()
        f.meta["flow_id"] = flow_id
        return f

    mine_file, stranger_file = tmp_path / "mine.json", tmp_path / "stranger.json"
    assert ex.run(mine("same-id"), flow_file=mine_file).results["src"].status == "ok" and Numbers.runs == 1
    assert ex.run(mine("same-id"), flow_file=mine_file).results["src"].status == "cached" and Numbers.runs == 1
    others = (
        ("another file, same flow_id", mine("same-id"), stranger_file),
        ("same file, another flow_id", mine("other-id"), mine_file),
        ("built in code", mine("same-id"), None),
    )
    for runs, (what, other, flow_file) in enumerate(others, start=2):
        result = ex.run(other, flow_file=flow_file).results["src"]
        assert result.status == "ok" and Numbers.runs == runs, f"{what}: reused another flow's cached result"
    assert ex.run(mine("same-id"), flow_file=mine_file).results["src"].status == "cached"


def test_disk_cache_does_not_stand_in_for_services(registry, tmp_path) -> None:
    f = flow([node("e", "test.embeds")])
    executor(registry, tmp_path, cache=ResultCache(tmp_path / "cache")).run(f)
    run = executor(registry, tmp_path, cache=ResultCache(tmp_path / "cache")).run(f)
    assert run.results["e"].status == "ok"
