"""A node pack from outside the package tree brings its node and the node's n8n mapping: with
``tests/packs`` on the path, its ``flowbuilder.nodes`` entry point registers ``demo.highlight``, whose class
carries its n8n entry, so an n8n workflow using that community node imports, runs and exports back. Each
run is a fresh process, so the pack never leaks into this process's registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowbuilder.formats.adapters import Adapter, import_hook

ROOT = Path(__file__).resolve().parents[2]
PACKS = ROOT / "tests" / "packs"
WORKFLOW = PACKS / "fixtures" / "highlight_n8n.json"


def flowbuilder(*args: str, pack: bool = True, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = [str(ROOT), *([str(PACKS)] if pack else []), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p), "FLOWBUILDER_DATA_DIR": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "flowbuilder", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_an_n8n_workflow_using_a_packs_node_imports_runs_and_exports(tmp_path: Path) -> None:
    imported = flowbuilder("import", str(WORKFLOW), "-o", "flow.json", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "'Highlight' [n8n-nodes-highlight.highlight] -> demo.highlight 'highlight'" in imported.stdout
    flow = json.loads((tmp_path / "flow.json").read_text())
    node = next(n for n in flow["nodes"] if n["id"] == "highlight")
    assert node["type"] == "demo.highlight"
    assert node["config"] == {"word": "password", "marker": "__", "ignore_case": False}
    assert [(e["source"], e["target"], e["target_port"]) for e in flow["edges"]] == [
        ("when-chat-message-received", "highlight", "text")
    ]

    ran = flowbuilder("run", "flow.json", "--input", "Reset the Password, then the password", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    outputs = json.loads(ran.stdout)["outputs"]
    assert outputs["highlight"]["text"] == "Reset the Password, then the __password__"

    exported = flowbuilder("export", "flow.json", "--to", "n8n", "-o", "back.json", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    back = json.loads((tmp_path / "back.json").read_text())
    written = next(n for n in back["nodes"] if n["type"] == "n8n-nodes-highlight.highlight")
    assert written["typeVersion"] == 2
    assert written["parameters"] == {"keyword": "password", "options": {"marker": "__", "caseInsensitive": False}}


def test_without_the_pack_the_node_stays_a_placeholder(tmp_path: Path) -> None:
    imported = flowbuilder("import", str(WORKFLOW), "-o", "flow.json", pack=False, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    flow = json.loads((tmp_path / "flow.json").read_text())
    assert next(n for n in flow["nodes"] if n["id"] == "highlight")["type"] == "placeholder.unsupported"


def test_an_entry_names_its_hook_or_brings_its_own() -> None:
    class Engine:
        def _hook_store(self, *args: object) -> str:
            return f"store{args}"

    def own(engine: Engine, *args: object) -> str:
        return f"own {type(engine).__name__}{args}"

    engine = Engine()
    named, brought = import_hook(engine, Adapter("x", "y", hook="store")), import_hook(engine, Adapter(hook=own))
    assert named is not None and named(1) == "store(1,)"
    assert brought is not None and brought(1) == "own Engine(1,)"
    assert import_hook(engine, Adapter("x", "y")) is None
    with pytest.raises(AttributeError):
        import_hook(engine, Adapter("x", "y", hook="missing"))
