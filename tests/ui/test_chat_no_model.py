"""Chat without a model: the reply is what the flow retrieved, the reason is told once, and the ways out
(bind a key, start Ollama) are buttons. Real local embedder + embedded Chroma on a 3-row CSV; the Ollama
model points at a closed loopback port, the OpenAI one has no key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from nicegui import ui
from nicegui.testing import Screen, User

from flowbuilder.evaluation.answers import citations
from flowbuilder.flow import NodeSpec
from flowbuilder.nodes.extractive import QUOTED
from flowbuilder.ui.chat_panel import NO_MODEL
from tests.ports import reserve_port

from .conftest import chat_flow
from .test_browser import css, shot, wait_until
from .test_browser import open_builder as open_browser
from .test_user_journeys import open_builder, wait_for


def rag_flow(tmp_path: Path, model: NodeSpec) -> Path:
    tail = [
        NodeSpec(id="prompt", type="prompt.template", config={"template": "{context}\n\nQ: {question}"}),
        model,
        NodeSpec(id="answer", type="chat.output"),
    ]
    tail_edges = [
        ("context", "text", "prompt", "context"),
        ("question", "message", "prompt", "question"),
        ("prompt", "prompt", "llm", "prompt"),
        ("llm", "answer", "answer", "message"),
    ]
    return chat_flow(tmp_path, "ui-no-model", tail, tail_edges, "RAG chat")


def with_class(user: User, cls: str) -> list[ui.element]:
    return [el for el in user.find(kind=ui.element).elements if cls in el.classes]


async def test_chat_without_ollama_replies_with_the_retrieved_chunks_and_says_so_once(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    llm = NodeSpec(id="llm", type="llm.ollama", config={"base_url": f"http://127.0.0.1:{reserve_port()}"})
    page = await open_builder(user, builder, flow_path=rag_flow(tmp_path, llm))
    for turn, question in enumerate(("two dots in the email", "empty password"), start=1):
        user.find(marker="chat-input").type(question)
        user.find(marker="chat-send").click()
        await wait_for(lambda: "llm" in page.session.results and not page.runner.running, timeout=120)
        await user.should_see("2 retrieved chunks (store)", retries=40)
        assert len(with_class(user, "fb-hit")) == 2 * turn  # the chunks are the reply, shown open
        page.session.results.clear()
    # told once, with the cause in one sentence; the second turn only says it in a short line
    boxes = with_class(user, "fb-chat-no-model")
    assert len(boxes) == 1
    await user.should_see(NO_MODEL)
    assert len(with_class(user, "fb-chat-no-model-again")) == 1
    assert not with_class(user, "fb-chat-warning")  # no repeated error block
    # the way out: how to start Ollama (no key to bind for a local model)
    assert len(with_class(user, "fb-ollama-help")) == 2 and not with_class(user, "fb-bind-key")
    user.find(marker="ollama-help").click()
    await user.should_see("ollama serve")


async def test_chat_without_ollama_answers_extractively_when_the_llm_allows_it(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    """The demo flows' LLM has ``when_unreachable: extractive``: the chat gets quoted chunks with citations, and
    a warning under the answer says which path answered."""
    llm = NodeSpec(
        id="llm",
        type="llm.ollama",
        config={"base_url": f"http://127.0.0.1:{reserve_port()}", "when_unreachable": "extractive"},
    )
    tail = [NodeSpec(id="prompt", type="prompt.template"), llm, NodeSpec(id="answer", type="chat.output")]
    edges = [
        ("store", "hits", "prompt", "context"),
        ("question", "message", "prompt", "question"),
        ("prompt", "prompt", "llm", "prompt"),
        ("llm", "answer", "answer", "message"),
    ]
    page = await open_builder(user, builder, flow_path=chat_flow(tmp_path, "ui-extractive", tail, edges, "RAG chat"))
    user.find(marker="chat-input").type("What happens with two dots in the email?")
    user.find(marker="chat-send").click()
    await wait_for(lambda: "llm" in page.session.results and not page.runner.running, timeout=120)
    await user.should_see("answered by a fallback path", retries=40)
    assert page.session.results["llm"].status == "warning"
    [answer] = with_class(user, "fb-chat-answer")
    text = str(answer.text)
    assert "LOGIN_002" in text and citations(text)  # names and cites the record it quotes
    assert text.rstrip().endswith(QUOTED)  # and says it was found by quoting, not written by a model
    assert len(with_class(user, "fb-chat-fallback")) == 1
    assert not with_class(user, "fb-chat-no-model") and not with_class(user, "fb-chat-warning")


async def test_chat_with_an_unbound_model_key_runs_the_retrieval_and_offers_to_bind(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    llm = NodeSpec(id="llm", type="llm.openai")
    page = await open_builder(user, builder, flow_path=rag_flow(tmp_path, llm))
    user.find(marker="chat-input").type("two dots in the email")
    user.find(marker="chat-send").click()
    await wait_for(lambda: "store" in page.session.results and not page.runner.running, timeout=120)
    await user.should_see(NO_MODEL, retries=40)
    await user.should_see("only the retrieval part of the flow ran")
    assert "llm" not in page.session.results  # the model was never called
    await user.should_see("LOGIN_002")
    buttons = with_class(user, "fb-bind-key")
    assert buttons, "a Bind a key button in the chat"
    # the chat's button opens the account dialog; binding there binds the model node and clears its issue
    user.find(marker="chat-bind-key").click()
    await user.should_see("Bind a key: OpenAI")
    user.find(marker="account-secret").type("sk-test-chat")
    user.find(marker="account-bind").click()
    assert page.session.resolver.explicit["openai/default"] == "sk-test-chat"  # bound to OpenAI's account only
    assert not [i for i in page.state.issues(page.session.resolver) if i.code == "missing-credential"]
    assert "sk-test-chat" not in page.state.flow.model_dump_json()


def chat_shows(screen: Screen, *texts: str) -> str:
    """The chat's text once it shows every one of ``texts`` (else ""): the reply is drawn in parts."""
    text = str(screen.selenium.execute_script("return document.querySelector('.fb-chat-messages').innerText"))
    return text if all(t in text for t in texts) else ""


@pytest.mark.browser
def test_chat_panel_without_a_model_in_chromium(screen: Screen, builder: Callable[..., None], tmp_path: Path) -> None:
    """Look at it: the chat tab after a message to a flow whose Ollama is not running."""
    llm = NodeSpec(id="llm", type="llm.ollama", config={"base_url": f"http://127.0.0.1:{reserve_port()}"})
    open_browser(screen, builder, flow_path=rag_flow(tmp_path, llm))
    next(t for t in css(screen, ".fb-side .q-tab") if t.text.strip().lower() == "chat").click()
    box = wait_until(lambda: css(screen, ".fb-chat-compose input"))[0]  # type: ignore[index]
    box.send_keys("two dots in the email\n")
    wait_until(lambda: css(screen, ".fb-chat-no-model"), timeout=120)
    text = wait_until(lambda: chat_shows(screen, NO_MODEL, "LOGIN_002"), what="the no-model reply with its chunks")
    shot(screen, "chat-no-model")
    assert "--cred" not in text
    assert css(screen, ".fb-ollama-help")


@pytest.mark.browser
def test_chat_extractive_fallback_in_chromium(screen: Screen, builder: Callable[..., None], tmp_path: Path) -> None:
    """Look at it: the quoted answer and the warning that says no model wrote it."""
    llm = NodeSpec(
        id="llm",
        type="llm.ollama",
        config={"base_url": f"http://127.0.0.1:{reserve_port()}", "when_unreachable": "extractive"},
    )
    tail = [NodeSpec(id="prompt", type="prompt.template"), llm, NodeSpec(id="answer", type="chat.output")]
    edges = [
        ("store", "hits", "prompt", "context"),
        ("question", "message", "prompt", "question"),
        ("prompt", "prompt", "llm", "prompt"),
        ("llm", "answer", "answer", "message"),
    ]
    open_browser(screen, builder, flow_path=chat_flow(tmp_path, "ui-extractive-look", tail, edges, "RAG chat"))
    next(t for t in css(screen, ".fb-side .q-tab") if t.text.strip().lower() == "chat").click()
    box = wait_until(lambda: css(screen, ".fb-chat-compose input"))[0]  # type: ignore[index]
    box.send_keys("What happens with two dots in the email?\n")
    wait_until(lambda: css(screen, ".fb-chat-fallback"), timeout=120)
    wanted = ("LOGIN_002", "answered by a fallback path", "answered extractively")
    wait_until(lambda: chat_shows(screen, *wanted), what="the extractive reply and its notice")
    shot(screen, "chat-extractive-fallback")
    # it reads as an answer followed by quotes: a lead sentence, the quoted record, then how it was found
    answer = css(screen, ".fb-chat-answer")[0].text
    lead, *_ = answer.split("\n")
    assert lead.startswith('What happens with two dots in the email: "LOGIN_002,') and lead.endswith("[1].")
    assert "\n> [" in answer and answer.rstrip().endswith(QUOTED)
