"""A node pack from outside Flowbuilder's package tree (tests/packs is put on the path; the entry point in
``fb_demo_pack-0.1.dist-info`` registers it): one node, ``demo.highlight``, with its n8n mapping next to it.

It stands for a third-party distribution that declares ``[project.entry-points."flowbuilder.nodes"]
demo = "fb_demo_pack"``: importing the module registers its node (``@register_node``), and the node class
carries its n8n entry (``mappings``), so an n8n workflow using the community node imports and runs.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.formats.adapters import Adapter, Param, to_bool
from flowbuilder.node import Node, RunContext
from flowbuilder.portvalues import Text
from flowbuilder.registry import register_node


class HighlightConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    marker: str = Field("**", description="Put around every occurrence of the word.")
    word: str = Field("login", description="The word to highlight.")
    ignore_case: bool = Field(True, description="Match the word in any case.")


class HighlightIn(TypedDict):
    text: Annotated[Text, "The text to mark up."]


class HighlightOut(TypedDict):
    text: Annotated[Text, "The text with the word marked."]


@register_node
class Highlight(Node[HighlightConfig, HighlightIn, HighlightOut]):
    """Mark every occurrence of a word in a text (a node pack's demo node)."""

    type_name = "demo.highlight"
    category = "Transform"
    Config = HighlightConfig
    mappings: ClassVar = {
        "n8n": (
            Adapter(
                theirs="n8n-nodes-highlight.highlight",
                versions=(1, 2),
                inputs={"text": "main"},
                outputs={"text": "main"},
                params=(
                    Param("word", "keyword", "login"),
                    Param("marker", "options.marker", "**"),
                    Param("ignore_case", "options.caseInsensitive", True, to_ours=to_bool),
                ),
                fixed={"options": {}},
            ),
        )
    }

    def run(self, inputs: HighlightIn, ctx: RunContext) -> HighlightOut:
        import re

        config = self.config
        flags = re.IGNORECASE if config.ignore_case else 0
        marked = re.sub(re.escape(config.word), lambda m: f"{config.marker}{m.group(0)}{config.marker}",
                        inputs["text"], flags=flags)  # fmt: skip
        return {"text": marked}
