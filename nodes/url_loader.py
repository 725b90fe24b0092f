"""``loader.url``: fetch web pages as records (LangFlow's URL / WebBaseLoader), behind the egress check.

Each URL's origin is a destination the user must approve (the flow file chose it, so even this machine
needs approval), exactly like ``tool.http``. Redirects are not followed (one to another origin is an
error naming the target; one within the origin is followed up to a few hops), the body is capped while it
streams, HTML becomes readable text with the standard library's parser (scripts and styles dropped,
headings and paragraphs kept as line breaks), text and Markdown stay as they are, PDFs go through the
project's PDF reader.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypedDict
from urllib.parse import urljoin

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.data import Document
from flowbuilder.errors import EndpointError, NodeError
from flowbuilder.formats.adapters import Adapter, Local, Mappings
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Records
from flowbuilder.registry import register_node
from flowbuilder.trust.egress import Destination, parse_endpoint
from flowbuilder.trust.secrets import redact
from flowbuilder.trust.terminal import excerpt

_MAX_HOPS = 5
_SKIP = {"script", "style", "noscript", "template", "head", "svg"}
_BLOCKS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer", "main",
    "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "hr", "dd", "dt", "title", "nav", "aside",
}  # fmt: skip


class UrlLoaderConfig(BaseModel):
    """Settings of ``loader.url``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    urls: list[str] = Field(
        default_factory=list,
        description="Pages to load (http or https); each server must be approved before a run.",
    )
    max_bytes: int = Field(5_000_000, ge=1_000, le=200_000_000, description="Largest page body read, in bytes.")
    timeout_s: float = Field(30.0, gt=0, le=600, description="Seconds to wait for each server.")


class _TextParser(HTMLParser):
    """Readable text from HTML: no scripts or styles, a blank line around blocks, headings marked."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCKS:
            self.parts.append("\n\n" if tag != "br" else "\n")
            if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit() and not self._skip:
                self.parts.append("#" * int(tag[1]) + " ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines = [" ".join(line.split()) for line in "".join(self.parts).split("\n")]
        out: list[str] = []
        for line in lines:
            if line or (out and out[-1]):
                out.append(line)
        return "\n".join(out).strip()


def html_to_text(html: str) -> str:
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    return parser.text()


def _origin(url: str) -> str:
    if not url.lower().startswith(("http://", "https://")):
        raise EndpointError(f"{excerpt(url, 80)!r} is not an http or https URL")
    return parse_endpoint(url).origin


def fetch(url: str, max_bytes: int, timeout_s: float) -> tuple[bytes, str, str]:
    """``(body, content type, final url)``; :class:`NodeError` for a redirect off the origin, a status
    error, a body over ``max_bytes`` or a network failure."""
    import httpx

    origin = _origin(url)
    current = url
    with httpx.Client(timeout=timeout_s, follow_redirects=False) as client:
        for _ in range(_MAX_HOPS + 1):
            try:
                with client.stream("GET", current) as response:
                    if response.is_redirect:
                        target = urljoin(current, response.headers.get("location", ""))
                        try:
                            same = _origin(target) == origin
                        except EndpointError:
                            same = False
                        if not same:
                            shown = excerpt(redact(target), 120)
                            raise NodeError(
                                f"{url} redirects to {shown} (another server): not followed; use that URL "
                                "instead and approve its server"
                            )
                        current = target
                        continue
                    if response.status_code >= 400:
                        raise NodeError(f"{url} answered HTTP {response.status_code}: check the address")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > max_bytes:
                        raise NodeError(f"{url} is {int(declared)} bytes, over max_bytes={max_bytes}: raise max_bytes")
                    body = bytearray()
                    for chunk in response.iter_bytes():
                        body.extend(chunk)
                        if len(body) > max_bytes:
                            raise NodeError(f"{url} is over max_bytes={max_bytes}: raise max_bytes")
                    return bytes(body), response.headers.get("content-type", ""), current
            except httpx.HTTPError as exc:
                raise NodeError(f"{url} could not be fetched: {excerpt(redact(str(exc)), 160)}") from None
    raise NodeError(f"{url} redirects more than {_MAX_HOPS} times: use the final address")


def page_text(body: bytes, content_type: str, url: str) -> str:
    kind = content_type.split(";", 1)[0].strip().lower()
    charset = "utf-8"
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip('"')
    path = url.split("?", 1)[0].lower()
    if kind == "application/pdf" or (not kind and path.endswith(".pdf")):
        return _pdf_text(body, url)
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:2000].lower()):
        return html_to_text(text)
    if kind.startswith("text/") or kind in ("application/json", "application/xml", "") or "markdown" in kind:
        return text
    raise NodeError(f"{url} is {kind}, not a page, text or PDF: load another URL")


def _pdf_text(body: bytes, url: str) -> str:
    from flowbuilder.nodes.loaders import _pdf_pages

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "page.pdf"
        path.write_bytes(body)
        try:
            return "\n\n".join(_pdf_pages(path))
        except NodeError as exc:
            raise NodeError(f"{url}: {str(exc).removeprefix(path.name + ': ')}") from None


class PagesOut(TypedDict):
    """The output ports of ``loader.url``."""

    records: Annotated[Records, "One document per page (source = the URL)."]


@register_node
class UrlLoader(Node[UrlLoaderConfig, NoInputs, PagesOut]):
    """Fetch web pages (HTML, text, Markdown, PDF) as one record each; every server needs approval."""

    type_name = "loader.url"
    mappings: ClassVar[Mappings] = {
        "langflow": (
            # Web pages: loader.url fetches them behind the egress check (each server approved first); the
            # "url" hook carries the URLs. --local (offline) reads the run's file instead, as before.
            Adapter(
                "loader.url",
                "URL",
                also=("WebBaseLoader", "URLComponent"),
                display="URL",
                hook="url",
                export=False,
                local=Local(
                    "loader.file",
                    fixed=(("mode", "whole"),),
                    detail=" (offline: no page is fetched; save the page's text and give it as the run's file)",
                ),
                outputs={"records": "data"},
                out_aliases={
                    "text": "records",
                    "dataframe": "records",
                    "Document": "records",
                    "page_results": "records",
                },
                ignore=(
                    "urls",
                    "web_path",
                    "format",
                    "max_depth",
                    "prevent_outside",
                    "use_async",
                    "timeout",
                    "headers",
                    "filter_text_html",
                    "continue_on_failure",
                    "check_response_status",
                    "autoset_encoding",
                ),
            ),
        ),
        "flowise": (
            Adapter(
                "loader.url",
                "cheerioWebScraper",
                also=("playwrightWebScraper", "puppeteerWebScraper"),
                hook="url",
                outputs={"records": "document"},
                out_aliases={"text": "records"},
                ignore=(
                    "url",
                    "textSplitter",
                    "relativeLinksMethod",
                    "limit",
                    "selector",
                    "metadata",
                    "omitMetadataKeys",
                    "waitUntilGoToOption",
                    "waitForSelector",
                ),
            ),
        ),
    }
    display_name = "Read Web Page"
    aliases = ("URL", "WebBaseLoader", "web page", "url loader")
    category = "Loaders"
    Config = UrlLoaderConfig
    cacheable = False  # a live page

    @classmethod
    def destinations(cls, config: UrlLoaderConfig) -> list[Destination]:
        seen: list[str] = []
        for url in config.urls:
            if not url.strip():
                continue
            try:
                origin = _origin(url.strip())
            except EndpointError as exc:
                raise ValueError(str(exc)) from None
            if origin not in seen:
                seen.append(origin)
        return [Destination("urls", origin, "http", always_ask=True, kind=cls.type_name) for origin in seen]

    @classmethod
    def config_problems(cls, config: UrlLoaderConfig) -> list[tuple[str | None, str]]:
        if not any(u.strip() for u in config.urls):
            return [("urls", "'urls' is empty: give the pages to load, e.g. https://example.com/docs")]
        return []

    def run(self, inputs: NoInputs, ctx: RunContext) -> PagesOut:
        c = self.config
        urls = [u.strip() for u in c.urls if u.strip()]
        if not urls:
            raise NodeError("'urls' is empty: give the pages to load, e.g. https://example.com/docs")
        records: list[Document] = []
        pages: list[dict[str, Any]] = []
        for url in urls:
            try:
                body, content_type, final = fetch(url, c.max_bytes, c.timeout_s)
            except EndpointError as exc:
                raise NodeError(f"'urls': {exc}") from None
            text = page_text(body, content_type, final)
            kind = content_type.split(";", 1)[0].strip() or "unknown"
            records.append(Document(text=text, metadata={"source": url, "content_type": kind, "record_id": url}))
            pages.append({"url": url, "bytes": len(body), "content_type": kind, "chars": len(text)})
        ctx.details["pages"] = pages
        return {"records": records}

    def summarize(self, outputs: Mapping[str, Any]) -> str:
        records = outputs.get("records") or []
        return f"{len(records)} page{'s' if len(records) != 1 else ''} ({sum(len(r.text) for r in records)} chars)"
