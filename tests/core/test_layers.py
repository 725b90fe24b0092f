"""The package's layers, as import-linter contracts (``[tool.importlinter]`` in pyproject.toml), and no import
circles: the core never imports the UI, the commands or the built-in nodes; the UI never imports the commands
or a node module; nodes never import the UI."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import grimp
import networkx as nx
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
ABOVE_OR_BESIDE_THE_CORE = {"ui", "commands", "cli", "nodes", "__main__", "__init__"}
KNOWN_CIRCLES: set[frozenset[str]] = set()
"""None left: the trust room (flowbuilder/trust/) opened credentials <-> egress <-> pathguard <-> paths <-> node by
moving the paths helpers down (trust/places.py) and the provider tables out (trust/providers.py)."""


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_the_layer_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)  # import-linter finds pyproject.toml in the working directory
    try:
        code = lint_imports(no_cache=True, no_logo=True)
    finally:
        os.chdir(cwd)
    report = capsys.readouterr().out
    assert code == 0, report
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in report


def test_every_core_module_is_under_the_core_contract() -> None:
    """A new module of the core must be named in the core's contract, or it escapes the layer check."""
    core = next(
        c for c in _contracts() if "flowbuilder.ui" in c["forbidden_modules"] and "nicegui" in c["forbidden_modules"]
    )  # type: ignore[operator]
    named = {str(m).removeprefix("flowbuilder.") for m in core["source_modules"]}  # type: ignore[attr-defined]
    present = {
        p.stem if p.is_file() else p.name
        for p in (ROOT / "flowbuilder").iterdir()
        if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
    }
    missing = sorted(present - named - ABOVE_OR_BESIDE_THE_CORE)
    assert not missing, f"add these modules to the core contract in pyproject.toml: {', '.join(missing)}"
    gone = sorted(named - present)
    assert not gone, f"the core contract in pyproject.toml names modules that no longer exist: {', '.join(gone)}"


def import_circles() -> list[set[str]]:
    """Every import circle in the package: the strongly connected groups of its module import graph (imports
    inside functions count, ``if TYPE_CHECKING`` ones do not)."""
    graph = grimp.build_graph("flowbuilder", exclude_type_checking_imports=True)
    imports = nx.DiGraph()
    for module in graph.modules:
        imports.add_edges_from((module, imported) for imported in graph.find_modules_directly_imported_by(module))
    return [group for group in nx.strongly_connected_components(imports) if len(group) > 1]


def test_no_import_circles() -> None:
    circles = [sorted(group) for group in import_circles() if frozenset(group) not in KNOWN_CIRCLES]
    assert not circles, f"import circles: {circles}"
