"""Rebuild the sample documents: ``data/qa-handbook/`` (a QA team's mixed folder) from the Markdown pages in
``data/qa-handbook-md/``, and ``data/VWO_500_Test_Cases.xlsx`` (the demo CSV as a workbook).

The ten pages were written for this project (a made-up parcel-tracking product, ShipLane), so the folder has a
licence-clean origin; the questions in ``data/questions/qa_handbook.jsonl`` were written apart from the pages,
worded as a tester would ask. Each page is turned into the format a team would keep it in, by the tools that
write such files in real life rather than by the libraries that read them:

- pandoc (Debian ``pandoc``): .docx and .pptx (with python-docx's and python-pptx's MIT-licensed blank templates as
  reference documents, so none of pandoc's own GPL data files end up in them), .epub (one chapter per section) and
  .html, both with the templates and style sheet below (written here, not pandoc's defaults)
- LibreOffice (Debian ``libreoffice-writer-nogui``): a .docx, an .odt and an .htm saved by Writer
- plain text: the on-call notes stay a .txt

The workbook is written by XlsxWriter (as Excel writes one: shared strings), every cell a string as in the CSV,
with the test cases on the first sheet and a per-module summary on a second sheet (which a load must not mix in).

Run: ``python scripts/make_document_samples.py`` (needs pandoc and soffice on PATH). The output is committed;
nothing at run time or in CI calls this script.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "data" / "qa-handbook-md"
TARGET = ROOT / "data" / "qa-handbook"

PANDOC = {
    "test-strategy": "docx",
    "bug-triage": "docx",
    "environments": "html",
    "test-data": "html",
    "accessibility": "epub",
    "onboarding": "pptx",
}
WRITER = {"release-checklist": "docx", "performance-testing": "odt", "automation-guidelines": "htm"}
PLAIN = {"on-call": "txt"}

HTML_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>$pagetitle$</title>
<link rel="stylesheet" href="/static/wiki.css">
</head>
<body>
<nav><a href="/">QA wiki</a> / <a href="/handbook">Handbook</a></nav>
<main>
$body$
</main>
<footer>Last edited by the QA team.</footer>
</body>
</html>
"""
DOCUMENT_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>$pagetitle$</title></head>
<body>
$body$
</body></html>
"""
EPUB_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" xml:lang="en">
<head><meta charset="utf-8" /><title>$pagetitle$</title>
$for(css)$<link rel="stylesheet" type="text/css" href="$css$" />$endfor$
</head>
<body>
$body$
</body>
</html>
"""
EPUB_CSS = "body { font-family: serif; margin: 5%; } h1, h2 { font-family: sans-serif; }\n"


def pandoc(page: Path, out: Path, kind: str, scratch: Path) -> None:
    args = ["pandoc", "-f", "markdown-smart", str(page), "-o", str(out)]
    if kind == "html":
        template = scratch / "page.html"
        template.write_text(HTML_TEMPLATE, encoding="utf-8")
        args += ["--standalone", f"--template={template}", "--metadata", f"pagetitle={page.stem}"]
    elif kind == "epub":
        template, css = scratch / "chapter.xhtml", scratch / "book.css"
        template.write_text(EPUB_TEMPLATE, encoding="utf-8")
        css.write_text(EPUB_CSS, encoding="utf-8")
        args += ["--epub-chapter-level=2", f"--template={template}", f"--css={css}"]
        args += ["--metadata", "title=Accessibility Checklist", "--metadata", "lang=en"]
    elif kind in ("docx", "pptx"):
        args += [f"--reference-doc={reference(kind, scratch)}"]
    subprocess.run(args, check=True)


def reference(kind: str, scratch: Path) -> Path:
    """A blank document from python-docx / python-pptx (MIT): the styles pandoc fills."""
    target = scratch / f"reference.{kind}"
    if not target.exists():
        if kind == "docx":
            import docx

            docx.Document().save(str(target))
        else:
            import pptx

            deck = pptx.Presentation()
            # pandoc fills the reference deck's slide list, which a blank python-pptx deck lacks: add a slide and
            # take it out again, leaving the (empty) list
            deck.slides.add_slide(deck.slide_layouts[6])
            slides = deck.slides._sldIdLst
            deck.part.drop_rel(slides[0].rId)
            slides.remove(slides[0])
            deck.save(str(target))
    return target


def writer(page: Path, out: Path, kind: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        html = Path(scratch) / "in" / f"{page.stem}.html"
        html.parent.mkdir()
        template = Path(scratch) / "page.html"  # a document, not a wiki page: no navigation or footer
        template.write_text(DOCUMENT_TEMPLATE, encoding="utf-8")
        subprocess.run(["pandoc", "-f", "markdown-smart", str(page), "-s", f"--template={template}", "-o", str(html),
                        "--metadata", f"pagetitle={page.stem}"], check=True)  # fmt: skip
        target = {"docx": "docx:MS Word 2007 XML", "odt": "odt:writer8", "htm": "html:HTML (StarWriter)"}[kind]
        # Writer opens HTML as a web document; the writer_web filters save it as a Writer document
        filter_in = "--infilter=HTML (StarWriter)"
        subprocess.run(["soffice", "--headless", filter_in, "--convert-to", target, "--outdir", scratch, str(html)],
                       check=True, capture_output=True)  # fmt: skip
        made = Path(scratch) / f"{page.stem}.{'html' if kind == 'htm' else kind}"
        shutil.copyfile(made, out)


def workbook() -> Path:
    import xlsxwriter

    source = ROOT / "data" / "VWO_500_Test_Cases.csv"
    target = source.with_suffix(".xlsx")
    with source.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    book = xlsxwriter.Workbook(str(target))
    cases = book.add_worksheet("Test cases")
    bold = book.add_format({"bold": True})
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cases.write_string(r, c, value, bold if r == 0 else None)
    summary = book.add_worksheet("Summary")
    modules: dict[str, int] = {}
    for row in rows[1:]:
        module = row[0].split("-")[0]
        modules[module] = modules.get(module, 0) + 1
    summary.write_row(0, 0, ["Module", "Test cases"], bold)
    for r, (module, count) in enumerate(sorted(modules.items()), start=1):
        summary.write_string(r, 0, module)
        summary.write_number(r, 1, count)
    book.close()
    return target


def main() -> int:
    for tool in ("pandoc", "soffice"):
        if shutil.which(tool) is None:
            print(f"{tool} is not on PATH (apt-get install pandoc libreoffice-writer-nogui)", file=sys.stderr)
            return 1
    TARGET.mkdir(exist_ok=True)
    for old in TARGET.iterdir():
        old.unlink()
    with tempfile.TemporaryDirectory() as scratch:
        for stem, kind in PANDOC.items():
            pandoc(SOURCE / f"{stem}.md", TARGET / f"{stem}.{kind}", kind, Path(scratch))
    for stem, kind in WRITER.items():
        writer(SOURCE / f"{stem}.md", TARGET / f"{stem}.{kind}", kind)
    for stem, kind in PLAIN.items():
        shutil.copyfile(SOURCE / f"{stem}.md", TARGET / f"{stem}.{kind}")
    for made in [*sorted(TARGET.iterdir()), workbook()]:
        print(f"{made.relative_to(ROOT)}  {made.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
