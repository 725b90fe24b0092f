"""``compare --ray`` and ``eval --ray`` on the real two-node cluster give what the local commands give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import REPO, Site
from tests.evaluation.small_flows import write_small_corpus

pytestmark = pytest.mark.slow
TIMES = ("ingest_seconds", "search_seconds", "seconds", "embedded", "added")
"""What may differ between two runs of the same comparison: how long it took, and what was already stored."""


def _server_flows(site: Site, folder: Path, port: int) -> Path:
    write_small_corpus(folder)
    for name in ("naive.json", "labelled.json"):
        flow = json.loads((folder / name).read_text(encoding="utf-8"))
        for node in flow["nodes"]:
            if node["type"] == "vectorstore.chroma":
                node["config"].update(server_host="127.0.0.1", server_port=port)
        (folder / name).write_text(json.dumps(flow), encoding="utf-8")
    return folder


def _without_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_times(item) for key, item in value.items() if key not in TIMES}
    if isinstance(value, list):
        return [_without_times(item) for item in value]
    return value


def test_compare_prints_the_same_leaderboard_with_and_without_ray(site: Site) -> None:
    folder = _server_flows(site, site.folder / "compare", site.chroma_port)
    args = ("compare", str(folder / "naive.json"), str(folder / "labelled.json"), "--questions",
            str(folder / "questions.jsonl"))  # fmt: skip
    on_ray = site.cli(*args, "--ray", site.address)  # first: the workers fill the server's collections
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    # B's ingest batches and A's questions ran on the cluster
    assert "[B] store: batches on the Ray cluster (" in on_ray.stderr
    assert "[A] retriever: searching on the Ray cluster 4/4" in on_ray.stderr
    local = site.cli(*args)
    assert local.returncode == 0, local.stderr[-3000:]

    def board(text: str) -> list[list[str]]:
        lines = text.split("Leaderboard")[1].split("\n\n")[0].splitlines()[1:]
        rows = [line.split("  ") for line in lines]
        header = [cell.strip() for cell in rows[0] if cell.strip()]
        ingest = header.index("ingest s")
        return [[c.strip() for c in row if c.strip()][:ingest] for row in rows[2:]] + [header]

    assert board(on_ray.stdout) == board(local.stdout)
    verdicts = [line for line in local.stdout.splitlines() if " vs " in line and ":" in line]
    assert verdicts and all(line in on_ray.stdout for line in verdicts)

    on_ray_json = site.cli(*args, "--json", "--ray", site.address)
    local_json = site.cli(*args, "--json")
    assert _without_times(json.loads(on_ray_json.stdout)) == _without_times(json.loads(local_json.stdout))


def test_eval_gives_the_same_verdicts_with_and_without_ray(site: Site) -> None:
    folder = _server_flows(site, site.folder / "eval", site.chroma_port)
    flow = json.loads((REPO / "flows" / "row_labelled_csv_rag.json").read_text(encoding="utf-8"))
    for node in flow["nodes"]:
        if node["type"] == "vectorstore.chroma":
            node["config"].update(server_host="127.0.0.1", server_port=site.chroma_port, collection="eval-ray")
        elif node["type"] == "loader.file":
            node["config"]["path"] = "vwo30.csv"
    (folder / "answers.json").write_text(json.dumps(flow), encoding="utf-8")
    args = ("eval", str(folder / "answers.json"), "--questions", str(folder / "questions.jsonl"), "--json")
    on_ray = site.cli(*args, "--ray", site.address)
    local = site.cli(*args)
    assert on_ray.stdout and local.stdout, on_ray.stderr[-3000:] + local.stderr[-3000:]
    ray_report, local_report = json.loads(on_ray.stdout), json.loads(local.stdout)
    assert [r["verdict"] for r in ray_report["results"]] == [r["verdict"] for r in local_report["results"]]
    assert _without_times(ray_report) == _without_times(local_report)
