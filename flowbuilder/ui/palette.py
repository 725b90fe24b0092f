"""The node palette: every registered node type grouped by category, with search.

Items are HTML5-draggable onto the canvas (the canvas converts the drop point with
``screenToFlowCoordinate``); clicking an item adds it at the centre of the view as a fallback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from itertools import groupby

from nicegui import ui

from flowbuilder.registry import NodeRegistry

DRAG_MIME = "application/x-flowbuilder-node"


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
            for category, classes in groupby(self.registry, key=lambda c: c.category):
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
                            ui.label(cls.type_name).classes("text-weight-medium text-[13px]")
                            ui.label(cls.description()).classes("text-[11px] text-grey-7 fb-palette-desc")
                        item.tooltip("Drag onto the canvas, or click to add")
                        self.items[cls.type_name] = item

    def filter(self, query: str) -> None:
        words = query.lower().split()
        visible_groups: set[str] = set()
        for cls in self.registry:
            haystack = f"{cls.type_name} {cls.category} {cls.description()}".lower()
            show = all(w in haystack for w in words)
            self.items[cls.type_name].set_visibility(show)
            if show:
                visible_groups.add(cls.category)
        for category, group in self.groups.items():
            group.set_visibility(category in visible_groups)
            if words and category in visible_groups:
                group.value = True
