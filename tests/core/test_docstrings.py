"""Every public class and every CLI command says what it is for (the house's documentation rule).

The measure is ``scripts/docstrings.py`` (also the per-area figure); these tests hold the two parts the rule makes
absolute: public classes anywhere in the package (built-in nodes included) and the command modules under
``flowbuilder/commands/``, plus the handler every subcommand dispatches to.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

from flowbuilder.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docstrings_script", ROOT / "scripts" / "docstrings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the script runs
    spec.loader.exec_module(module)
    return module


DOCSTRINGS = _script()


def test_the_measure_finds_an_undocumented_class_method_and_function() -> None:
    source = '''
class Told:
    """Said."""

    def quiet(self) -> None: ...

    def _private(self) -> None: ...


class Silent:
    pass


def loud() -> None:
    """Said."""


def mute() -> None: ...
'''
    missing = {(d.name, d.is_class) for d in DOCSTRINGS.definitions(source) if not d.documented}
    assert missing == {("Told.quiet", False), ("Silent", True), ("mute", False)}


def test_every_public_class_has_a_docstring() -> None:
    missing = [
        f"{rel}:{d.line} {d.name}"
        for rel, path in DOCSTRINGS.files()
        for d in DOCSTRINGS.definitions(path.read_text(encoding="utf-8"))
        if d.is_class and not d.documented
    ]
    assert not missing, "public classes without a docstring (say what each is for):\n" + "\n".join(missing)


def test_every_public_definition_of_the_commands_has_a_docstring() -> None:
    missing = [
        f"{rel}:{d.line} {d.name}"
        for rel, path in DOCSTRINGS.files()
        if rel.startswith("commands/")
        for d in DOCSTRINGS.definitions(path.read_text(encoding="utf-8"))
        if not d.documented
    ]
    assert not missing, "command definitions without a docstring (say what each is for):\n" + "\n".join(missing)


def test_every_subcommand_has_help_and_a_documented_handler() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    commands = subparsers.choices
    assert {"run", "compare", "eval", "tune", "validate", "serve", "ui"} <= set(commands)
    problems = []
    for name, sub in sorted(commands.items()):
        handler = sub.get_default("handler")
        if not helps.get(name):
            problems.append(f"{name}: no help line in `flowbuilder --help`")
        if handler is None:
            problems.append(f"{name}: no handler")
        elif not inspect.getdoc(handler):
            problems.append(f"{name}: its handler {handler.__module__}.{handler.__qualname__} has no docstring")
    assert not problems, "\n".join(problems)
