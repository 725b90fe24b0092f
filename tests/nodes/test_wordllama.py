"""embedder.wordllama: the bundled weights load offline, vectors are normalised and meaningful, the
cache works, and the node labels itself as screening-grade; no PyTorch is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from flowbuilder.node import RunContext
from flowbuilder.nodes.embedders.wordllama import WordLlamaEmbedder, WordLlamaEmbedderConfig, WordLlamaEmbedderNode
from flowbuilder.services import Embedder


def test_vectors_are_normalised_and_rank_related_text_higher() -> None:
    embedder = WordLlamaEmbedder()
    assert isinstance(embedder, Embedder)
    docs = embedder.embed_documents_array(
        ["Invoices are sent on the first day of every month.", "Guest links expire after thirty days."]
    )
    assert docs.shape == (2, 256)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    query = np.asarray(embedder.embed_query("When do I receive my bill?"))
    assert float(docs[0] @ query) > float(docs[1] @ query)


def test_node_is_labelled_screening_and_caches(tmp_path: Path) -> None:
    node = WordLlamaEmbedderNode(WordLlamaEmbedderConfig(dim=128))
    ctx = RunContext("screen", data_dir=tmp_path)
    embedder = node.run({}, ctx)["embedder"]
    assert "screening" in embedder.model_id and embedder.dimension == 128 and embedder.grade == "screening"
    assert "screening" in ctx.details["grade"] and "screening" in node.summarize({"embedder": embedder})
    assert "screening" in (WordLlamaEmbedderNode.__doc__ or "").lower()
    embedder.embed_documents(["a", "b"])
    again = node.run({}, RunContext("screen", data_dir=tmp_path))["embedder"]
    assert len(again.embed_documents(["a", "b"])[0]) == 128
    assert again.model_texts == 0  # both came from the on-disk cache


def test_loads_without_network_and_without_torch() -> None:
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = refuse\n"
        "from flowbuilder.nodes.embedders.wordllama import load_wordllama\n"
        "load_wordllama(256).embed(['hello'])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr[-500:]
