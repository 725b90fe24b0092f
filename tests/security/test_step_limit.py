"""The fuzz harnesses' step limit: a step that never ends is stopped, a busy machine is not a hang, and an import
is never cut short (a half-imported package broke later tests in the same process)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fuzz_harness import StepTimeout, step_limit

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\n"


def test_a_step_that_never_ends_is_stopped_by_its_cpu_budget() -> None:
    started = time.process_time()
    with pytest.raises(StepTimeout), step_limit(0.2):
        while True:
            pass
    assert time.process_time() - started > 0.15  # stopped by the budget (the kernel counts CPU in ticks)


def test_a_step_that_waits_is_stopped_by_the_wall_clock() -> None:
    with pytest.raises(StepTimeout), step_limit(60, wall_seconds=0.2):
        threading.Event().wait()  # the step under test: a wait that never ends (a stuck connection)


def test_the_limit_waits_for_an_import_to_finish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "slow_package"
    package.mkdir()
    (package / "__init__.py").write_text("from slow_package import part\n", encoding="utf-8")
    (package / "part.py").write_text(BURN.format(seconds=0.5) + "DONE = True\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(StepTimeout), step_limit(0.1):
        import slow_package  # longer than the limit: the limit lands after it, in the loop below

        while True:
            pass
    assert slow_package.part.DONE  # whole: the package has its submodule
    monkeypatch.delitem(sys.modules, "slow_package")
    monkeypatch.delitem(sys.modules, "slow_package.part")
