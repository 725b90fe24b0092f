"""The registry and the node contract every registered node must meet."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from core_helpers import Numbers

from flowbuilder.errors import DuplicateNodeTypeError, RegistryError, UnknownNodeTypeError
from flowbuilder.node import Node
from flowbuilder.ports import PortType
from flowbuilder.registry import NodeRegistry, default_registry

REGISTRY = default_registry()
ALL = list(REGISTRY)


def test_unknown_type_suggests_close_names() -> None:
    with pytest.raises(UnknownNodeTypeError) as info:
        REGISTRY.get("util.pasthrough")
    assert "util.passthrough" in str(info.value)


def test_duplicate_names_are_refused() -> None:
    reg = NodeRegistry()
    reg.register(Numbers)

    class Other(Node[Any]):
        """Another numbers."""

        type_name = "test.numbers"

    with pytest.raises(DuplicateNodeTypeError, match="registered twice"):
        reg.register(Other)


def test_a_node_without_a_docstring_is_refused() -> None:
    class Bare(Node[Any]):
        type_name = "test.bare"

    with pytest.raises(RegistryError, match="docstring"):
        NodeRegistry().register(Bare)


@pytest.mark.parametrize("cls", ALL, ids=[c.type_name for c in ALL])
def test_node_contract(cls: type[Node[Any]]) -> None:
    assert cls.type_name.count(".") >= 1 and cls.type_name == cls.type_name.lower()
    assert "/" not in cls.type_name and not cls.type_name.startswith(("nodes.", "flowbuilder."))
    assert cls.description() and cls.category
    config = cls.Config()  # defaults are valid
    schema = cls.Config.model_json_schema()
    json.dumps(schema)
    for name, field in cls.Config.model_fields.items():
        assert field.description or name in ("model_config",), f"{cls.type_name}.{name} has no description"
    for port in (*cls.input_ports(config), *cls.output_ports(config)):
        assert isinstance(port.type, PortType) and port.name.isidentifier()
    cls(config)  # cheap to construct


def test_describe_lists_every_node_with_schema() -> None:
    described = {d["type"]: d for d in REGISTRY.describe()}
    assert set(described) == set(REGISTRY.names())
    assert all(
        "properties" in d["config_schema"] or d["config_schema"].get("type") == "object" for d in described.values()
    )


def test_entry_point_node_packs_are_loaded(tmp_path) -> None:
    pack = tmp_path / "pack"
    (pack / "demo_pack").mkdir(parents=True)
    (pack / "demo_pack" / "__init__.py").write_text(
        "from typing import Any\n"
        "from flowbuilder.node import Node\n"
        "from flowbuilder.registry import register_node\n"
        "@register_node\n"
        "class Hello(Node[Any]):\n"
        '    """Say hello from a pack."""\n'
        '    type_name = "pack.hello"\n'
    )
    dist = pack / "demo_pack-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-pack\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[flowbuilder.nodes]\ndemo = demo_pack\n")
    code = "from flowbuilder.registry import default_registry; print('pack.hello' in default_registry())"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(pack)}, check=True
    )
    assert out.stdout.strip() == "True"


def test_core_never_imports_nicegui() -> None:
    code = (
        "import sys, flowbuilder.executor, flowbuilder.graph, flowbuilder.cli, flowbuilder.registry;"
        "from flowbuilder.registry import default_registry; default_registry();"
        "import flowbuilder.cli as c; c.build_parser();"
        "print('nicegui' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_stray_nodes_module_in_the_working_directory_changes_nothing(tmp_path: Any) -> None:
    """ComfyUI and many projects ship a top-level ``nodes`` module; ours is ``flowbuilder.nodes``."""
    (tmp_path / "nodes.py").write_text("raise SystemExit('the stray nodes.py was imported')\n")
    (tmp_path / "nodes").mkdir()  # and a package of that name: neither is looked at
    (tmp_path / "nodes" / "__init__.py").write_text("raise SystemExit('the stray nodes package was imported')\n")
    done = subprocess.run(
        [sys.executable, "-m", "flowbuilder", "nodes", "--json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    listed = {entry["type"] for entry in json.loads(done.stdout)}
    assert listed == set(REGISTRY.names()) and len(listed) > 40


def test_the_built_in_nodes_come_through_the_entry_point_group() -> None:
    from importlib.metadata import entry_points

    from flowbuilder.registry import ENTRY_POINT_GROUP

    (builtin,) = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "builtin"]
    assert builtin.value == "flowbuilder.nodes"
    assert all(cls.__module__.startswith(("flowbuilder.nodes.", "flowbuilder.placeholder")) for cls in ALL)
