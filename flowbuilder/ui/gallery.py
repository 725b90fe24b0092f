"""The template gallery (New) and its thumbnails: each example flow with its one-line description and a
small SVG drawn from the flow's own layout. Plain Python apart from :func:`template_gallery`."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nicegui import ui

from flowbuilder.errors import FlowbuilderError
from flowbuilder.examples import flows_dir
from flowbuilder.flow import Flow
from flowbuilder.formats.native import load_flow

THUMB_W, THUMB_H = 200, 90
CARD_W, CARD_H = 230.0, 80.0


@dataclass
class Template:
    """An example flow offered in the gallery."""

    path: Path
    name: str
    description: str
    nodes: int
    thumbnail: str  # inline SVG


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def thumbnail_svg(flow: Flow) -> str:
    """The flow's cards as small boxes and its edges as lines, scaled into a THUMB_W x THUMB_H box."""
    points = {n.id: flow.position(n.id) for n in flow.nodes}
    if not points:
        return f'<svg width="{THUMB_W}" height="{THUMB_H}" xmlns="http://www.w3.org/2000/svg"></svg>'
    xs = [p.x for p in points.values()]
    ys = [p.y for p in points.values()]
    left, top = min(xs), min(ys)
    width, height = max(xs) - left + CARD_W, max(ys) - top + CARD_H
    scale = min((THUMB_W - 8) / width, (THUMB_H - 8) / height)

    def box(node_id: str) -> tuple[float, float, float, float]:
        p = points[node_id]
        return 4 + (p.x - left) * scale, 4 + (p.y - top) * scale, CARD_W * scale, CARD_H * scale

    parts = []
    for edge in flow.edges:
        if edge.source in points and edge.target in points:
            sx, sy, sw, sh = box(edge.source)
            tx, ty, _, th = box(edge.target)
            parts.append(
                f'<line x1="{sx + sw:.1f}" y1="{sy + sh / 2:.1f}" x2="{tx:.1f}" y2="{ty + th / 2:.1f}" '
                'stroke="#94a3b8" stroke-width="1"/>'
            )
    for node_id in points:
        x, y, w, h = box(node_id)
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="2" fill="#fff" stroke="#2563eb"/>'
        )
    return (
        f'<svg width="{THUMB_W}" height="{THUMB_H}" viewBox="0 0 {THUMB_W} {THUMB_H}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def templates(folder: Path | None = None) -> list[Template]:
    folder = folder or flows_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            flow = load_flow(path)
        except FlowbuilderError:
            continue  # a broken example must not hide the others
        found.append(
            Template(
                path, flow.name or path.stem, first_sentence(flow.description), len(flow.nodes), thumbnail_svg(flow)
            )
        )
    return found


def template_gallery(on_blank: Callable[[], None], on_template: Callable[[Path], object], warning: str = "") -> None:
    """New: a blank flow or one of the example flows."""
    with ui.dialog() as dialog, ui.card().classes("w-[52rem] max-w-full fb-gallery"):
        ui.label("New flow").classes("text-h6")

        def pick(action: Callable[[], object]) -> None:
            dialog.close()
            action()

        if warning:
            ui.label(warning).classes("text-sm text-warning fb-discard-warning")
        with ui.element("div").classes("w-full fb-gallery-grid"):
            with (
                ui.card()
                .classes("fb-template cursor-pointer")
                .props("flat bordered")
                .on("click", lambda: pick(on_blank))
                .mark("template-blank")
            ):
                ui.html(
                    f'<svg width="{THUMB_W}" height="{THUMB_H}"><rect x="4" y="4" width="{THUMB_W - 8}" '
                    f'height="{THUMB_H - 8}" rx="6" fill="none" stroke="#cbd5e1" stroke-dasharray="5 4"/></svg>',
                    sanitize=False,
                )
                ui.label("Blank flow").classes("text-weight-medium")
                ui.label("Start from an empty canvas.").classes("text-xs text-grey-7")
            for template in templates():
                with (
                    ui.card()
                    .classes("fb-template cursor-pointer")
                    .props("flat bordered")
                    .on("click", lambda _, t=template: pick(lambda: on_template(t.path)))
                    .mark(f"template-{template.path.stem}")
                ):
                    ui.html(template.thumbnail, sanitize=False)
                    ui.label(template.name).classes("text-weight-medium")
                    ui.label(html.unescape(template.description)).classes("text-xs text-grey-7 fb-template-desc")
                    ui.label(f"{template.nodes} nodes").classes("text-[10px] text-grey-6")
        ui.button("Cancel", on_click=dialog.close).props("flat")
    dialog.open()


GALLERY_CSS = """
.fb-gallery-grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 10px; }
.fb-template { padding: 8px; gap: 4px; }
.fb-template:hover { border-color: #2563eb; background: #eff6ff; }
.fb-template-desc { display: -webkit-box; -webkit-line-clamp: 3; -webkit-box-orient: vertical; overflow: hidden; }
"""
