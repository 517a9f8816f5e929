"""The inspector's protections: loopback by default, token, Host allow-list, CSRF, cross-site, read-only, CSP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import memory_retrievers.ui as ui_package
from memory_retrievers import ConfigError, MemoryStore
from memory_retrievers.ui import create_app, serve
from memory_retrievers.ui.security import SECURITY_HEADERS, check_bind, is_loopback

from .conftest import csrf_of, run_scan


def _alice_id(store: MemoryStore) -> str:
    return next(m.id for m in store.list("alice") if "dog" in m.text)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_token(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "example.org", "::"])
def test_a_non_loopback_bind_without_a_token_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="token"):
        check_bind(host, None)
    check_bind(host, "s3cret")


def test_serve_refuses_a_public_bind_without_a_token_before_opening_anything(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"token=\.\.\. \(--token T\)"):
        serve(str(tmp_path / "nothing"), host="0.0.0.0")
    assert not (tmp_path / "nothing").exists()


def test_an_empty_token_is_refused(ui_store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="token"):
        create_app(ui_store, token="")


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    for url in ("/", "/ns/alice", "/ns/nope", "/?page=x", "/static/app.css"):
        response = client.get(url)
        csp = response.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
    assert SECURITY_HEADERS["content-security-policy"].startswith("default-src 'self'")


def test_a_foreign_host_header_is_rejected(client: TestClient) -> None:
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/", headers={"host": "localhost:8765"}).status_code == 200


def test_allowed_hosts_extend_the_host_allow_list(ui_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    client = make_client(ui_store, allowed_hosts=["inspector.internal"])
    assert client.get("/", headers={"host": "inspector.internal:8765"}).status_code == 200
    assert client.get("/", headers={"host": "other.internal"}).status_code == 400


def test_a_token_in_the_query_sets_a_strict_cookie_and_redirects_without_it(ui_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    client = make_client(ui_store, token="s3cret")
    first = client.get("/ns/alice?token=s3cret&page=1")
    assert first.status_code == 303
    assert first.headers["location"] == "/ns/alice?page=1"
    cookie = first.headers["set-cookie"]
    assert "mr_ui_token=s3cret" in cookie and "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
    assert client.get("/ns/alice?page=1").status_code == 200  # the cookie now carries it


def test_without_the_token_the_answer_is_401_saying_how(ui_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    client = make_client(ui_store, token="s3cret")
    response = client.get("/")
    assert response.status_code == 401
    assert "?token=" in response.text and "Authorization: Bearer" in response.text
    assert client.get("/?token=wrong").status_code == 401
    assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/", headers={"cookie": "mr_ui_token=wrong"}).status_code == 401


def test_a_bearer_token_is_accepted(ui_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    client = make_client(ui_store, token="s3cret")
    assert client.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200


def test_a_post_without_the_csrf_token_is_403_and_changes_nothing(ui_store: MemoryStore, client: TestClient) -> None:
    memory_id = _alice_id(ui_store)
    response = client.post(f"/ns/alice/m/{memory_id}/pin", data={})
    assert response.status_code == 403
    response = client.post(f"/ns/alice/m/{memory_id}/pin", data={"csrf_token": "guess"})
    assert response.status_code == 403
    response = client.post(f"/ns/alice/m/{memory_id}/forget", data={"csrf_token": "guess", "confirm": memory_id[:8]})
    assert response.status_code == 403
    memory = ui_store.get(memory_id, namespace="alice")
    assert memory.pinned is False


def test_a_post_from_a_foreign_origin_is_403_even_with_csrf(ui_store: MemoryStore, client: TestClient) -> None:
    memory_id = _alice_id(ui_store)
    data = {"csrf_token": csrf_of(client)}
    response = client.post(f"/ns/alice/m/{memory_id}/pin", data=data, headers={"origin": "http://evil.example"})
    assert response.status_code == 403
    response = client.post(f"/ns/alice/m/{memory_id}/pin", data=data, headers={"origin": "http://127.0.0.1:9999"})
    assert response.status_code == 403
    assert ui_store.get(memory_id, namespace="alice").pinned is False
    same = client.post(f"/ns/alice/m/{memory_id}/pin", data=data, headers={"origin": "http://127.0.0.1:8765"})
    assert same.status_code == 303
    assert ui_store.get(memory_id, namespace="alice").pinned is True


def test_a_cross_site_fetch_is_403(ui_store: MemoryStore, client: TestClient) -> None:
    memory_id = _alice_id(ui_store)
    data = {"csrf_token": csrf_of(client)}
    response = client.post(f"/ns/alice/m/{memory_id}/pin", data=data, headers={"sec-fetch-site": "cross-site"})
    assert response.status_code == 403
    assert ui_store.get(memory_id, namespace="alice").pinned is False


def test_read_only_refuses_every_post_and_renders_no_action(ui_store: MemoryStore, make_client) -> None:  # type: ignore[no-untyped-def]
    client = make_client(ui_store, read_only=True)
    memory_id = _alice_id(ui_store)
    csrf = csrf_of(client)
    page = client.get(f"/ns/alice/m/{memory_id}")
    assert page.status_code == 200 and "Rex" in page.text
    for marker in ("action-pin", "action-unpin", "edit-form", "action-forget", '<form method="post"', "csrf_token"):
        assert marker not in page.text
    namespace_page = client.get("/ns/alice")
    assert "action-forget-namespace" not in namespace_page.text and "action-purge" not in namespace_page.text
    review = run_scan(client, "alice")  # scanning only reads: a read-only inspector runs it
    assert "Scanned 2 knowledge memories" in review and "action-merge" not in review
    for url, data in (
        (f"/ns/alice/m/{memory_id}/pin", {}),
        (f"/ns/alice/m/{memory_id}/forget", {"confirm": memory_id[:8]}),
        ("/ns/alice/forget-namespace", {"confirm": "alice"}),
        ("/ns/alice/purge", {"confirm": "purge"}),
    ):
        assert client.post(url, data={"csrf_token": csrf, **data}).status_code == 403
    assert ui_store.count("alice") == 2 and ui_store.get(memory_id, namespace="alice").pinned is False


def test_no_page_or_asset_refers_to_another_host() -> None:
    """Nothing is fetched from the internet: no http(s) URL in any template or static file."""
    folder = Path(ui_package.__file__).parent
    files = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".html", ".css", ".js", ".svg")]
    assert {p.name for p in files} >= {"base.html", "app.css", "app.js"}
    for path in files:
        text = path.read_text()
        assert not re.search(r"https?://", text), f"{path.name} refers to another host"
        assert "<script>" not in text and "style=" not in text, f"{path.name} has inline script or style"


def test_a_wildcard_bind_accepts_this_machines_own_names() -> None:
    import socket

    from memory_retrievers.ui.server import _own_names

    assert _own_names("127.0.0.1") == []
    assert _own_names("inspector.internal") == ["inspector.internal"]
    assert socket.gethostname() in _own_names("0.0.0.0")


def test_the_host_refusal_says_how_to_allow_a_name(client: TestClient) -> None:
    response = client.get("/", headers={"host": "evil.example"})
    assert response.status_code == 400 and "--allowed-host" in response.text


def test_scans_run_only_from_a_post_carrying_the_form_token(ui_store: MemoryStore, client: TestClient) -> None:
    """Issue 40 item 8: ``GET review?scan=1`` without ``Sec-Fetch-Site`` (an ``<img>``) started the scans."""
    scans = client.app.state.scans  # type: ignore[attr-defined]
    for headers in ({}, {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-origin"}):
        page = client.get("/ns/alice/review?scan=1", headers=headers)
        assert page.status_code == 400 and "scan" in page.text and scans.get("alice") is None
    for data, headers in (
        ({}, {}),
        ({"csrf_token": "guessed"}, {}),
        ({"csrf_token": csrf_of(client)}, {"sec-fetch-site": "cross-site"}),
        ({"csrf_token": csrf_of(client)}, {"origin": "http://evil.example"}),
    ):
        assert client.post("/ns/alice/review", data=data, headers=headers).status_code == 403
        assert scans.get("alice") is None
    assert "Scanned 2 knowledge memories" in run_scan(client, "alice")
