"""The decision records stay findable: one number per record, its title line says it, the index lists it, and every
"ADR NNNN" cited in the docs and code names a record that exists (branches that each add a record meet here)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions"
RECORD = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
CITED = re.compile(r"\bADR (\d{4})\b|docs/decisions/(\d{4})\b")
SOURCES = ("flowbuilder", "nodes", "tests", "docs", "benchmarks", "scripts")


def _records() -> dict[str, Path]:
    paths = [p for p in DECISIONS.iterdir() if p.name != "README.md"]
    assert all(RECORD.match(p.name) for p in paths), [p.name for p in paths if not RECORD.match(p.name)]
    numbers = Counter(p.name[:4] for p in paths)
    twice = sorted(n for n, count in numbers.items() if count > 1)
    assert not twice, f"decision numbers used twice: {twice}; give the newer record the next free number"
    return {p.name[:4]: p for p in paths}


def test_each_record_has_its_own_number_and_says_it_in_its_title() -> None:
    records = _records()
    assert len(records) >= 22
    wrong = [p.name for number, p in records.items() if not p.read_text(encoding="utf-8").startswith(f"# {number} ")]
    assert not wrong, f"first line must be '# NNNN Title' with the file's number: {wrong}"


def test_the_index_lists_every_record_and_nothing_else() -> None:
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"\]\((\d{4}-[a-z0-9-]+\.md)\)", index)
    assert sorted(listed) == sorted(p.name for p in _records().values())


def test_every_cited_record_exists() -> None:
    sources = [ROOT / "README.md", *(p for d in SOURCES for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".md"))]
    records = _records()
    missing = []
    for path in sources:
        for line_number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for match in CITED.finditer(line):
                number = match.group(1) or match.group(2)
                if number not in records:
                    missing.append(f"{path.relative_to(ROOT)}:{line_number} cites {number}")
    assert not missing, "citations of decision records that do not exist:\n" + "\n".join(missing)
