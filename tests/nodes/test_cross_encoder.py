"""reranker.cross_encoder with a tiny ONNX cross-encoder the test builds (onnx helper API + tokenizers).

The model is a real graph with the inputs of a BERT cross-encoder (input_ids, attention_mask,
token_type_ids) and a [batch, 1] logits output: each passage token (token type 1, not padding) adds
its vocabulary weight. Words of the "relevant" vocabulary weigh 1, others 0, so the expected order is
known, and a tokenizer or feed mistake (wrong pair order, token types or mask) changes the scores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flowbuilder.errors import NodeError
from flowbuilder.node import RunContext
from flowbuilder.nodes.rerankers.cross_encoder import CrossEncoderConfig, CrossEncoderReranker
from tests.nodes.rerank_helpers import make_hits

WORDS = (
    "you receive 10 recovery codes when turn on two - factor authentication . , invoices are emailed the first day "
    "of each month refunds paid back to original card within 5 working days passwords must have at least 12 "
    "characters how many do i get"
)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS.split(" ")]
RELEVANT = {"recovery", "codes", "authentication"}


def build_model_folder(folder: Path, *, token_types: bool = True) -> Path:
    import onnx
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {word: i for i, word in enumerate(dict.fromkeys(VOCAB))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(folder / "tokenizer.json"))

    weights = np.array([[1.0 if w in RELEVANT else 0.0] for w in vocab], dtype=np.float32)
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
    ]
    if token_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "seq"]))
    nodes = [
        helper.make_node("Gather", ["weights", "input_ids"], ["per_token"]),  # [b, s, 1]
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
    ]
    if token_types:
        nodes += [
            helper.make_node("Cast", ["token_type_ids"], ["types_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["mask_f", "types_f"], ["keep"]),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["mask_f"], ["keep"]))
    nodes += [
        helper.make_node("Unsqueeze", ["keep", "axis2"], ["keep3"]),
        helper.make_node("Mul", ["per_token", "keep3"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "axis1"], ["logits"], keepdims=0),  # [b, 1]
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-cross-encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[
            helper.make_tensor("weights", TensorProto.FLOAT, list(weights.shape), weights.flatten().tolist()),
            helper.make_tensor("axis1", TensorProto.INT64, [1], [1]),
            helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_model_folder(tmp_path_factory.mktemp("ce") / "tiny-cross-encoder")


def _run(
    folder: Path | str, query: str = "how many recovery codes do i get", **config: object
) -> tuple[list, RunContext]:
    ctx = RunContext("ce")
    node = CrossEncoderReranker(CrossEncoderConfig(model_dir=str(folder), **config))  # type: ignore[arg-type]
    out = node.run({"hits": make_hits(), "query": query}, ctx)
    return out["hits"], ctx


def test_cross_encoder_scores_passages_with_the_onnx_model(model_dir: Path) -> None:
    hits, ctx = _run(model_dir, keep=2, activation="none", batch_size=3)
    # SEC-2's passage holds 3 relevant words; the others none. Query words must not count (token type 0).
    assert [h.id for h in hits] == ["SEC-2", "PAY-1"]
    assert hits[0].score == pytest.approx(3.0)
    assert hits[1].score == pytest.approx(0.0)
    assert hits[0].legs["rerank"] == {"rank": 1, "score": 3.0}
    assert hits[0].legs["retrieval"]["rank"] == 2
    assert [row["rerank_score"] for row in ctx.details["scores"]] == [0.0, 3.0, 0.0, 0.0]
    assert ctx.details["model"].endswith("model.onnx")


def test_cross_encoder_sigmoid_and_truncation(model_dir: Path) -> None:
    hits, _ = _run(model_dir, keep=1)
    assert hits[0].score == pytest.approx(1 / (1 + np.exp(-3.0)))
    # max_length 10 = 3 special tokens + 2 query words + the passage's first 5: "you receive 10 recovery codes"
    hits, _ = _run(model_dir, query="recovery codes", keep=1, activation="none", max_length=10)
    assert hits[0].score == pytest.approx(2.0)


def test_cross_encoder_without_token_types(tmp_path: Path) -> None:
    folder = build_model_folder(tmp_path / "no-types", token_types=False)
    hits, _ = _run(folder, query="recovery codes", keep=1, activation="none")
    # without token types the query's own two relevant words count too
    assert hits[0].id == "SEC-2" and hits[0].score == pytest.approx(5.0)


def test_cross_encoder_explains_how_to_get_a_model(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(NodeError, match=r"does not exist.*optimum-cli export onnx.*ms-marco-MiniLM-L-6-v2"):
        _run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README.md").write_text("x")
    with pytest.raises(NodeError, match=r"no model.onnx in .*holds: README.md.*tokenizer.json"):
        _run(tmp_path / "empty")
    no_tok = tmp_path / "no-tok"
    no_tok.mkdir()
    (no_tok / "model.onnx").write_bytes((model_dir / "model.onnx").read_bytes())
    with pytest.raises(NodeError, match=r"has no tokenizer\.json"):
        _run(no_tok)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    (broken / "tokenizer.json").write_bytes((model_dir / "tokenizer.json").read_bytes())
    with pytest.raises(NodeError, match="cannot load"):
        _run(broken)
    problems = CrossEncoderReranker.config_problems(CrossEncoderConfig())
    assert problems and "model_dir" in problems[0][1]
