"""``reranker.cross_encoder``: a local cross-encoder (ONNX) from a folder the user points at.

Nothing is downloaded: the folder must hold an ONNX model (``model.onnx``, or ``onnx/model.onnx`` as
``optimum`` and Hugging Face exports lay it out) and the model's ``tokenizer.json``. The model reads
the question and a passage as one pair (``[CLS] question [SEP] passage [SEP]``) and outputs a logit
per pair; with one logit per pair that is the relevance, with two the second class is "relevant".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from flowbuilder.errors import NodeError
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.node import RunContext
from flowbuilder.nodes.rerankers.common import (
    RerankConfig,
    RerankedOut,
    RerankerNode,
    RerankIn,
    question,
    reorder,
    score_table,
)
from flowbuilder.registry import register_node
from flowbuilder.trust.pathguard import PathKind
from flowbuilder.trust.places import expand_user

MODEL_FILES = ("model.onnx", "onnx/model.onnx", "model_quantized.onnx", "onnx/model_quantized.onnx")
HOW_TO_GET_ONE = (
    "Get one on a machine with internet: `pip install optimum[onnxruntime]` then "
    "`optimum-cli export onnx --model cross-encoder/ms-marco-MiniLM-L-6-v2 --task text-classification ms-marco-onnx/`, "
    "and copy that folder here (it needs model.onnx and tokenizer.json); set 'model_dir' to it."
)


class CrossEncoderConfig(RerankConfig):
    """Settings of ``reranker.cross_encoder``: the saved config, and the inspector's form."""

    model_dir: str = Field(
        "",
        description="Folder with the cross-encoder's model.onnx (or onnx/model.onnx) and tokenizer.json.",
    )
    max_length: int = Field(512, ge=8, le=8192, description="Longest question+passage pair in tokens (truncated).")
    batch_size: int = Field(16, ge=1, le=512, description="Pairs scored per model call.")
    activation: Literal["sigmoid", "none"] = Field("sigmoid", description="sigmoid: scores 0-1; none: the raw logits.")


class CrossEncoder:
    """An ONNX cross-encoder session and its tokenizer; ``score(query, passages)`` -> one float each."""

    def __init__(self, folder: Path, max_length: int) -> None:
        model_path = find_model_file(folder)
        tokenizer_path = folder / "tokenizer.json"
        if not tokenizer_path.is_file():
            raise NodeError(f"{folder} has no tokenizer.json. {HOW_TO_GET_ONE}")
        import onnxruntime
        from tokenizers import Tokenizer

        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:  # tokenizers raises a bare Exception for a malformed file
            raise NodeError(f"cannot read {tokenizer_path}: {exc}. {HOW_TO_GET_ONE}") from None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        try:
            self.session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph classes
            raise NodeError(f"cannot load {model_path}: {exc}. {HOW_TO_GET_ONE}") from None
        self.input_names = [i.name for i in self.session.get_inputs()]
        missing = {"input_ids", "attention_mask"} - set(self.input_names)
        if missing:
            raise NodeError(
                f"{model_path} does not take {', '.join(sorted(missing))} "
                f"(its inputs: {', '.join(self.input_names)}); it is not a text cross-encoder. {HOW_TO_GET_ONE}"
            )
        self.tokenizer.enable_truncation(max_length)
        pad_id = self.tokenizer.token_to_id("[PAD]")
        self.tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0)
        self.model_path = model_path
        self._lock = threading.Lock()  # one tokenizer object with padding state: score one batch at a time

    def logits(self, query: str, passages: list[str], batch_size: int) -> list[float]:
        import numpy as np

        scores: list[float] = []
        for start in range(0, len(passages), batch_size):
            batch = passages[start : start + batch_size]
            with self._lock:
                encodings = self.tokenizer.encode_batch([(query, passage) for passage in batch])
            feed = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            }
            if "token_type_ids" in self.input_names:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            output = np.asarray(self.session.run(None, feed)[0], dtype=np.float64)
            if output.ndim == 2 and output.shape[1] == 2:
                column = output[:, 1] - output[:, 0]  # two classes: the "relevant" margin is its logit
            elif output.ndim == 2 and output.shape[1] == 1:
                column = output[:, 0]
            elif output.ndim == 1:
                column = output
            else:
                raise NodeError(
                    f"{self.model_path} outputs shape {list(output.shape)}; "
                    "a cross-encoder gives one (or two) logits per pair."
                )
            scores.extend(float(v) for v in column)
        return scores


def find_model_file(folder: Path) -> Path:
    if not folder.is_dir():
        raise NodeError(f"model folder {folder} does not exist. {HOW_TO_GET_ONE}")
    for name in MODEL_FILES:
        if (folder / name).is_file():
            return folder / name
    present = sorted(p.name for p in folder.iterdir())[:12]
    raise NodeError(f"no model.onnx in {folder} (it holds: {', '.join(present) or 'nothing'}). {HOW_TO_GET_ONE}")


_LOADED: dict[tuple[str, float, int], CrossEncoder] = {}
_LOADED_LOCK = threading.Lock()


def load_cross_encoder(folder: Path, max_length: int) -> CrossEncoder:
    """A cached model per folder, model mtime and max_length (loading takes longer than scoring)."""
    model_path = find_model_file(folder)
    key = (str(model_path.resolve()), model_path.stat().st_mtime, max_length)
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = CrossEncoder(folder, max_length)
        return _LOADED[key]


@register_node
class CrossEncoderReranker(RerankerNode[CrossEncoderConfig]):
    """Rerank hits with a local cross-encoder (ONNX model folder; runs offline)."""

    type_name = "reranker.cross_encoder"
    mappings: ClassVar[Mappings] = {
        "flowise": (
            Adapter(
                "reranker.cross_encoder",
                "voyageAIRerankRetriever",
                also=("JinaRerankRetriever", "AzureRerankRetriever"),
                inputs={"hits": "baseRetriever", "query": "query"},
                outputs={"hits": "retriever"},
                ignore=("model", "topK", "maxChunksPerDoc"),
                export=False,  # our local cross-encoder is no cloud reranker: Flowise has no node for it
                note="a cloud reranker: reranked here by the local cross-encoder (no key)",
            ),
        ),
    }
    display_name = "Cross-encoder Reranker"
    aliases = ("rerank", "reranker", "cross encoder")
    Config = CrossEncoderConfig

    @classmethod
    def config_problems(cls, config: CrossEncoderConfig) -> list[tuple[str | None, str]]:
        problems = super().config_problems(config)
        if not config.model_dir.strip():
            problems.append((None, f"set 'model_dir' to a cross-encoder folder. {HOW_TO_GET_ONE}"))
        return problems

    @classmethod
    def config_paths(cls, config: CrossEncoderConfig) -> list[tuple[str, str, PathKind]]:
        return [("model_dir", config.model_dir, "file")] if config.model_dir.strip() else []

    @classmethod
    def fingerprint(
        cls, config: CrossEncoderConfig, base_dir: Path | None, run_input: str | None, inputs: Mapping[str, Any]
    ) -> str | None:
        if not config.model_dir:
            return None
        try:
            folder = expand_user(config.model_dir)
            if not folder.is_absolute() and base_dir is not None:
                folder = base_dir / folder
            model = find_model_file(folder)
        except NodeError:
            return None
        stat = model.stat()
        return f"{model}:{stat.st_size}:{stat.st_mtime_ns}"

    def run(self, inputs: RerankIn, ctx: RunContext) -> RerankedOut:
        config = self.config
        hits, query = inputs["hits"], question(inputs)
        if not config.model_dir.strip():
            raise NodeError(f"'model_dir' is empty. {HOW_TO_GET_ONE}")
        folder = ctx.resolve_path(config.model_dir, what="model_dir")
        ctx.check_path(find_model_file(folder), what="model file")
        encoder = load_cross_encoder(folder, config.max_length)
        candidates = hits[: config.candidates]
        started = time.perf_counter()
        logits = encoder.logits(query, [h.document.text for h in candidates], config.batch_size)
        if config.activation == "sigmoid":
            import math

            scores = [1.0 / (1.0 + math.exp(-max(min(v, 60.0), -60.0))) for v in logits]
        else:
            scores = logits
        ctx.details["query"] = query
        ctx.details["model"] = str(encoder.model_path)
        ctx.details["seconds"] = round(time.perf_counter() - started, 4)
        ctx.details["scores"] = score_table(candidates, scores)
        return {"hits": reorder(candidates, scores, config.keep)}
