"""Rebuild the sample documents: ``data/qa-handbook/`` (a QA team's mixed folder) from the Markdown pages in
``data/qa-handbook-md/``, and ``data/VWO_500_Test_Cases.xlsx`` (the demo CSV as a workbook).

The ten pages were written for this project (a made-up parcel-tracking product, ShipLane), so the folder has a
licence-clean origin; the questions in ``data/questions/qa_handbook.jsonl`` were written apart from the pages,
worded as a tester would ask. Each page is turned into the format a team would keep it in, by the tools that
write such files in real life rather than by the libraries that read them:

- pandoc (Debian ``pandoc``): .docx, .odt, .epub (one chapter per section), .pptx (one slide per section), .html
- LibreOffice (Debian ``libreoffice-writer-nogui``): a .docx written by Writer and an .htm saved by Writer
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
    "performance-testing": "odt",
    "accessibility": "epub",
    "onboarding": "pptx",
}
WRITER = {"release-checklist": "docx", "automation-guidelines": "htm"}
PLAIN = {"on-call": "txt"}


def pandoc(page: Path, out: Path, kind: str) -> None:
    args = ["pandoc", "-f", "markdown-smart", str(page), "-o", str(out)]
    if kind == "html":
        args += ["--standalone", "--metadata", f"pagetitle={page.stem}"]
    if kind == "epub":
        args += ["--epub-chapter-level=2", "--metadata", "title=Accessibility Checklist", "--metadata", "lang=en"]
    subprocess.run(args, check=True)


def writer(page: Path, out: Path, kind: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        html = Path(scratch) / "in" / f"{page.stem}.html"
        html.parent.mkdir()
        subprocess.run(["pandoc", "-f", "markdown-smart", str(page), "-s", "-o", str(html),
                        "--metadata", f"pagetitle={page.stem}"], check=True)  # fmt: skip
        target = {"docx": "docx:MS Word 2007 XML", "htm": "html:HTML (StarWriter)"}[kind]
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
    for stem, kind in PANDOC.items():
        pandoc(SOURCE / f"{stem}.md", TARGET / f"{stem}.{kind}", kind)
    for stem, kind in WRITER.items():
        writer(SOURCE / f"{stem}.md", TARGET / f"{stem}.{kind}", kind)
    for stem, kind in PLAIN.items():
        shutil.copyfile(SOURCE / f"{stem}.md", TARGET / f"{stem}.{kind}")
    for made in [*sorted(TARGET.iterdir()), workbook()]:
        print(f"{made.relative_to(ROOT)}  {made.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
