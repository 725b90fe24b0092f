"""--vary variant builder: cartesian product, JSON-or-string values, config validation by the node's
pydantic Config, clear errors naming the node/field and listing what exists, separate collections."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.evaluation.variants import VariantError, build_variants, parse_vary, split_values
from flowbuilder.formats.native import load_flow

FLOW = Path(__file__).resolve().parents[2] / "flows" / "chunking" / "recursive.json"


def _flow():  # type: ignore[no-untyped-def]
    return load_flow(FLOW)


def test_cartesian_product_in_order_with_labels() -> None:
    variants = build_variants(_flow(), ["splitter.chunk_size=300,500,1000", "splitter.chunk_overlap=0,75"])
    labels = [label for label, _ in variants]
    assert labels == [
        "splitter.chunk_size=300 splitter.chunk_overlap=0",
        "splitter.chunk_size=300 splitter.chunk_overlap=75",
        "splitter.chunk_size=500 splitter.chunk_overlap=0",
        "splitter.chunk_size=500 splitter.chunk_overlap=75",
        "splitter.chunk_size=1000 splitter.chunk_overlap=0",
        "splitter.chunk_size=1000 splitter.chunk_overlap=75",
    ]
    configs = [next(n for n in f.nodes if n.id == "splitter").config for _, f in variants]
    assert [(c["chunk_size"], c["chunk_overlap"]) for c in configs] == [
        (300, 0),
        (300, 75),
        (500, 0),
        (500, 75),
        (1000, 0),
        (1000, 75),
    ]
    assert all(isinstance(c["chunk_size"], int) for c in configs)
    collections = {next(n for n in f.nodes if n.id == "store").config["collection"] for _, f in variants}
    assert len(collections) == 6 and all(c.startswith("docs-recursive-v") for c in collections)
    again = build_variants(_flow(), ["splitter.chunk_size=300,500,1000", "splitter.chunk_overlap=0,75"])
    assert [f.model_dump() for _, f in again] == [f.model_dump() for _, f in variants]  # deterministic
    original = next(n for n in _flow().nodes if n.id == "splitter").config
    assert original["chunk_size"] == 500  # the input flow is not touched
    assert variants[0][1].name.endswith("[splitter.chunk_size=300 splitter.chunk_overlap=0]")


def test_values_are_json_when_they_parse_else_strings() -> None:
    vary = parse_vary('splitter.separators=["\\n\\n", "\\n"],[" "]')
    assert vary.values == (["\n\n", "\n"], [" "])
    assert parse_vary("llm.model=llama3.2, gpt-4o-mini").values == ("llama3.2", "gpt-4o-mini")
    assert parse_vary("x.flag=true,null,1.5").values == (True, None, 1.5)
    assert split_values('a,"b,c",{"d": [1, 2]}') == ["a", '"b,c"', '{"d": [1, 2]}']
    [(_, variant)] = build_variants(_flow(), ['splitter.separators=["\\n\\n", " "]'])
    assert next(n for n in variant.nodes if n.id == "splitter").config["separators"] == ["\n\n", " "]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("splitter=300", "expected NODE.FIELD=V1,V2"),
        ("splitter.chunk_size=", "one or more comma-separated values"),
        ("splitter.chunk_size=300,,500", "none empty"),
        ("splittr.chunk_size=300", "no node 'splittr'; its nodes are: answer, embedder, llm, loader"),
        ("splitter.size=300", "has no field 'size'; its fields are: chunk_overlap, chunk_size, keep_separator"),
        ("splitter.chunk_size=0", "splitter.chunk_size=0: not a valid config for node 'splitter'"),
        ("splitter.chunk_size=big", "chunk_size=big: not a valid config"),
        ("store.k=-1", "store.k=-1: not a valid config for node 'store' (vectorstore.chroma)"),
    ],
)
def test_clear_errors(option: str, message: str) -> None:
    with pytest.raises(VariantError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_variants(_flow(), [option])


def test_repeated_or_missing_options_and_oversized_sweeps() -> None:
    with pytest.raises(VariantError, match="given twice"):
        build_variants(_flow(), ["splitter.chunk_size=300", "splitter.chunk_size=500"])
    with pytest.raises(VariantError, match="at least one"):
        build_variants(_flow(), [])
    with pytest.raises(VariantError, match="sweep fewer values"):
        build_variants(_flow(), ["splitter.chunk_size=" + ",".join(str(300 + i) for i in range(201))])


def test_each_combination_passes_the_node_checks() -> None:
    with pytest.raises(
        VariantError, match=r"variant 'splitter.chunk_size=300 splitter.chunk_overlap=400'.*larger than"
    ):
        build_variants(_flow(), ["splitter.chunk_size=300,1000", "splitter.chunk_overlap=400"])
    fixed = load_flow(FLOW.parent / "fixed300.json")
    with pytest.raises(VariantError, match="must be smaller than chunk_size"):
        build_variants(fixed, ["splitter.chunk_overlap=0,300"])


def test_varying_the_collection_itself_is_respected() -> None:
    variants = build_variants(_flow(), ["store.collection=alpha,beta"])
    assert [next(n for n in f.nodes if n.id == "store").config["collection"] for _, f in variants] == ["alpha", "beta"]
