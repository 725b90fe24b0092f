"""The suite's file order (tests/conftest.py): the long files it starts first must exist, or the list has rotted."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONG_FILES

REPO = Path(__file__).resolve().parents[2]


def test_every_long_file_the_suite_starts_first_exists() -> None:
    missing = [name for name in LONG_FILES if not (REPO / name).is_file()]
    assert missing == [], f"tests/conftest.py LONG_FILES names files that are gone: {missing}"
    assert len(set(LONG_FILES)) == len(LONG_FILES)
