"""Talk to a flow that has a ``chat.input`` node: each message runs the flow with the text as input
(and this tab's session id, so memory nodes keep the conversation); tokens stream in live and the
chunks retrieved for the answer are listed under it."""

from __future__ import annotations

from typing import Any

import networkx as nx
from nicegui import ui

from flowbuilder.capabilities import Capability
from flowbuilder.data import Hit
from flowbuilder.executor import NodeResult, RunResult
from flowbuilder.ports import PortType
from flowbuilder.ui.accounts import Account, accounts, bind_button, issue_text
from flowbuilder.ui.outputs import hits_view
from flowbuilder.ui.run_panel import RunController
from flowbuilder.ui.session import EditorSession
from flowbuilder.ui.widgets import failure_text, message_box, notify, ui_words

NO_MODEL = "No model is connected; here is what the flow retrieved"
OLLAMA_STEPS = (
    "1. Install Ollama from https://ollama.com (one download, runs on CPU).\n"
    "2. Start it in a terminal: ollama serve\n"
    "3. Fetch the model the flow uses (llama3.2 by default): ollama pull llama3.2\n"
    "4. Send your message again. The chat model node's base URL says where it looks "
    "(http://127.0.0.1:11434 by default)."
)


def chat_output_of(session: EditorSession, result: RunResult) -> str | None:
    """The message of the flow's answer node (``chat.output``: it has ``Capability.ANSWERS``), if it ran."""
    flow = session.state.flow
    for node_id in reversed(result.order):
        spec = flow.find_node(node_id)
        res = result.results.get(node_id)
        if spec is not None and _has(session, node_id, Capability.ANSWERS) and res is not None and res.succeeded:
            value = res.outputs.get("message")
            if isinstance(value, str):
                return value
    return None


def answer_of(session: EditorSession, result: RunResult) -> str | None:
    """The flow's answer: a ``chat.output`` node's message, else the last text output of the run."""
    found = chat_output_of(session, result)
    if found is not None:
        return found
    for node_id in reversed(result.order):
        res = result.results.get(node_id)
        if res is not None and res.succeeded:
            for value in res.outputs.values():
                if isinstance(value, str) and value:
                    return value
    return None


def is_model_node(session: EditorSession, node_id: str) -> bool:
    """A chat model, or a node that needs one to answer (an agent): without a model it cannot answer."""
    inputs, outputs = session.state.ports(node_id)
    return any(p.type is PortType.CHAT_MODEL for p in (*inputs, *outputs))


def _has(session: EditorSession, node_id: str, capability: Capability) -> bool:
    cls = session.state.node_class(node_id)
    return cls is not None and capability in cls.capabilities


def _takes_message(session: EditorSession, node_id: str) -> bool:
    """A chat input: fed the chat's message as the run's text input."""
    cls = session.state.node_class(node_id)
    return cls is not None and cls.run_input == "text"


def _provider(session: EditorSession, node_id: str) -> str | None:
    cls = session.state.node_class(node_id)
    return cls.credential_slots[0].provider if cls is not None and cls.credential_slots else None


def model_nodes(session: EditorSession) -> list[str]:
    return [n.id for n in session.state.flow.nodes if not n.disabled and is_model_node(session, n.id)]


def retrieval_target(session: EditorSession, blocked: set[str]) -> str | None:
    """The furthest-downstream node with a hits output that neither is nor depends on a blocked node:
    what the chat can still run when the model cannot."""
    flow = session.state.flow
    graph = nx.DiGraph()
    graph.add_nodes_from(flow.node_ids())
    graph.add_edges_from((e.source, e.target) for e in flow.edges)
    best: tuple[int, str] | None = None
    for spec in flow.nodes:
        _, outputs = session.state.spec_ports(spec)
        if spec.disabled or not any(p.type is PortType.HITS for p in outputs):
            continue
        upstream = nx.ancestors(graph, spec.id) | {spec.id}
        if upstream & blocked:
            continue
        # a hits port with no query feeding it returns nothing: it must depend on the chat input
        if not any(_takes_message(session, a) for a in upstream):
            continue
        candidate = (len(upstream), spec.id)
        best = candidate if best is None or candidate > best else best
    return best[1] if best else None


def hits_of(result: RunResult) -> list[tuple[str, list[Hit]]]:
    found = []
    for node_id in result.order:
        res = result.results.get(node_id)
        if res is None or not res.succeeded:
            continue
        for value in res.outputs.values():
            if isinstance(value, list) and value and all(isinstance(v, Hit) for v in value):
                found.append((node_id, value))
    return found


def fallbacks(result: RunResult) -> list[NodeResult]:
    """Nodes that answered by a fallback path: an LLM replaced by extractive quotes, an agent that searched once."""
    return [
        r
        for r in result.warnings()
        if r.details.get("fallback") or str(r.details.get("path", "tools")).startswith("retrieve-then-answer")
    ]


def skipped_files(result: RunResult) -> list[NodeResult]:
    """Loaders of this run that skipped files: a reply from such a flow answers from part of the folder."""
    return [r for r in result.results.values() if r.details.get("skipped") and isinstance(r.details.get("files"), int)]


CHAT_CSS = """
.fb-chat-tab { height: 100%; flex-wrap: nowrap; }
.fb-chat-told { line-height: 1.3; } .fb-chat-told-warning { color: #92400e; } .fb-chat-told-info { color: #1e3a8a; }
.fb-chat-messages { flex: 1 1 0; min-height: 0; overflow-y: auto; overflow-x: hidden; padding: 0 4px 8px 0; }
.fb-chat-compose { flex: none; background: #fff; padding: 6px 0 0; border-top: 1px solid #e2e8f0; }
.body--dark .fb-chat-compose { background: #121212; border-top-color: #334155; }
"""
CHAT_FOLLOW_JS = """<script>
(function () {
  // The chat's messages follow the newest one unless the user scrolled up to read (then they stay put until the
  // user sends a message or scrolls back down). The box is drawn anew whenever the Chat tab is shown.
  let pinned = true, box = null;
  const atEnd = (b) => b.scrollHeight - b.scrollTop - b.clientHeight < 40;
  const follow = () => {
    if (!box || !pinned) return;
    // to the end, but never past the newest question: a reply taller than the box is read from its start
    const sent = [...box.querySelectorAll('.q-message-sent')].pop();
    const top = box.getBoundingClientRect().top;
    const question = sent ? sent.getBoundingClientRect().top - top + box.scrollTop - 8 : Infinity;
    box.scrollTop = Math.min(box.scrollHeight - box.clientHeight, question);
  };
  const later = () => requestAnimationFrame(follow);
  const grows = new MutationObserver(later), resized = new ResizeObserver(later);
  setInterval(() => {
    const now = document.querySelector('.fb-chat-messages');
    if (now === box) return;
    grows.disconnect(); resized.disconnect();
    box = now;
    if (!box) return;
    box.addEventListener('scroll', () => { pinned = atEnd(box); });
    grows.observe(box, { childList: true, subtree: true, characterData: true, attributes: true });
    resized.observe(box);
    later();
  }, 250);
  window.fbChatFollow = () => { pinned = true; later(); };
})();
</script>"""


class ChatPanel:
    """The chat tab: each message runs the flow with it as the chat input."""

    def __init__(self, session: EditorSession, controller: RunController) -> None:
        self.session = session
        self.controller = controller
        self._live: Any = None
        self._streamed = ""
        self._told_no_model = False
        self._told: set[str] = set()  # notices given in full once (a fallback path, keyword search standing in)
        self.bound_listeners: list[Any] = []
        self.hint = ui.label("").classes("text-xs text-grey-7")
        # The messages scroll on their own, above the compose box (which so never lies over a message), and
        # follow the newest unless the user scrolled up to read (CHAT_FOLLOW_JS).
        self.messages = ui.column().classes("w-full gap-2 fb-chat-messages")
        with ui.row().classes("w-full no-wrap items-center fb-chat-compose"):
            self.input = (
                ui.input(placeholder="Ask the flow…").props("dense outlined").classes("grow").mark("chat-input")
            )
            self.input.on("keydown.enter", self.send)
            ui.button(icon="send", on_click=self.send).props("dense flat").mark("chat-send")
        controller.token_listeners.append(self._on_tokens)
        controller.stage_listeners.append(self._on_stage)
        self.refresh_hint()

    def refresh_hint(self) -> None:
        has_chat = any(_takes_message(self.session, n.id) for n in self.session.state.flow.nodes)
        self.hint.set_text(
            "Each message runs the flow with it as the chat input."
            if has_chat
            else "This flow has no chat.input node: add one to talk to it."
        )

    def _on_stage(self, stage: str) -> None:
        """While the reply is not streaming yet, say what the flow is doing (a cold start takes minutes)."""
        if self._live is not None and not self._streamed:
            self._live.set_text(f"… {stage}")

    def _on_tokens(self, text: str) -> None:
        if self._live is not None:
            self._streamed += text
            self._live.set_text(self._streamed)

    def _scroll_to_end(self) -> None:
        """Follow the conversation again (the user just sent a message): the newest message comes into view."""
        ui.run_javascript("window.fbChatFollow && window.fbChatFollow()")

    async def send(self) -> None:
        text = str(self.input.value or "").strip()
        if not text:
            return
        if not any(_takes_message(self.session, n.id) for n in self.session.state.flow.nodes):
            notify("This flow has no chat.input node.", type="warning")
            return
        self.input.value = ""
        with self.messages:
            ui.chat_message(text, name="You", sent=True).classes("w-full")
            with ui.chat_message(name="Flow").props("bg-color=grey-2").classes("w-full fb-chat-reply") as reply:
                self._live = ui.label("…").classes("fb-chat-answer").style("white-space: pre-wrap")
        self._scroll_to_end()
        self._streamed = ""
        # A model that cannot be bound (no key) blocks the whole run: run what retrieves instead.
        issues = self.session.state.issues(self.session.resolver, self.session.base_dir)
        to: str | None = None
        if issues and {i.node_id for i in issues} <= set(model_nodes(self.session)):
            to = retrieval_target(self.session, {i.node_id for i in issues if i.node_id})
        if issues and to is None:
            self._live.delete()
            self._live = None
            self._not_run(reply, issues)
            self._scroll_to_end()
            return
        result = await self.controller.start(text=text, to=to)
        live, self._live = self._live, None
        if result is None:
            live.set_text("(not run; see the notification)")
            return
        with reply:
            self._reply(result, live, to)
        self._scroll_to_end()

    def _reply(self, result: RunResult, live: ui.label, to: str | None) -> None:
        """The flow's reply: its answer (or what it retrieved, or why there is none), how it was found, and the
        chunks behind it."""
        if self.controller.stood_in:  # with the answer: it did not come from the flow's own search
            self._tell(
                "stand-in",
                "info",
                f"Answered by {self.controller.stood_in}",
                "The store is still being filled in the background, so the chunks were found by keyword search "
                "(BM25) over the same rows; once every row is embedded, the flow's own search answers.",
                "fb-chat-stand-in",
            )
        answer = chat_output_of(self.session, result)
        failed = result.failed()
        models = set(model_nodes(self.session))
        retrieved_only = to is not None or (
            not answer and bool(failed) and all(f.node_id in models for f in failed) and bool(hits_of(result))
        )
        if retrieved_only:
            live.delete()
            self._no_model(result, failure_text(failed[-1].node_id, failed[-1].error or "") if failed else None, to)
            return
        if answer:
            live.set_text(answer)
            for warned in fallbacks(result):  # which path answered, when it was not the model
                self._fallback_box(warned)
        elif failed:
            # No final answer: say which card failed rather than showing an intermediate text (the prompt).
            live.delete()  # the warning replaces the (empty) answer line
            message_box(
                "warning",
                f"No answer: “{self.controller.name(failed[-1].node_id)}” failed",
                failure_text(failed[-1].node_id, failed[-1].error or ""),
                "fb-chat-warning",
            )
            if failed[-1].node_id in models:
                self._help_buttons()
        else:
            live.set_text(answer_of(self.session, result) or self._streamed or "(no answer)")
        for loader in skipped_files(result):  # said on every reply: the answer comes from part of the folder
            read, skipped = loader.details.get("files", 0), loader.details["skipped"]
            names = ", ".join(item["file"] for item in skipped[:3]) + (", …" if len(skipped) > 3 else "")
            title = f"“{self.controller.name(loader.node_id)}” read {read} files and skipped {len(skipped)}"
            message_box("warning", title, f"Not searched: {names}", "fb-chat-skipped")
        for node_id, hits in hits_of(result):
            title = f"{len(hits)} retrieved chunks ({self.controller.name(node_id)})"
            with (
                ui.expansion(title, icon="manage_search")
                .classes("w-full fb-chat-hits")
                .props("dense header-class=text-caption")
            ):
                hits_view(hits)  # each stage's rank after fusion or a reranker

    def _fallback_box(self, warned: NodeResult) -> None:
        """Which card answered by a fallback path, why, and the way to the real path (a button, not a command)."""
        title = self.controller.name(warned.node_id)
        told = f"fallback:{warned.node_id}" in self._told
        self._tell(
            f"fallback:{warned.node_id}",
            "warning",
            f"“{title}” answered by a fallback path",
            ui_words(warned.warning),
            "fb-chat-fallback",
        )
        if not told:
            self._help_buttons()

    def _tell(self, key: str, kind: str, title: str, text: str, classes: str) -> None:
        """A notice in full the first time, then its title alone (each reply still says it, the chat stays short)."""
        if key in self._told:
            icon = "⚠" if kind == "warning" else "ⓘ"
            ui.label(f"{icon} {title}").classes(f"text-caption fb-chat-told fb-chat-told-{kind} {classes}")
            return
        self._told.add(key)
        message_box(kind, title, text, classes)

    def _model_accounts(self) -> list[Account]:
        models = set(model_nodes(self.session))
        return [a for a in accounts(self.session) if not a.bound and any(n in models for n, _ in a.users)]

    def _help_buttons(self) -> None:
        with ui.row().classes("gap-1 fb-chat-no-model-actions"):
            for account in self._model_accounts():
                bind_button(self.session, account, self.on_bound, "chat")
            if any(_provider(self.session, n) == "ollama" for n in model_nodes(self.session)):
                ui.button("How to start Ollama", icon="help_outline", on_click=self.ollama_help).props(
                    "dense flat no-caps size=sm color=primary"
                ).classes("fb-ollama-help").mark("ollama-help")

    def _no_model(self, result: RunResult, error: str | None, to: str | None) -> None:
        """The retrieved chunks as the reply; the reason and the ways out are told once per session."""
        hits = hits_of(result)
        if not self._told_no_model:
            self._told_no_model = True
            why = (
                "The chat model has no key bound, so only the retrieval part of the flow ran."
                if to is not None
                else "The chat model could not be reached. " + (error or "").split(". ")[0] + "."
            )
            message_box("info", NO_MODEL, why, "fb-chat-no-model")
        else:
            ui.label(NO_MODEL + ":").classes("text-caption text-grey-8 fb-chat-no-model-again")
        self._help_buttons()
        if not hits:
            ui.label("The flow retrieved nothing for this message.").classes("text-sm")
        for node_id, node_hits in hits:
            ui.label(f"{len(node_hits)} retrieved chunks ({self.controller.name(node_id)})").classes(
                "text-caption text-weight-medium"
            )
            hits_view(node_hits)

    def _not_run(self, reply: ui.element, issues: list[Any]) -> None:
        with reply:
            message_box(
                "warning",
                f"Not run: the flow has {len(issues)} problem(s)",
                "\n".join(issue_text(self.session, i) for i in issues[:6]),
                "fb-chat-warning",
            )
            missing = [a for a in accounts(self.session) if not a.bound]
            with ui.row().classes("gap-1"):
                for account in missing:
                    bind_button(self.session, account, self.on_bound, "chat")

    def on_bound(self) -> None:
        for listener in self.bound_listeners:
            listener()

    def ollama_help(self) -> None:
        with ui.dialog() as dialog, ui.card().classes("w-[32rem] fb-ollama-dialog"):
            ui.label("Start Ollama for the chat model").classes("text-h6")
            ui.label(OLLAMA_STEPS).classes("text-sm").style("white-space: pre-wrap")
            ui.label(
                "Or swap the model node for an OpenAI or Groq one and bind its key (the Bind a key button)."
            ).classes("text-xs text-grey-7")
            ui.button("Close", on_click=dialog.close)
        dialog.open()
