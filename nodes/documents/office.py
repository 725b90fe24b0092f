"""Word (.docx), PowerPoint (.pptx) and OpenDocument text (.odt) as Markdown-like text.

- .docx: mammoth (semantic HTML from Word's styles: headings, lists, tables, footnotes), then
  :func:`~flowbuilder.nodes.documents.markdown.html_to_markdown`. Images become their alt text; linked files are
  never opened (mammoth's ``external_file_access`` stays off).
- .pptx: python-pptx, one section per slide: the title as a heading, body placeholders as ``-`` bullets with their
  levels, other text boxes as paragraphs, tables as pipe tables, then the speaker notes.
- .odt: odfdo's Markdown export (headings, lists, tables).

Each reader returns :class:`Section` items; the loader turns them into records.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowbuilder.errors import NodeError
from flowbuilder.nodes.documents.markdown import html_to_markdown, tidy
from flowbuilder.nodes.documents.safety import check_zip, read_member

_STYLE_MAP = "p[style-name='Title'] => h1:fresh\np[style-name='Subtitle'] => h2:fresh"
_HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


@dataclass
class Section:
    """A piece of a document that becomes one record: its text and the metadata only it has (slide, heading)."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def unreadable(path: Path, kind: str, exc: BaseException) -> NodeError:
    """The one line for a file a library could not parse (its error type and first line say why)."""
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return NodeError(f"{path.name}: not a readable {kind} ({detail}); check that the file is complete and valid.")


def first_heading(text: str) -> str:
    match = _HEADING.search(text)
    return match.group(1).strip() if match else ""


def read_docx(path: Path) -> list[Section]:
    check_zip(path, "Word document")
    import mammoth

    drop_image = mammoth.images.img_element(lambda image: {"src": ""})
    try:
        with path.open("rb") as handle:
            result = mammoth.convert_to_html(
                handle, style_map=_STYLE_MAP, convert_image=drop_image, include_embedded_style_map=False
            )
        text = html_to_markdown(result.value)
    except NodeError:
        raise
    except Exception as exc:  # a parser meets a broken file in any of its own ways; one line says which file
        raise unreadable(path, "Word document", exc) from None
    return [Section(text)]


def read_odt(path: Path) -> list[Section]:
    check_zip(path, "OpenDocument text")
    _refuse_encrypted_odf(path)
    from odfdo import Document as OdfDocument

    try:
        document = OdfDocument(str(path))
        if "opendocument.text" not in (document.mimetype or ""):
            raise NodeError(f"{path.name}: not an OpenDocument text (it is {document.mimetype or 'unknown'}).")
        markdown = document.to_markdown()
    except NodeError:
        raise
    except Exception as exc:  # see read_docx
        raise unreadable(path, "OpenDocument text", exc) from None
    return [Section(tidy(markdown if isinstance(markdown, str) else ""))]


def _refuse_encrypted_odf(path: Path) -> None:
    manifest = read_member(path, "OpenDocument text", "META-INF/manifest.xml") or b""
    if b"encryption-data" in manifest:
        raise NodeError(f"{path.name}: the document is password-protected; save a copy without a password.")


def read_pptx(path: Path) -> list[Section]:
    check_zip(path, "PowerPoint presentation")
    from pptx import Presentation

    try:
        presentation = Presentation(str(path))
        sections = []
        for number, slide in enumerate(presentation.slides, 1):
            title, body = _slide_text(slide)
            text = "\n\n".join(part for part in ([f"# {title}"] if title else []) + body if part.strip())
            if text.strip():
                sections.append(Section(text, {"slide": number, "heading": title}))
    except NodeError:
        raise
    except Exception as exc:  # see read_docx
        raise unreadable(path, "PowerPoint presentation", exc) from None
    return sections


def _slide_text(slide: Any) -> tuple[str, list[str]]:
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    body: list[str] = []
    for shape in _reading_order(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        body.extend(_shape_text(shape))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            body.append("Notes: " + notes.text.strip())
    return title, body


def _reading_order(shapes: Any) -> list[Any]:
    return sorted(shapes, key=lambda shape: (shape.top or 0, shape.left or 0))


def _shape_text(shape: Any) -> Iterator[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(shape.shapes):
            yield from _shape_text(inner)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        yield _table_markdown([[cell.text for cell in row.cells] for row in shape.table.rows])
        return
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return
    bulleted = shape.is_placeholder and shape.placeholder_format.type in (
        PP_PLACEHOLDER.BODY,
        PP_PLACEHOLDER.OBJECT,
    )
    lines = []
    for paragraph in shape.text_frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if text:
            lines.append(("  " * paragraph.level + "- " + text) if bulleted else text)
    if lines:
        yield "\n".join(lines)


def _table_markdown(rows: list[list[str]]) -> str:
    """A pipe table, the first row as the header."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    cells = [[" ".join(cell.split()).replace("|", "/") for cell in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(cells[0]) + " |", "| " + " | ".join(["---"] * width) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)
