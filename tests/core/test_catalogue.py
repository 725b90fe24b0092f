"""The node catalogue in docs/ARCHITECTURE.md is the registry's, not a hand-kept copy."""

from __future__ import annotations

from flowbuilder.catalogue import ARCHITECTURE, BEGIN, END, catalogue, with_catalogue
from flowbuilder.registry import default_registry


def test_the_committed_catalogue_matches_the_registry() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert with_catalogue(text) == text, "the node catalogue is stale: run `python -m flowbuilder.catalogue`"


def test_every_registered_type_has_a_row() -> None:
    generated = catalogue()
    assert generated.startswith(BEGIN) and generated.endswith(END)
    for cls in default_registry():
        assert f"| `{cls.type_name}` |" in generated
