"""The Serve panel: serve the open flow over MCP Streamable HTTP (and /search, /ask, /health) from the
builder, and show what to paste into an MCP client (stdio and HTTP forms) plus a curl example.

The server runs in this process on a daemon thread with its own executor (the tab's credential
bindings are shared, never shown). It serves a snapshot of the flow taken at Start; Restart picks up edits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nicegui import ui

from flowbuilder.errors import FlowbuilderError
from flowbuilder.executor import Executor
from flowbuilder.registry import NodeRegistry
from flowbuilder.serving.client_config import curl_example, http_config, pretty, stdio_config
from flowbuilder.trust.netguard import check_bind, is_loopback
from flowbuilder.trust.secrets import redact
from flowbuilder.ui.jobs import Job, start_job
from flowbuilder.ui.session import EditorSession
from flowbuilder.ui.widgets import message_box, notify

DEFAULT_PORT = 8765

# One server per builder process and port: a second tab sees (and can stop) the running one.
_RUNNING: dict[int, tuple[Any, Any]] = {}
_JOBS: dict[int, Job] = {}  # the activity bar's line for each server


class ServePanel:
    """``is_shown`` says whether the Serve tab is on screen: describing the flow (its tools, their checks) costs
    as much as drawing a big flow's cards, so a hidden panel only notes that it is out of date and is drawn
    when shown (``show``)."""

    def __init__(self, session: EditorSession, is_shown: Callable[[], bool] = lambda: True) -> None:
        self.session = session
        self.is_shown = is_shown
        self.stale = True
        with ui.column().classes("w-full gap-2 fb-serve"):
            ui.label("Serve this flow").classes("text-subtitle2")
            ui.label(
                "MCP tools for assistants and IDEs (a search tool per retrieval node, ask when the flow has a "
                "model), plus GET /search and POST /ask for scripts."
            ).classes("text-caption text-grey-8")
            with ui.row().classes("w-full no-wrap gap-2 items-end"):
                self.host = ui.input("Host", value="127.0.0.1").props("dense outlined").classes("w-32")
                self.port = (
                    ui.number("Port", value=DEFAULT_PORT, min=1, max=65535, format="%d")
                    .props("dense outlined")
                    .classes("w-24")
                )
                self.token = (
                    ui.input("Token (optional)", password=True, password_toggle_button=False)
                    .props("dense outlined autocomplete=off")
                    .classes("grow")
                    .tooltip("Required for a non-loopback host; clients send Authorization: Bearer TOKEN")
                )
            with ui.row().classes("gap-2"):
                self.start_button = (
                    ui.button("Start serving", icon="cast", on_click=self.start)
                    .props("unelevated dense no-caps color=positive")
                    .mark("serve-start")
                )
                self.stop_button = (
                    ui.button("Stop", icon="stop", on_click=self.stop)
                    .props("unelevated dense no-caps color=negative")
                    .mark("serve-stop")
                )
                ui.button(icon="refresh", on_click=self.refresh).props("flat dense").tooltip(
                    "Re-read the open flow (tools, client configuration)"
                )
            self.status = ui.column().classes("w-full gap-1")
            self.tools_box = ui.column().classes("w-full gap-1")
            self.details = ui.column().classes("w-full gap-1")
        self.refresh()

    # ------------------------------------------------------------------ actions
    def _port(self) -> int:
        try:
            return int(self.port.value or DEFAULT_PORT)
        except (TypeError, ValueError):
            return DEFAULT_PORT

    def start(self) -> None:
        from flowbuilder.serving.http_app import BackgroundServer, build_http_app
        from flowbuilder.serving.service import FlowService

        host = str(self.host.value or "127.0.0.1").strip()
        token = str(self.token.value or "").strip() or None
        port = self._port()
        if port in _RUNNING:
            self._show_error(f"Port {port} is already served by this builder; stop it first.")
            return
        try:
            check_bind(host, token)
            executor = Executor(self.session.state.registry, self.session.resolver)
            service = FlowService(
                self.session.state.flow, base_dir=self.session.base_dir, executor=executor, flow_file=self.session.path
            )
            app = build_http_app(service, host=host, token=token)
            server = BackgroundServer(app, host, port)
            server.start()
        except FlowbuilderError as exc:
            self._show_error(str(exc))
            return
        except OSError as exc:
            self._show_error(f"Cannot listen on {host}:{port}: {exc.strerror or exc}. Pick another port.")
            return
        service.start_warm_up()
        _RUNNING[port] = (server, service)
        url_host = f"[{host}]" if ":" in host else host
        job = start_job(
            "serve", f"Serving {self.session.state.flow.name or 'the flow'}", cancel=lambda: self._stop(port)
        )
        job.progress(f"at http://{url_host}:{port}/mcp")
        _JOBS[port] = job
        self._token_set = token is not None
        self.token.value = ""  # the page keeps no secret once the server has it
        self.refresh()

    def stop(self) -> None:
        self._stop(self._port())

    def _stop(self, port: int) -> None:
        running = _RUNNING.pop(port, None)
        if running is not None:
            running[0].stop()
        job = _JOBS.pop(port, None)
        if job is not None:
            job.finish("Stopped.")
        self._token_set = False
        self.refresh()

    # ------------------------------------------------------------------ tool names (flow meta.mcp)
    def _draw_tools(self) -> None:
        from flowbuilder.serving.service import FlowService

        self.tools_box.clear()
        with self.tools_box:
            try:
                service = FlowService(
                    self.session.state.flow,
                    base_dir=self.session.base_dir,
                    resolver=self.session.resolver,
                    inspect_only=True,
                    flow_file=self.session.path,
                )
            except FlowbuilderError as exc:
                message_box("warning", "Tools", redact(str(exc)))
                return
            ui.label("Search tools (saved in the flow; restart serving to apply)").classes(
                "text-caption text-weight-medium q-mt-sm"
            )
            if not service.searches:
                ui.label("None: no retrieval node is fed by a chat input.").classes("text-caption text-grey-7")
            for endpoint in service.searches:
                with ui.column().classes("w-full gap-0 fb-serve-tool"):
                    name = (
                        ui.input(f"Tool name (node {endpoint.node_id})", value=endpoint.name)
                        .props("dense outlined")
                        .classes("w-full")
                    )
                    text = (
                        ui.textarea("Description", value=endpoint.description)
                        .props("dense outlined autogrow")
                        .classes("w-full")
                    )
                    name.on(
                        "blur",
                        lambda _, n=endpoint.node_id, w=name, c=endpoint.name: self._set_tool(n, "name", w.value, c),
                    )
                    text.on(
                        "blur",
                        lambda _, n=endpoint.node_id, w=text, c=endpoint.description: self._set_tool(
                            n, "description", w.value, c
                        ),
                    )

    def _set_tool(self, node_id: str, field: str, value: Any, current: str) -> None:
        state = self.session.state
        text = str(value or "").strip()
        if text == current:  # a blur without a change must not mark the flow dirty
            return
        raw_mcp = state.flow.meta.get("mcp")
        mcp: dict[str, Any] = raw_mcp if isinstance(raw_mcp, dict) else {}
        raw_tools = mcp.get("tools")
        tools: dict[str, Any] = raw_tools if isinstance(raw_tools, dict) else {}
        entry = dict(tools.get(node_id) or {})
        # EditorState has no meta setter; its _snapshot() is what makes the edit undoable and the flow dirty.
        state._snapshot(("mcp-tool", node_id, field))
        entry[field] = text
        if not text:
            entry.pop(field)
        state.flow.meta["mcp"] = {**mcp, "tools": {**tools, node_id: entry}}
        try:
            from flowbuilder.serving.service import FlowService

            FlowService(
                state.flow,
                base_dir=self.session.base_dir,
                resolver=self.session.resolver,
                inspect_only=True,
                flow_file=self.session.path,
            )
        except FlowbuilderError as exc:
            notify(redact(str(exc)), type="warning")

    # ------------------------------------------------------------------ drawing
    def _show_error(self, text: str) -> None:
        self.status.clear()
        with self.status:
            message_box("error", "Not serving", redact(text)).mark("serve-error")

    def show(self) -> None:
        """The tab is on screen now: draw what changed while it was hidden."""
        if self.stale:
            self.refresh()

    def refresh(self) -> None:
        if not self.is_shown():
            self.stale = True
            return
        self.stale = False
        port = self._port()
        running = _RUNNING.get(port)
        self.start_button.set_enabled(running is None)
        self.stop_button.set_enabled(running is not None)
        self.status.clear()
        self.details.clear()
        self._draw_tools()
        flow = self.session.state.flow
        host = str(self.host.value or "127.0.0.1").strip()
        url_host = f"[{host}]" if ":" in host else host
        base_url = f"http://{url_host}:{port}"
        token_set = bool(str(self.token.value or "").strip()) or getattr(self, "_token_set", False)
        with self.status:
            if running is None:
                ui.label("Not serving.").classes("text-grey-7").mark("serve-status")
            else:
                service = running[1]
                summary = service.summary()
                with ui.row().classes("items-center no-wrap gap-1"):
                    ui.icon("circle", color="positive", size="xs")
                    ui.label(f"Serving '{summary['flow']}' at {base_url}/mcp").classes("text-weight-medium").mark(
                        "serve-status"
                    )
                tools = [f"{t['name']} (node {t['node']}, k={t['k']})" for t in summary["search_tools"]]
                if summary["ask"]:
                    tools.append(f"{summary['ask']} (runs the whole flow)")
                ui.label("Tools: " + (", ".join(tools) or "none")).classes("text-caption")
                if not is_loopback(host):
                    ui.label("Reachable from other machines: every request needs the bearer token.").classes(
                        "text-caption text-amber-9"
                    )
        with self.details:
            ui.label("Client configuration (HTTP)").classes("text-caption text-weight-medium q-mt-sm")
            ui.code(pretty(http_config(flow.name, base_url, token_set)), language="json").classes(
                "w-full fb-serve-http"
            )
            ui.label("Client configuration (stdio: the client launches flowbuilder)").classes(
                "text-caption text-weight-medium"
            )
            if self.session.path is not None:
                ui.code(pretty(stdio_config(flow.name, self.session.path.resolve())), language="json").classes(
                    "w-full fb-serve-stdio"
                )
            else:
                ui.label("Save the flow first: the stdio form needs its file path.").classes("text-caption text-grey-7")
            ui.label("Try it").classes("text-caption text-weight-medium")
            question = _example_question(flow, self.session.state.registry)
            ui.code(curl_example(base_url, question, 5, token_set), language="bash").classes("w-full fb-serve-curl")


def _example_question(flow: Any, registry: NodeRegistry) -> str:
    """The text a chat input (a node fed the run's text) holds, for the curl example."""
    for node in flow.nodes:
        asks = node.type in registry and registry.get(node.type).run_input == "text"
        if asks and isinstance(node.config.get("text"), str) and node.config["text"].strip():
            return str(node.config["text"])
    return "your question"
