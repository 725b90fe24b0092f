"""The node palette: every registered node type grouped by category, with search.

Items are HTML5-draggable onto the canvas (the canvas converts the drop point with
``screenToFlowCoordinate``); clicking an item adds it at the centre of the view as a fallback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape

from nicegui import ui

from flowbuilder.registry import NodeClass, NodeRegistry
from flowbuilder.ui.names import aliases, display_name, matches

DRAG_MIME = "application/x-flowbuilder-node"
# The order a RAG flow is built in, top to bottom; categories of node packs go before "Imported".
CATEGORY_ORDER = (
    "Inputs",
    "Chat",
    "Loaders",
    "Transform",
    "Splitters",
    "Embedders",
    "Vector stores",
    "Retrieval",
    "Rerankers",  # llmret: rerankers sit between retrieval and the prompt
    "Prompts",
    "Models",
    "Agents",
    "Utility",
    "Imported",
)


def category_rank(category: str) -> tuple[float, str]:
    if category in CATEGORY_ORDER:
        return float(CATEGORY_ORDER.index(category)), category
    return CATEGORY_ORDER.index("Imported") - 0.5, category


def grouped(registry: NodeRegistry) -> list[tuple[str, list[NodeClass]]]:
    """Node classes by category, categories in :data:`CATEGORY_ORDER`, types by name within each."""
    groups: dict[str, list[NodeClass]] = {}
    for cls in registry:
        groups.setdefault(cls.category, []).append(cls)
    return [(c, sorted(groups[c], key=display_name)) for c in sorted(groups, key=category_rank)]


def item_html(cls: NodeClass) -> str:
    """The item's name, type id and one-line description (the texts are escaped)."""
    return (
        '<div class="row items-baseline no-wrap fb-palette-head">'
        f'<span class="text-weight-medium fb-palette-name">{escape(display_name(cls))}</span>'
        f'<span class="text-grey-6 fb-palette-type">{escape(cls.type_name)}</span></div>'
        f'<div class="text-grey-7 fb-palette-desc">{escape(cls.description())}</div>'
    )


def tip_html(cls: NodeClass) -> str:
    lines = [f"<div>{escape(cls.description())}</div>"]
    known = aliases(cls)
    if known:
        lines.append(f'<div class="text-grey-4">Also known as: {escape(", ".join(dict.fromkeys(known)))}</div>')
    lines.append('<div class="text-grey-5">Drag onto the canvas, or click to add.</div>')
    return "".join(lines)


class Palette:
    """The node palette: registered types by category, searchable by name and aliases."""

    def __init__(self, registry: NodeRegistry, on_add: Callable[[str], Awaitable[None] | None]) -> None:
        self.registry = registry
        self.on_add = on_add
        self.items: dict[str, ui.element] = {}
        self.groups: dict[str, ui.expansion] = {}
        ui.input(placeholder="Search nodes…").props("dense outlined clearable").classes(
            "w-full fb-palette-search"
        ).on_value_change(lambda e: self.filter(str(e.value or "")))
        with ui.scroll_area().classes("w-full grow fb-palette"):
            for category, classes in grouped(self.registry):
                with (
                    ui.expansion(category, value=True)
                    .classes("w-full")
                    .props("dense header-class=text-weight-bold") as group
                ):
                    self.groups[category] = group
                    for cls in classes:
                        item = (
                            ui.element("div")
                            .classes("fb-palette-item w-full rounded-borders q-px-sm q-py-xs cursor-grab")
                            .props(f'draggable=true data-type="{cls.type_name}"')
                            .on(
                                "dragstart",
                                js_handler=f'(e) => {{ e.dataTransfer.setData("{DRAG_MIME}", "{cls.type_name}"); '
                                'e.dataTransfer.effectAllowed = "copy"; }',
                            )
                            .on("click", lambda _, t=cls.type_name: self.on_add(t))
                            .mark(f"palette-{cls.type_name}")
                        )
                        with item:
                            # one HTML element per item and per tip instead of a NiceGUI element per line: the
                            # palette was a third of every page's build (~400 elements for ~50 types)
                            ui.html(item_html(cls), sanitize=False)
                            with (
                                ui.tooltip().classes("fb-palette-tip").props("anchor='center right' self='center left'")
                            ):
                                ui.html(tip_html(cls), sanitize=False)
                        self.items[cls.type_name] = item

    def filter(self, query: str) -> None:
        words = query.lower().split()
        visible_groups: set[str] = set()
        for cls in self.registry:
            show = matches(cls, query)
            self.items[cls.type_name].set_visibility(show)
            if show:
                visible_groups.add(cls.category)
        for category, group in self.groups.items():
            group.set_visibility(category in visible_groups)
            if words and category in visible_groups:
                group.value = True
