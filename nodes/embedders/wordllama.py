"""A screening embedder: WordLlama's static token embeddings (weights and tokenizer inside its wheel).

WordLlama averages per-token vectors taken from a large language model's embedding table: no network,
no PyTorch, hundreds of rows in a tenth of a second. It is much weaker than MiniLM on questions worded
differently from the text (hit@5 0.31 vs 0.55 on the VWO user-worded set), so it is for wide parameter
sweeps that rank settings cheaply, never for a final number: its ``model_id`` says ``screening`` and the
node's summary says so wherever its results appear.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.errors import NodeError
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.embedders.cache import CachingEmbedder, open_cache
from flowbuilder.nodes.io import EmbedderOut, NoInputs
from flowbuilder.registry import register_node

SCREENING_LABEL = "screening-grade (WordLlama static embeddings; rank settings with it, report with a real embedder)"
_MODELS: dict[int, Any] = {}
_LOCK = threading.Lock()


def load_wordllama(dim: int) -> Any:
    """The process-wide WordLlama model truncated to ``dim``, loaded only from the files in its wheel."""
    with _LOCK:
        model = _MODELS.get(dim)
        if model is None:
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError:
                raise NodeError("embedder.wordllama needs the wordllama package: `pip install wordllama`.") from None
            try:
                # the wheel ships the l2_supercat 256-d weights; disable_download makes a missing file an error
                # instead of a silent fetch from Hugging Face
                model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True, trunc_dim=dim)
            except FileNotFoundError as exc:
                raise NodeError(
                    f"WordLlama's bundled weights are missing ({exc}); reinstall with "
                    "`pip install --force-reinstall wordllama`."
                ) from None
            _MODELS[dim] = model
        return model


class WordLlamaEmbedder(CachingEmbedder):
    """The Embedder service of ``embedder.wordllama`` (L2-normalised vectors)."""

    max_tokens = None  # static embeddings average every token; nothing is cut off
    grade = "screening"
    """Read by reports that want to label results from a screening embedder (``getattr(e, "grade", "")``)."""

    def __init__(self, *, dim: int = 256, batch_size: int = 256, cache_dir: Path | None = None) -> None:
        super().__init__(open_cache(cache_dir) if cache_dir is not None else None)
        self.model_id = f"wordllama/l2_supercat-{dim}-screening"
        self.batch_size = batch_size
        self._dim = dim
        self._dimension = dim

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        vectors = load_wordllama(self._dim).embed(texts, norm=True, return_np=True)
        return np.asarray(vectors, dtype=np.float32)


class WordLlamaEmbedderConfig(BaseModel):
    """Settings of ``embedder.wordllama``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    dim: Literal[64, 128, 256] = Field(256, description="Vector size (Matryoshka truncation of the 256-d weights).")
    batch_size: int = Field(256, ge=1, le=4096, description="Texts per model call.")
    cache: bool = Field(
        True, description="Keep vectors in <data dir>/embeddings.sqlite so re-runs embed nothing twice."
    )


@register_node
class WordLlamaEmbedderNode(Node[WordLlamaEmbedderConfig, NoInputs, EmbedderOut]):
    """Screening-grade WordLlama embedder (bundled weights, very fast, weaker): for sweeps, not final numbers."""

    type_name = "embedder.wordllama"

    capabilities = frozenset({Capability.LOCAL_ONLY, Capability.SCREENING})
    display_name = "WordLlama Embeddings"
    aliases = ("Embeddings", "embedding model", "fast")
    category = "Embedders"
    Config = WordLlamaEmbedderConfig

    def run(self, inputs: NoInputs, ctx: RunContext) -> EmbedderOut:
        embedder = WordLlamaEmbedder(
            dim=self.config.dim,
            batch_size=self.config.batch_size,
            cache_dir=ctx.data_dir if self.config.cache else None,
        )
        load_wordllama(self.config.dim)  # load now so a broken install fails in this node
        ctx.details["model_id"] = embedder.model_id
        ctx.details["dimension"] = embedder.dimension
        ctx.details["grade"] = SCREENING_LABEL
        ctx.log(f"embedder.wordllama is {SCREENING_LABEL}")
        return {"embedder": embedder}

    def summarize(self, outputs: EmbedderOut) -> str:
        return f"WordLlama {self.config.dim}-d: screening-grade, not for final numbers"
