"""Talk to a flow that has a ``chat.input`` node: each message runs the flow with the text as input
(and this tab's session id, so memory nodes keep the conversation); tokens stream in live and the
chunks retrieved for the answer are listed under it."""

from __future__ import annotations

from typing import Any

from nicegui import ui

from flowbuilder.data import Hit
from flowbuilder.executor import RunResult
from flowbuilder.ui.outputs import hits_view
from flowbuilder.ui.run_panel import RunController
from flowbuilder.ui.session import EditorSession
from flowbuilder.ui.widgets import failure_text, message_box


def chat_output_of(session: EditorSession, result: RunResult) -> str | None:
    """The message of the flow's ``chat.output`` node, if it ran."""
    flow = session.state.flow
    for node_id in reversed(result.order):
        spec = flow.find_node(node_id)
        res = result.results.get(node_id)
        if spec is not None and spec.type == "chat.output" and res is not None and res.succeeded:
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


class ChatPanel:
    def __init__(self, session: EditorSession, controller: RunController) -> None:
        self.session = session
        self.controller = controller
        self._live: Any = None
        self._streamed = ""
        self.hint = ui.label("").classes("text-xs text-grey-7")
        self.messages = ui.column().classes("w-full gap-2 fb-chat-messages").style("min-height: 200px")
        # Sticky at the bottom of the scrolling side panel: the box stays in reach however long the chat gets.
        with ui.row().classes("w-full no-wrap items-center fb-chat-compose"):
            self.input = (
                ui.input(placeholder="Ask the flow…").props("dense outlined").classes("grow").mark("chat-input")
            )
            self.input.on("keydown.enter", self.send)
            ui.button(icon="send", on_click=self.send).props("dense flat").mark("chat-send")
        controller.token_listeners.append(self._on_tokens)
        self.refresh_hint()

    def refresh_hint(self) -> None:
        has_chat = any(n.type == "chat.input" for n in self.session.state.flow.nodes)
        self.hint.set_text(
            "Each message runs the flow with it as the chat input."
            if has_chat
            else "This flow has no chat.input node: add one to talk to it."
        )

    def _on_tokens(self, text: str) -> None:
        if self._live is not None:
            self._streamed += text
            self._live.set_text(self._streamed)

    def _scroll_to_end(self) -> None:
        ui.run_javascript(
            "const p = document.querySelector('.fb-side .q-tab-panels'); if (p) p.scrollTop = p.scrollHeight;"
        )

    async def send(self) -> None:
        text = str(self.input.value or "").strip()
        if not text:
            return
        if not any(n.type == "chat.input" for n in self.session.state.flow.nodes):
            ui.notify("This flow has no chat.input node.", type="warning")
            return
        self.input.value = ""
        with self.messages:
            ui.chat_message(text, name="You", sent=True).classes("w-full")
            with ui.chat_message(name="Flow").props("bg-color=grey-2").classes("w-full fb-chat-reply") as reply:
                self._live = ui.label("…").classes("fb-chat-answer").style("white-space: pre-wrap")
        self._scroll_to_end()
        self._streamed = ""
        result = await self.controller.start(text=text)
        live, self._live = self._live, None
        if result is None:
            live.set_text("(not run; see the notification)")
            return
        answer = chat_output_of(self.session, result)
        failed = result.failed()
        if answer:
            live.set_text(answer)
        elif failed:
            # No final answer: say which node failed rather than showing an intermediate text (the prompt).
            live.delete()  # the warning replaces the (empty) answer line
            with reply:
                message_box(
                    "warning",
                    f"No answer: node '{failed[-1].node_id}' failed",
                    failure_text(failed[-1].node_id, failed[-1].error or ""),
                    "fb-chat-warning",
                )
        else:
            live.set_text(answer_of(self.session, result) or self._streamed or "(no answer)")
        with reply:
            for node_id, hits in hits_of(result):
                with (
                    ui.expansion(f"{len(hits)} retrieved chunks ({node_id})", icon="manage_search")
                    .classes("w-full fb-chat-hits")
                    .props("dense header-class=text-caption")
                ):
                    hits_view(hits)  # retrieval helper: stage table (each leg's rank) after fusion/rerank
        self._scroll_to_end()
