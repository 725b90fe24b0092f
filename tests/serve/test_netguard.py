"""NetGuard: Host/Origin checks (DNS rebinding) and the bearer token, on a real Starlette app."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from flowbuilder.errors import ServeError
from flowbuilder.trust.netguard import NetGuard, check_bind, is_loopback, resolves_to_loopback, split_host_header

FRAME = "frame-ancestors 'none'"


def _client(**guard: object) -> TestClient:
    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hello")

    app = Starlette(routes=[Route("/", hello)])
    app.add_middleware(NetGuard, **guard)  # type: ignore[arg-type]
    return TestClient(app, base_url="http://127.0.0.1:8000")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_names(host: str) -> None:
    assert is_loopback(host)


def test_a_localhost_subdomain_counts_only_when_it_resolves_to_loopback() -> None:
    # by its spelling alone it could be resolved by DNS to another machine
    assert is_loopback("app.localhost") == resolves_to_loopback("app.localhost")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "example.com", "::", ""])
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_check_bind_refuses_public_host_without_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "s3cret")
    with pytest.raises(ServeError, match=r"0\.0\.0\.0 without a token.*--token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ServeError):
        check_bind("192.168.1.5", "")


def test_host_header_forms() -> None:
    assert split_host_header("localhost:8080") == "localhost"
    assert split_host_header("[::1]:8080") == "::1"
    assert split_host_header("Example.COM.") == "example.com"


def test_loopback_host_passes_and_rebinding_host_is_refused() -> None:
    client = _client()
    assert client.get("/").text == "hello"
    assert client.get("/", headers={"host": "localhost:8000"}).status_code == 200
    refused = client.get("/", headers={"host": "evil.example:8000"})
    assert refused.status_code == 403
    assert "DNS rebinding" in refused.json()["error"]


def test_origin_is_checked_when_present() -> None:
    client = _client()
    assert client.get("/", headers={"origin": "http://127.0.0.1:8000"}).status_code == 200
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    assert client.get("/", headers={"origin": "null"}).status_code == 403


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:3000",  # another port on the same name: another site
        "http://127.0.0.1:3000",
        "https://127.0.0.1:8000",  # another scheme
        "http://localhost:8000",  # another name for this machine is another origin for a browser
        "http://127.0.0.1",
    ],
)
def test_origin_is_compared_on_scheme_host_and_port(origin: str) -> None:
    refused = _client().get("/", headers={"origin": origin})
    assert refused.status_code == 403 and "Origin" in refused.json()["error"]


def test_the_page_own_origin_passes() -> None:
    client = _client()
    assert client.get("/", headers={"origin": "http://127.0.0.1:8000"}).text == "hello"
    assert client.get("/", headers={"origin": "http://localhost:8000", "host": "localhost:8000"}).text == "hello"
    assert client.get("/").text == "hello"  # no Origin: not a cross-site browser request


def test_every_response_forbids_framing() -> None:
    client = _client(token="t0ken-for-frames")
    for response in (
        client.get("/", headers={"authorization": "Bearer t0ken-for-frames"}),
        client.get("/"),  # 401
        client.get("/", headers={"host": "evil.example"}),  # 403
        client.get("/nowhere", headers={"authorization": "Bearer t0ken-for-frames"}),  # 404
    ):
        assert response.headers["content-security-policy"] == FRAME
        assert response.headers["x-frame-options"] == "DENY"


def test_token_required_when_configured_and_never_echoed() -> None:
    client = _client(token="s3cret-token")
    missing = client.get("/")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    wrong = client.get("/", headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert "s3cret" not in wrong.text and "nope" not in wrong.text
    assert client.get("/", headers={"authorization": "Bearer s3cret-token"}).text == "hello"


def test_token_cookie_when_enabled() -> None:
    client = _client(token="t0k", cookie_name="fb_token")
    assert client.get("/", headers={"cookie": "fb_token=t0k"}).status_code == 200
    assert client.get("/", headers={"cookie": "fb_token=bad"}).status_code == 401
    assert _client(token="t0k").get("/", headers={"cookie": "fb_token=t0k"}).status_code == 401


def test_wildcard_bind_needs_token_and_checks_origin_against_host() -> None:
    with pytest.raises(ServeError):
        NetGuard(PlainTextResponse("x"), host="0.0.0.0")
    client = _client(host="0.0.0.0", token="t")
    auth = {"authorization": "Bearer t"}
    assert client.get("/", headers={**auth, "host": "myhost.lan:8000"}).status_code == 200
    same = {**auth, "host": "myhost.lan:8000", "origin": "http://myhost.lan:8000"}
    assert client.get("/", headers=same).status_code == 200
    cross = {**auth, "host": "myhost.lan:8000", "origin": "http://evil.example"}
    assert client.get("/", headers=cross).status_code == 403


def test_named_host_bind_allows_its_name() -> None:
    client = _client(host="192.168.1.5", token="t", allowed_hosts=["box.lan"])
    auth = {"authorization": "Bearer t"}
    assert client.get("/", headers={**auth, "host": "192.168.1.5:8000"}).status_code == 200
    assert client.get("/", headers={**auth, "host": "box.lan"}).status_code == 200
    assert client.get("/", headers={**auth, "host": "other.lan"}).status_code == 403


def test_a_browser_logs_in_once_with_the_token_in_the_address() -> None:
    guard = NetGuard(PlainTextResponse("page"), host="0.0.0.0", token="s3cret", cookie_name="fb")
    client = TestClient(guard, base_url="http://lan-host:8080")
    assert client.get("/").status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    login = client.get("/?token=s3cret&x=1", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/?x=1"
    assert "HttpOnly" in login.headers["set-cookie"] and "s3cret" not in login.headers["location"]
    assert client.get("/").text == "page"  # the cookie now carries the token


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_the_builder_may_be_linked_to_but_not_fetched_from_another_site(site: str) -> None:
    """``navigations=True`` (the builder): a followed link (top-level GET navigation) opens the page; anything
    else another site makes a browser send (an image, a fetch, a frame, a form POST) is refused."""
    client = _client(navigations=True)
    link = {"sec-fetch-site": site, "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}
    assert client.get("/", headers=link).text == "hello"
    assert client.get("/", headers={**link, "sec-fetch-dest": "iframe"}).status_code == 403
    assert client.get("/", headers={"sec-fetch-site": site, "sec-fetch-mode": "no-cors"}).status_code == 403
    assert client.post("/", headers=link).status_code == 403
    assert _client().get("/", headers=link).status_code == 403  # serve: no navigations either
