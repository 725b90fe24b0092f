"""Capabilities instead of type names: code outside a node's module and its mapping entries asks what a node
type does (``Node.capabilities``), so a node pack's prompt-like node is served and evaluated like
``prompt.template``, and a role the engines fill is claimed once."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from flowbuilder.capabilities import Capability
from flowbuilder.context import context_budget
from flowbuilder.errors import RegistryError
from flowbuilder.evaluation.answers import find_roles
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import Node, RunContext
from flowbuilder.ports import Port, PortType
from flowbuilder.registry import NodeRegistry, default_registry

PACKAGE = Path(__file__).resolve().parents[2] / "flowbuilder"
NODE_MODULES = ("nodes/", "placeholder.py")
"""A node's own module names its type (flowbuilder/nodes links to the built-in nodes)."""
MAPPING_ENTRIES = (
    "formats/n8n_table.py",
    "formats/langflow_table.py",
    "formats/flowise_table.py",
    "formats/dify_table.py",
)
"""The mapping entries name the types they map to."""


def quoted_type_names(root: Path = PACKAGE) -> list[str]:
    """``file:line 'name'`` for every string constant in the package that is a built-in type name or a type
    family's prefix (``"llm."``), outside the node modules and the mapping entries."""
    names = set(default_registry().names())
    families = {name.split(".", 1)[0] + "." for name in names}
    found: list[tuple[str, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(NODE_MODULES) or relative in MAPPING_ENTRIES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names | families:
                found.append((relative, node.lineno, node.value))
    return [f"{relative}:{line} {value!r}" for relative, line, value in sorted(found)]


def test_no_quoted_built_in_type_name_outside_the_nodes_and_their_mappings() -> None:
    found = quoted_type_names()
    assert not found, "ask a capability (flowbuilder/capabilities.py) instead of naming a type:\n" + "\n".join(found)


def test_the_scan_finds_a_quoted_type_name(tmp_path: Path) -> None:
    (tmp_path / "context.py").write_text('if spec.type == "prompt.template":\n    pass\nPREFIX = "llm."\n')
    assert quoted_type_names(tmp_path) == ["context.py:1 'prompt.template'", "context.py:3 'llm.'"]


class PackPromptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    template: str = "{question}"
    context_chars: int = 700


class PackPrompt(Node[PackPromptConfig]):
    """A node pack's own prompt node."""

    type_name = "pack.prompt"
    category = "Prompts"
    Config = PackPromptConfig
    capabilities = frozenset({Capability.RENDERS_PROMPT})
    inputs = (Port("question", PortType.TEXT),)
    outputs = (Port("prompt", PortType.PROMPT),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"prompt": self.config.template.format(**inputs)}


class PackAnswer(Node[PackPromptConfig]):
    """A node pack's own answer display."""

    type_name = "pack.show"
    category = "Chat"
    capabilities = frozenset({Capability.ANSWERS})
    inputs = (Port("prompt", PortType.PROMPT),)
    outputs = (Port("shown", PortType.ANSWER),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"shown": inputs["prompt"]}


@pytest.fixture
def pack_registry() -> NodeRegistry:
    registry = NodeRegistry()
    for cls in default_registry():
        registry.register(cls)
    registry.register(PackPrompt)
    registry.register(PackAnswer)
    return registry


def test_a_pack_prompt_node_sets_the_context_budget_and_is_found_by_eval(pack_registry: NodeRegistry) -> None:
    flow = Flow(
        nodes=[
            NodeSpec(id="in", type="chat.input"),
            NodeSpec(id="p", type="pack.prompt", config={"context_chars": 700}),
            NodeSpec(id="show", type="pack.show"),
        ],
        edges=[
            Edge(source="in", source_port="message", target="p", target_port="question"),
            Edge(source="p", source_port="prompt", target="show", target_port="prompt"),
        ],
    )
    assert context_budget(flow, pack_registry) == 700
    assert context_budget(flow, default_registry()) is None  # unknown there: no capability, no budget
    roles = find_roles(flow, pack_registry)
    assert (roles.answer, roles.answer_port, roles.prompt) == ("show", "shown", "p")


def test_a_role_the_engines_fill_is_claimed_once(pack_registry: NodeRegistry) -> None:
    class SecondLoader(Node[Any]):
        """Another file loader."""

        type_name = "pack.loader"
        capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.LOADS_FILES})

    with pytest.raises(RegistryError, match=r"claims the role 'loads_files', which loader\.file already fills"):
        pack_registry.register(SecondLoader)
    assert pack_registry.the(Capability.LOADS_FILES).type_name == "loader.file"


def test_every_role_the_engines_fill_has_its_built_in_type() -> None:
    registry = default_registry()
    for capability in Capability:
        assert registry.with_capability(capability), f"no built-in node declares {capability}"
    assert registry.the(Capability.OFFLINE_SWAP, PortType.EMBEDDER).type_name == "embedder.local"
    assert registry.the(Capability.OFFLINE_SWAP, PortType.CHAT_MODEL).type_name == "llm.ollama"
    assert registry.the(Capability.OFFLINE_SWAP, PortType.VECTOR_STORE).type_name == "vectorstore.chroma"
    with pytest.raises(RegistryError, match="No registered node type has the capability 'offline_swap' giving hits"):
        NodeRegistry().the(Capability.OFFLINE_SWAP, PortType.HITS)
