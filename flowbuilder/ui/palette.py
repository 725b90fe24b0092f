"""The node palette: every registered node type grouped by category, with search.

Items are HTML5-draggable onto the canvas (the canvas converts the drop point with
``screenToFlowCoordinate``); clicking an item adds it at the centre of the view as a fallback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

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


class Palette:
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
                        description = cls.description()
                        with item:
                            with ui.row().classes("items-baseline no-wrap gap-1 w-full"):
                                ui.label(display_name(cls)).classes("text-weight-medium text-[13px] fb-palette-name")
                                ui.label(cls.type_name).classes("text-[10px] text-grey-6 fb-palette-type")
                            ui.label(description).classes("text-[11px] text-grey-7 fb-palette-desc")
                            tip = ui.tooltip().classes("fb-palette-tip")
                            with tip.props("anchor='center right' self='center left'"):
                                ui.label(description)
                                known = aliases(cls)
                                if known:
                                    ui.label("Also known as: " + ", ".join(dict.fromkeys(known))).classes("text-grey-4")
                                ui.label("Drag onto the canvas, or click to add.").classes("text-grey-5")
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
