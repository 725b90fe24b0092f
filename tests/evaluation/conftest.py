"""Fixtures for the comparison tests (real nodes, local MiniLM, embedded Chroma in a temp data dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .small_flows import write_small_corpus


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_corpus(tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="session")
def compare_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir (embedding cache + Chroma) shared by the comparison tests of a session."""
    return tmp_path_factory.mktemp("fbdata")
