"""The "Install local model runtime" button on a node whose class names a :class:`~flowbuilder.node.Runtime`
(``llm.local``: ``pip install -e .[local]``).

llama-cpp-python builds llama.cpp from source (minutes), so the install is one job per process that
outlives the inspector redrawing: it runs as a child process (asyncio, never blocking the event loop),
its latest output line is the progress line ("building llama.cpp 85/140"), and Cancel ends the whole
process group (pip and the compilers it started).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from nicegui import background_tasks, ui

from flowbuilder.node import Runtime

_STEP = re.compile(r"\[(\d+)/(\d+)\]")
_REFRESH_S = 0.5


@dataclass
class InstallJob:
    """One install of one runtime in a child process: its state, progress line and the output's tail."""

    command: list[str]
    """The install argv (pip install -e .[local] -v: -v shows the cmake build steps, the only real progress of a
    long build)."""
    env: dict[str, str] | None = None
    available: Callable[[], bool] = lambda: True
    """Asked after a successful install: the runtime imports now."""
    name: str = "the runtime"
    state: str = "idle"
    """idle, running, done, failed or cancelled."""
    line: str = ""
    """The progress line: the build step or pip's latest message."""
    tail: list[str] = field(default_factory=list)
    process: asyncio.subprocess.Process | None = None

    def start(self) -> None:
        if self.state == "running":
            return
        self.state, self.line, self.tail = "running", "starting pip…", []
        background_tasks.create(self._run(), name="install local model runtime")

    async def _run(self) -> None:
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.command,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # Cancel ends pip and the compilers it started, together
            )
        except OSError as exc:
            self.state, self.line = "failed", f"could not start pip: {exc}"
            return
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            text = raw.decode("utf-8", "replace").strip()
            if text:
                self.tail = [*self.tail[-19:], text]
                self.line = progress_line(text, self.line)
        code = await self.process.wait()
        if self.state == "cancelled":
            return
        importlib.invalidate_caches()
        if code == 0 and self.available():
            self.state, self.line = "done", f"installed: {self.name} runs now (no restart needed)"
        else:
            last = next((line for line in reversed(self.tail) if "error" in line.lower()), self.tail[-1:] or [""])
            self.state, self.line = "failed", f"pip exited with {code}: {str(last)[:200]}"

    def cancel(self) -> None:
        if self.state != "running" or self.process is None:
            return
        self.state, self.line = "cancelled", "cancelled; nothing was installed"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)


def progress_line(text: str, previous: str) -> str:
    """What the user sees for one line of pip's output (a cmake step as 'building llama.cpp n/total')."""
    step = _STEP.search(text)
    if step and ("/usr/bin/" in text or "Building" in text or "Linking" in text or "cmake" in text):
        return f"building llama.cpp: step {step.group(1)} of {step.group(2)}"
    if text.startswith(("Collecting", "Downloading", "Building wheel", "Installing", "Successfully", "ERROR")):
        return text[:160]
    return previous


_JOBS: dict[str, InstallJob] = {}
"""One install job per runtime per process: it outlives the inspector redrawing."""


def job_for(runtime: Runtime) -> InstallJob:
    """The install job of ``runtime`` (made on first use)."""
    if runtime.name not in _JOBS:
        _JOBS[runtime.name] = InstallJob(
            [*runtime.install_command(), "-v"], runtime.install_env(), runtime.available, runtime.name
        )
    return _JOBS[runtime.name]


def runtime_panel(runtime: Runtime) -> None:
    """Under the settings of a node that needs ``runtime``: its state, or the install button with its progress."""
    job = job_for(runtime)
    with ui.column().classes("w-full gap-1 q-mt-sm fb-local-runtime"):
        if runtime.available() and job.state != "running":
            bundled = runtime.bundled_files()
            note = f"default model: {bundled[0].name}" if bundled else "no default model: choose a .gguf file"
            ui.label(f"{runtime.name} runtime installed · {note}").classes("text-xs text-grey-7")
            return
        ui.label(runtime.install_note or f"{runtime.name} is not installed.").classes("text-xs text-grey-8")
        with ui.row().classes("items-center gap-2"):
            install = ui.button("Install local model runtime", icon="download", on_click=job.start).props(
                "dense no-caps"
            )
            install.mark("install-local-runtime")
            stop = ui.button("Cancel", on_click=job.cancel).props("dense flat no-caps").mark("cancel-local-runtime")
        line = ui.label().classes("text-xs fb-install-progress").mark("install-progress")

        def refresh() -> None:
            install.set_enabled(job.state != "running")
            stop.set_visibility(job.state == "running")
            line.set_text(job.line)
            line.classes(replace=f"text-xs fb-install-progress {'text-negative' if job.state == 'failed' else ''}")

        refresh()
        ui.timer(_REFRESH_S, refresh)
