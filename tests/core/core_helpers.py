"""Small node types for a private registry, so executor and validation tests are exact."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.errors import NodeError
from flowbuilder.flow import Edge, Flow, NodeSpec
from flowbuilder.node import Node, RunContext
from flowbuilder.ports import Port, PortType
from flowbuilder.registry import NodeRegistry
from flowbuilder.trust.providers import CredentialSlot


class NumbersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(3, ge=0, le=1000)


class Numbers(Node[NumbersConfig]):
    """Emit records numbered 0..count-1."""

    type_name = "test.numbers"
    category = "Test"
    Config = NumbersConfig
    outputs = (Port("records", PortType.RECORDS),)
    runs: ClassVar[int] = 0

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        type(self).runs += 1
        from flowbuilder.data import Document

        return {"records": [Document(text=str(i)) for i in range(self.config.count)]}


class TakeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(2, ge=1)


class Take(Node[TakeConfig]):
    """Keep the first k chunks."""

    type_name = "test.take"
    category = "Test"
    Config = TakeConfig
    inputs = (Port("chunks", PortType.CHUNKS),)
    outputs = (Port("chunks", PortType.CHUNKS),)
    runs: ClassVar[int] = 0

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        type(self).runs += 1
        return {"chunks": inputs["chunks"][: self.config.k]}


class Join(Node[Any]):
    """Join several text inputs."""

    type_name = "test.join"
    category = "Test"
    inputs = (Port("parts", PortType.TEXT, multiple=True), Port("extra", PortType.TEXT, required=False))
    outputs = (Port("text", PortType.TEXT),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"text": "+".join(inputs["parts"] + ([inputs["extra"]] if "extra" in inputs else []))}


class Say(Node[Any]):
    """Say the run input or a fixed word."""

    type_name = "test.say"
    category = "Test"
    outputs = (Port("text", PortType.TEXT),)
    run_input = "text"

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"text": ctx.run_input or "hello"}


class Fail(Node[Any]):
    """Always fail."""

    type_name = "test.fail"
    category = "Test"
    inputs = (Port("text", PortType.TEXT, required=False),)
    outputs = (Port("text", PortType.TEXT),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        raise NodeError("the input was not acceptable; give it something else")


class SlowConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: int = 1000


class Slow(Node[SlowConfig]):
    """A batch job that reports progress and can be cancelled."""

    type_name = "test.slow"
    category = "Test"
    Config = SlowConfig
    outputs = (Port("text", PortType.TEXT),)
    started = threading.Event()

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        import time

        for i in range(self.config.steps):
            Slow.started.set()
            ctx.progress(i + 1, self.config.steps, "step")
            time.sleep(0.005)  # the work itself, not a wait: each step lasts a moment, so a cancel lands mid-run
        return {"text": "done"}


class Keyed(Node[Any]):
    """Needs an API key; fails with a message that would contain it if not redacted."""

    type_name = "test.keyed"
    category = "Test"
    outputs = (Port("text", PortType.TEXT),)
    credential_slots = (CredentialSlot("api_key", "openai"),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        key = ctx.secret("api_key")
        ctx.log(f"using key {key}")
        raise NodeError(f"server said: invalid key {key}")


class Embeds(Node[Any]):
    """Provide an embedder service."""

    type_name = "test.embeds"
    category = "Test"
    outputs = (Port("embedder", PortType.EMBEDDER),)

    def run(self, inputs: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {"embedder": CountingEmbedder()}


class CountingEmbedder:
    """The smallest embedder service: each text becomes its length (lives only in memory, like a real one)."""

    model_id = "test/length"
    dimension = 1
    max_tokens = None

    def embed_documents(self, texts: Sequence[str], progress: object = None) -> list[list[float]]:
        return [[float(len(t))] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text))]

    def count_tokens(self, text: str) -> int | None:
        return None


TEST_NODES = (Numbers, Take, Join, Say, Fail, Slow, Keyed, Embeds)


def node(node_id: str, type_name: str, **config: Any) -> NodeSpec:
    return NodeSpec(id=node_id, type=type_name, config=config)


def edge(source: str, target: str) -> Edge:
    (s, sp), (t, tp) = source.split("."), target.split(".")
    return Edge(source=s, source_port=sp, target=t, target_port=tp)


def flow(nodes: list[NodeSpec], edges: list[Edge] = ()) -> Flow:  # type: ignore[assignment]
    return Flow(nodes=nodes, edges=list(edges))


def make_registry() -> NodeRegistry:
    reg = NodeRegistry()
    for cls in TEST_NODES:
        reg.register(cls)
    Numbers.runs = 0
    Take.runs = 0
    Slow.started.clear()
    return reg
