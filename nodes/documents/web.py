"""Web pages (.html, .htm) and e-books (.epub) as Markdown-like text.

- .html/.htm: BeautifulSoup with lxml (the encoding from the BOM or ``<meta charset>``, else detected), then
  :func:`~flowbuilder.nodes.documents.markdown.html_to_markdown`. A page whose body has no ``<h1>`` gets its
  ``<title>`` as the first heading, so a chunk still says which page it came from.
- .epub: ebooklib, one section per chapter in reading (spine) order, each chapter's XHTML converted the same way;
  ``heading`` is the chapter's first heading. DRM-protected books (``META-INF/encryption.xml``) are refused.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from flowbuilder.errors import NodeError
from flowbuilder.nodes.documents.markdown import html_to_markdown
from flowbuilder.nodes.documents.office import Section, first_heading, unreadable
from flowbuilder.nodes.documents.safety import check_whole_size, check_zip, member_names


def read_html(path: Path) -> list[Section]:
    check_whole_size(path, "web page")
    from bs4 import BeautifulSoup

    try:
        soup = BeautifulSoup(path.read_bytes(), "lxml")
        title_tag = soup.find("title")
        title = " ".join(title_tag.get_text().split()) if title_tag is not None else ""
        text = html_to_markdown(soup)
    except NodeError:
        raise
    except Exception as exc:  # a parser meets a broken file in any of its own ways; one line says which file
        raise unreadable(path, "web page", exc) from None
    if title and not text.lstrip().startswith("# ") and "\n# " not in f"\n{text}":
        text = f"# {title}\n\n{text}" if text else ""
    return [Section(text)]


def read_epub(path: Path) -> list[Section]:
    check_zip(path, "e-book")
    if "META-INF/encryption.xml" in member_names(path, "e-book"):
        raise NodeError(f"{path.name}: the e-book is DRM-protected (encrypted); only DRM-free EPUBs can be read.")
    from ebooklib import epub

    try:
        with warnings.catch_warnings():  # ebooklib warns about options it will change in later versions
            warnings.simplefilter("ignore")
            book = epub.read_epub(str(path), options={"ignore_ncx": True})
        sections: list[Section] = []
        for idref, _linear in book.spine:
            item = book.get_item_with_id(idref)
            if item is None or not item.get_name().lower().endswith((".xhtml", ".html", ".htm", ".xml")):
                continue
            text = html_to_markdown(item.get_content())
            if text.strip():
                sections.append(Section(text, {"chapter": len(sections) + 1, "heading": first_heading(text)}))
    except NodeError:
        raise
    except Exception as exc:  # see read_html
        raise unreadable(path, "e-book", exc) from None
    return sections
