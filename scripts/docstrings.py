"""How many public definitions have a docstring, per area of the package (the house's documentation figure).

    python scripts/docstrings.py                 # the table
    python scripts/docstrings.py --missing serving   # and what lacks one in an area

Public = a module-level class or function, or a method of a public class, whose name does not start with
``_``. The built-in nodes (``nodes/``, imported as ``flowbuilder.nodes``) are their own area.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def files() -> list[tuple[str, Path]]:
    """Every module of the package as (path inside the package, file); the built-in nodes as ``nodes/...``."""
    found = [(p.relative_to(ROOT / "flowbuilder").as_posix(), p) for p in (ROOT / "flowbuilder").rglob("*.py")]
    found = [(rel, p) for rel, p in found if not rel.startswith("nodes/")]
    found += [("nodes/" + p.relative_to(ROOT / "nodes").as_posix(), p) for p in (ROOT / "nodes").rglob("*.py")]
    return sorted(found)


@dataclass(frozen=True)
class Definition:
    """One public class or function of a module, and whether it says what it is for."""

    name: str
    """Dotted within the module, e.g. ``Threshold.value``."""
    line: int
    is_class: bool
    documented: bool


def definitions(source: str) -> list[Definition]:
    """The public definitions of one module's source: module-level classes and functions, and the methods and
    nested classes of public classes, whose names do not start with ``_``."""
    found: list[Definition] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or node.name.startswith("_"):
                continue
            is_class = isinstance(node, ast.ClassDef)
            found.append(Definition(prefix + node.name, node.lineno, is_class, ast.get_docstring(node) is not None))
            if is_class:
                visit(node.body, f"{prefix}{node.name}.")

    visit(ast.parse(source).body, "")
    return found


def measure() -> tuple[Counter[str], Counter[str], Counter[str], Counter[str], dict[str, list[str]]]:
    """(definitions, with a docstring, classes, classes with one) per area, and what lacks one per area."""
    defs: Counter[str] = Counter()
    documented: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    documented_classes: Counter[str] = Counter()
    missing: dict[str, list[str]] = defaultdict(list)
    for rel, path in files():
        area = rel.split("/")[0] if "/" in rel else "core"
        for found in definitions(path.read_text(encoding="utf-8")):
            for key in ("all", area):
                defs[key] += 1
                documented[key] += found.documented
                classes[key] += found.is_class
                documented_classes[key] += found.is_class and found.documented
            if not found.documented:
                missing[area].append(f"{rel}:{found.line} {found.name}")
    return defs, documented, classes, documented_classes, missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", metavar="AREA", help="list the public definitions of AREA without a docstring")
    args = parser.parse_args()
    defs, documented, classes, documented_classes, missing = measure()
    print(f"{'area':12} {'definitions':>18} {'classes':>16}")
    for area in sorted(defs, key=lambda a: (a != "all", a)):
        share = f"{documented[area]}/{defs[area]} {100 * documented[area] / defs[area]:3.0f}%"
        kinds = f"{documented_classes[area]}/{classes[area]}" if classes[area] else "-"
        print(f"{area:12} {share:>18} {kinds:>16}")
    for line in missing.get(args.missing or "", []):
        print(line)


if __name__ == "__main__":
    main()
