"""loader.url: real fetches from a 127.0.0.1 http.server, behind the egress check (no mocks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.errors import FlowValidationError
from flowbuilder.executor import Executor
from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore
from tests.fakes.http import JSONHandler, LoopbackServer

PDF_PATH = Path(__file__).resolve().parents[2] / "data" / "VWO_Login_Dashboard_PRD.pdf"
PAGE = (
    "<html><head><title>Guide</title><style>body{color:red}</style><script>var secret=1</script></head>"
    "<body><h1>Returns</h1><p>Items can be <b>returned</b> within 30 days.</p><p>Keep the receipt.</p></body></html>"
)


class SiteHandler(JSONHandler):
    def _dispatch(self, method: str) -> None:
        self.fake.paths.append(self.path)
        if self.path == "/page.html":
            self._send(PAGE.encode(), "text/html; charset=utf-8")
        elif self.path == "/notes.txt":
            self._send(b"plain notes\nline two", "text/plain")
        elif self.path == "/doc.pdf":
            self._send(PDF_PATH.read_bytes(), "application/pdf")
        elif self.path == "/broken.pdf":
            self._send(b"this is not a pdf at all", "application/pdf")
        elif self.path == "/away":
            self.send_response(302)
            self.send_header("Location", f"{self.fake.other}/page.html")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/big":
            # no Content-Length: the cap must hold while streaming
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(64):
                self.wfile.write(b"x" * 1024)
            self.close_connection = True
        else:
            self._send(b"no", "text/plain", 404)

    def _send(self, data: bytes, content_type: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Site(LoopbackServer):
    def __init__(self, other: str = "http://127.0.0.1:9") -> None:
        super().__init__()
        self.paths: list[str] = []
        self.other = other

    def handler_class(self) -> type[JSONHandler]:
        return SiteHandler


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as other, Site(other.url) as server:
        yield server


def resolver(tmp_path: Path, *approved: tuple[str, str]) -> CredentialResolver:
    return CredentialResolver({}, store=CredentialStore(tmp_path / "c.json"), environ={}, approved=list(approved))


def flow(*urls: str, max_bytes: int = 5_000_000) -> Flow:
    return Flow(nodes=[NodeSpec(id="web", type="loader.url", config={"urls": list(urls), "max_bytes": max_bytes})])


def test_refused_until_approved_then_loads_the_page_text(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = flow(f"{site.url}/page.html", f"{site.url}/notes.txt")
    path = tmp_path / "flow.json"
    path.write_text(f.model_dump_json())
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[untrusted-endpoint] node 'web'" in out and site.url in out
    with pytest.raises(FlowValidationError, match=r"untrusted-endpoint\] node 'web'"):
        Executor(resolver=resolver(tmp_path), data_dir=tmp_path).run(f)
    assert site.paths == []  # nothing was fetched before approval

    assert main(["validate", str(path), "--allow-endpoint", f"loader.url={site.url}"]) == 0
    run = Executor(resolver=resolver(tmp_path, ("loader.url", site.url)), data_dir=tmp_path).run(f)
    assert run.ok, [r.error for r in run.failed()]
    page, notes = run.results["web"].outputs["records"]
    assert page.text == "# Returns\n\nItems can be returned within 30 days.\n\nKeep the receipt."
    assert "secret" not in page.text and "color" not in page.text
    assert page.metadata["source"] == f"{site.url}/page.html" and page.metadata["content_type"] == "text/html"
    assert notes.text == "plain notes\nline two" and notes.metadata["content_type"] == "text/plain"


def test_a_redirect_to_another_server_and_the_size_cap_are_clear_errors(site: Site, tmp_path: Path) -> None:
    approved = resolver(tmp_path, ("loader.url", site.url))
    run = Executor(resolver=approved, data_dir=tmp_path).run(flow(f"{site.url}/away"))
    [failed] = run.failed()
    assert "'web'" in str(failed.error)
    assert f"redirects to {site.other}/page.html" in str(failed.error) and "approve" in str(failed.error)
    assert "\n" not in str(failed.error)

    run = Executor(resolver=approved, data_dir=tmp_path).run(flow(f"{site.url}/big", max_bytes=10_000))
    [failed] = run.failed()
    assert "over max_bytes=10000" in str(failed.error) and f"{site.url}/big" in str(failed.error)


def test_a_pdf_goes_through_the_pdf_reader(site: Site, tmp_path: Path) -> None:
    approved = resolver(tmp_path, ("loader.url", site.url))
    run = Executor(resolver=approved, data_dir=tmp_path).run(flow(f"{site.url}/doc.pdf"))
    assert run.ok, [r.error for r in run.failed()]
    [doc] = run.results["web"].outputs["records"]
    assert (
        doc.text.startswith("Product Requirements Document: VWO") and doc.metadata["content_type"] == "application/pdf"
    )

    run = Executor(resolver=approved, data_dir=tmp_path).run(flow(f"{site.url}/broken.pdf"))
    [failed] = run.failed()
    assert f"{site.url}/broken.pdf: not a readable PDF" in str(failed.error) and "page.pdf" not in str(failed.error)
