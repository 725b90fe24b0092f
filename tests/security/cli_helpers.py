"""What the security tests share: running the CLI as a user does, and a flow that reads one path."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.native import save_flow


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run ``flowbuilder ARGS``: the exit code and everything printed; never a traceback."""
    code = main(list(args))
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text
    return code, text


def loader_flow(folder: Path, path: str, name: str = "flow.json") -> Path:
    """A stranger's flow in ``folder`` whose file loader reads ``path``."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    save_flow(Flow(name="stranger", nodes=[NodeSpec(id="load", type="loader.file", config={"path": path})]), target)
    return target
