"""The builder's pages are built from named parts of at most about 60 lines (issue 35): a function longer than that
in ``flowbuilder/ui/`` is a page part waiting to be named. The count is the whole definition, decorators and
docstring included, and a nested function counts inside its parent too."""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "flowbuilder" / "ui"
LONGEST = 60


def function_lengths(source: str) -> dict[str, int]:
    """Lines per function or method of a module's source, by dotted name."""
    lengths: dict[str, int] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lengths[prefix + node.name] = (node.end_lineno or node.lineno) - start + 1
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(ast.parse(source).body, "")
    return lengths


def test_the_measure_counts_a_method_with_its_decorator() -> None:
    source = "class A:\n    @staticmethod\n    def f() -> None:\n        x = 1\n        return None\n"
    assert function_lengths(source) == {"A.f": 4}


def test_no_page_part_is_longer_than_about_60_lines() -> None:
    long = sorted(
        (length, f"{path.relative_to(UI.parent.parent)} {name}")
        for path in UI.rglob("*.py")
        for name, length in function_lengths(path.read_text(encoding="utf-8")).items()
        if length > LONGEST
    )
    assert not long, f"split these into named parts of at most {LONGEST} lines:\n" + "\n".join(
        f"{length:4d} {where}" for length, where in reversed(long)
    )
