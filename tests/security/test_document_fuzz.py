"""Bad documents cost one clear line each and nothing else: the crafted attacks (zip and entity bombs, a
100,000-deep tree, huge cells), a seeded campaign of broken copies of the real samples, and a folder holding them
all beside good files. ``python scripts/fuzz.py --documents --count 2000`` runs a long campaign."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import document_fuzz

from flowbuilder.node import RunContext
from flowbuilder.nodes.loaders import FileLoader, FileLoaderConfig

CAMPAIGN = int(os.environ.get("FLOWBUILDER_DOCUMENT_FUZZ", "150"))


@pytest.mark.parametrize("case", list(document_fuzz.crafted()), ids=lambda case: case[1])
def test_crafted_attack_is_one_clear_line(case: tuple[str, str, bytes], tmp_path: Path) -> None:
    label, name, data = case
    outcome = document_fuzz.run_case(name, data, tmp_path)
    assert outcome.kind == "clean", f"{label}: {outcome.kind}\n{outcome.detail}"


def test_huge_cell_workbook_loads_or_fails_in_one_line(tmp_path: Path) -> None:
    path = document_fuzz.huge_cell_workbook(tmp_path)
    outcome = document_fuzz.run_case(path.name, path.read_bytes(), tmp_path / "..")
    assert outcome.kind == "clean", outcome.detail


@pytest.mark.slow
def test_seeded_campaign_over_the_samples(tmp_path: Path) -> None:
    result = document_fuzz.Campaign()
    for label, name, data in document_fuzz.cases(CAMPAIGN, seed=29):
        outcome = document_fuzz.run_case(name, data, tmp_path)
        result.counts[outcome.kind] += 1
        if outcome.kind != "clean":
            result.failures.append((label, outcome, name))
    shown = "\n".join(f"{label}: {o.kind}: {o.detail[:400]}" for label, o, _ in result.failures[:5])
    assert not result.failures, f"{result.table()}\n{shown}"
    assert result.counts["clean"] == CAMPAIGN


def test_a_folder_of_bad_files_loads_the_good_ones_and_names_each_bad_one(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    good = ["release-checklist.docx", "onboarding.pptx"]
    for name in good:
        (tmp_path / name).write_bytes((root / "data" / "qa-handbook" / name).read_bytes())
    bad = {name: data for _, name, data in document_fuzz.crafted() if "bomb" in name or "deep" in name}
    bad["cut.odt"] = (root / "data" / "qa-handbook" / "performance-testing.odt").read_bytes()[:3000]
    bad["blank.epub"] = b""
    for name, data in bad.items():
        (tmp_path / name).write_bytes(data)
    ctx = RunContext("load")
    records = FileLoader(FileLoaderConfig(path=str(tmp_path))).run({}, ctx)["records"]
    assert {r.metadata["source"] for r in records} == set(good)
    assert len([r for r in records if r.metadata["source"] == "onboarding.pptx"]) == 6
    skipped = {item["file"]: item["reason"] for item in ctx.details["skipped"]}
    assert set(skipped) == set(bad)
    assert all("\n" not in reason and reason.startswith(name) for name, reason in skipped.items())
    assert ctx.warning.startswith(f"{len(bad)} of {len(bad) + 2} files skipped: ")


@pytest.mark.parametrize("name", ["xlrd-loop-1.xls", "xlrd-loop-2.xls"])
def test_xls_whose_sector_chain_loops_is_one_line(name: str, tmp_path: Path) -> None:
    """Found by the long campaign (seed 7): xlrd's own OLE reader looped forever on these; olefile refuses them."""
    data = (Path(__file__).parent / "fixtures" / name).read_bytes()
    outcome = document_fuzz.run_case(name, data, tmp_path, limit=30)
    assert outcome.kind == "clean", outcome
