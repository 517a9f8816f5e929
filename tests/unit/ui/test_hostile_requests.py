"""The inspector attacked: tenancy, cross-site and token tricks, hostile text, replayed confirmations, bad input.

Each test pins a defect found by attacking the app (or a protection that held and must keep holding).
"""

from __future__ import annotations

import html
import re
import threading
import unicodedata
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from memory_retrievers import MemoryRetriever, MemoryStore
from memory_retrievers.ui import create_app
from memory_retrievers.ui.links import decode_namespace, encode_namespace

from .conftest import csrf_of, run_scan

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"


@pytest.fixture
def rt_client(ui_store: MemoryStore) -> Iterator[TestClient]:
    with TestClient(create_app(ui_store), base_url="http://127.0.0.1", follow_redirects=False) as client:
        yield client


def _bob(store: MemoryStore) -> str:
    return store.list("bob")[0].id


def _dog(store: MemoryStore) -> str:
    return next(m.id for m in store.list("alice") if "dog" in m.text)


def _snapshot(store: MemoryStore) -> list[tuple[str, str, str, bool, str | None]]:
    rows = []
    for ns in ("alice", "bob"):
        for m in store.list(ns, filter={"include_superseded": True, "include_archived": True}):
            rows.append((ns, m.id, m.text, m.pinned, m.superseded_by))
    return sorted(rows)


# Tenancy ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["pin", "unpin", "edit", "forget", "delete"])
def test_a_memory_of_another_namespace_cannot_be_acted_on(
    ui_store: MemoryStore, rt_client: TestClient, action: str
) -> None:
    bob = _bob(ui_store)
    before = _snapshot(ui_store)
    data = {"csrf_token": csrf_of(rt_client), "text": "hijacked", "confirm": bob[:8]}
    response = rt_client.post(f"/ns/alice/m/{bob}/{action}", data=data)
    assert response.status_code == 404, response.text
    assert _snapshot(ui_store) == before


@pytest.mark.parametrize(
    "url", ["/ns/alice/m/{id}", "/ns/alice/m/{id}/confirm/forget", "/ns/alice/m/{id}/confirm/delete"]
)
def test_a_memory_of_another_namespace_is_not_shown(ui_store: MemoryStore, rt_client: TestClient, url: str) -> None:
    response = rt_client.get(url.format(id=_bob(ui_store)))
    assert response.status_code == 404
    assert "Bob prefers" not in response.text


def test_a_merge_naming_a_memory_of_another_namespace_changes_nothing(
    store: MemoryStore, rt_client: TestClient
) -> None:
    keep = store.add("Carol keeps bees in the garden", namespace="carol", kind="fact")
    drop = store.add("Carol keeps two bee hives in the garden", namespace="carol", kind="fact", dedup=False)
    foreign = store.add("Dan keeps bees", namespace="dan", kind="fact")
    data = {"csrf_token": csrf_of(rt_client), "keep": keep.id, "drop": [drop.id, foreign.id]}
    response = rt_client.post("/ns/carol/merge-duplicates", data=data)
    assert response.status_code == 404
    after = store.get(drop.id, namespace="carol")
    assert after.lifecycle != "archived" and "duplicate_of" not in after.metadata
    assert store.get(keep.id, namespace="carol").links == keep.links


def test_ask_in_one_namespace_never_shows_another(ui_store: MemoryStore, rt_client: TestClient) -> None:
    page = rt_client.get("/ns/alice/ask", params={"q": "Bob prefers the light theme"})
    assert page.status_code == 200 and 'data-testid="block"' in page.text
    assert _bob(ui_store) not in page.text
    assert "Bob prefers the light theme</" not in page.text  # only the query box echoes it


@pytest.mark.parametrize(
    "name",
    ["~", "~7E", "100%", "%2F", "a/b", "a/../b", "..", ".", "...", "x" * 300, "é", "ns~2Fx", "<b>&amp;"],
)
def test_odd_namespaces_round_trip_and_never_alias(store: MemoryStore, rt_client: TestClient, name: str) -> None:
    assert decode_namespace(encode_namespace(name)) == name
    mine = store.add("the memory of this odd namespace", namespace=name, kind="fact")
    store.add("a decoy", namespace="decoy", kind="fact")
    listing = rt_client.get("/").text
    href = listing.split(f'data-namespace="{html.escape(name)}"')[1].split('href="')[1].split('"')[0]
    response = rt_client.get(href)  # the link the page gives, as a browser resolves it
    assert response.status_code == 200, response.text
    assert mine.id in response.text and "a decoy" not in response.text
    assert rt_client.get(f"/ns/{encode_namespace(name)}/m/{mine.id}").status_code == 200


def test_nfc_and_nfd_spellings_reach_the_one_namespace_the_store_keeps(
    store: MemoryStore, rt_client: TestClient
) -> None:
    nfc, nfd = "é", unicodedata.normalize("NFD", "é")
    store.add("composed", namespace=nfc, kind="fact")
    store.add("a cafe", namespace="e", kind="fact")
    assert encode_namespace(nfc) != encode_namespace(nfd)  # the URL keeps the spelling it was given
    for spelling in (nfc, nfd):  # the store normalises to NFC: one tenant, never "e"
        page = rt_client.get(f"/ns/{encode_namespace(spelling)}").text
        assert "composed" in page and "a cafe" not in page


@pytest.mark.parametrize("segment", ["~", "~2f", "~ZZ", "~FF", "%2F"])
def test_malformed_namespace_segments_are_404_not_500(rt_client: TestClient, segment: str) -> None:
    assert rt_client.get(f"/ns/{segment}").status_code == 404


@pytest.mark.parametrize("memory_id", ["..", ".", "a/b", unicodedata.normalize("NFD", "émile-1"), "x%2Fy"])
def test_odd_memory_ids_round_trip_exactly(store: MemoryStore, rt_client: TestClient, memory_id: str) -> None:
    store.add("an odd id", namespace="alice", kind="fact", id=memory_id)
    store.add("a decoy", namespace="alice", kind="fact", id="decoy")
    listing = rt_client.get("/ns/alice").text
    href = listing.split(f'data-id="{html.escape(memory_id)}"')[1].split('href="')[1].split('"')[0]
    page = rt_client.get(href)
    assert page.status_code == 200 and "an odd id" in page.text and "a decoy" not in page.text


# Token, Host, cross-site -----------------------------------------------------------------------


@pytest.fixture
def token_client(ui_store: MemoryStore) -> Iterator[TestClient]:
    app = create_app(ui_store, token="s3cret")
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        yield client


@pytest.mark.parametrize("path", ["//evil.example/", "//evil.example", "/\\evil.example/", "///evil.example/x"])
def test_the_token_redirect_never_leaves_the_app(token_client: TestClient, path: str) -> None:
    response = token_client.get(f"http://127.0.0.1{path}?token=s3cret&next=//evil.example")
    if response.status_code == 303:
        location = response.headers["location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\")), location
        assert "token=" not in location
        assert location.split("?")[0] == "/" + path.lstrip("/\\")


@pytest.mark.parametrize("given", ["", "s3cre", "S3CRET", "s3crett", "s3cret\x01"])
def test_a_wrong_token_is_401_everywhere(token_client: TestClient, given: str) -> None:
    for headers in ({"authorization": f"Bearer {given}"}, {"cookie": f'mr_ui_token="{given}"'}):
        assert token_client.get("/ns/alice", headers=headers).status_code == 401
    assert token_client.get("/ns/alice", params={"token": given}).status_code == 401


@pytest.mark.parametrize("cookie", ['mr_ui_token="', "mr_ui_token=\\", "=;;=;", "mr_ui_token=a; mr_ui_token=s3cret"])
def test_a_mangled_cookie_header_is_a_401_not_a_500(token_client: TestClient, cookie: str) -> None:
    assert token_client.get("/", headers={"cookie": cookie}).status_code in (200, 401)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1.evil.com", "localhost.evil.com", "localhost:8765@evil.com", "evil.com#@localhost", "localhost:x"],
)
def test_dns_rebinding_host_values_are_refused(rt_client: TestClient, host: str) -> None:
    assert rt_client.get("/", headers={"host": host}).status_code == 400


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "192.168.1.20", "localhost.evil.com", "127.0.0.1.evil.com", "10.0.0.1"]
)
def test_a_non_loopback_bind_needs_a_token(host: str) -> None:
    from memory_retrievers import ConfigError
    from memory_retrievers.ui.security import check_bind

    with pytest.raises(ConfigError, match="token"):
        check_bind(host, None)


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "null"},
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1.evil.example"},
        {"origin": "http://127.0.0.1:9999"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
    ],
)
def test_cross_origin_posts_are_refused_with_a_good_csrf_token(
    ui_store: MemoryStore, rt_client: TestClient, headers: dict[str, str]
) -> None:
    memory_id = _dog(ui_store)
    response = rt_client.post(f"/ns/alice/m/{memory_id}/pin", data={"csrf_token": csrf_of(rt_client)}, headers=headers)
    assert response.status_code == 403
    assert ui_store.get(memory_id, namespace="alice").pinned is False


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        ("csrf_token={token}", "text/plain"),
        ('{{"csrf_token": "{token}"}}', "application/json"),
        ("csrf_token=wrong", "application/x-www-form-urlencoded"),
        ("", "application/x-www-form-urlencoded"),
    ],
)
def test_a_post_that_is_not_a_form_with_the_token_is_refused(
    ui_store: MemoryStore, rt_client: TestClient, content: str, content_type: str
) -> None:
    memory_id = _dog(ui_store)
    body = content.format(token=csrf_of(rt_client))
    response = rt_client.post(
        f"/ns/alice/m/{memory_id}/pin", content=body.encode(), headers={"content-type": content_type}
    )
    assert response.status_code == 403
    assert ui_store.get(memory_id, namespace="alice").pinned is False


def test_the_same_origin_form_post_is_accepted(ui_store: MemoryStore, rt_client: TestClient) -> None:
    memory_id = _dog(ui_store)
    headers = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
    data = {"csrf_token": csrf_of(rt_client)}
    assert rt_client.post(f"/ns/alice/m/{memory_id}/pin", data=data, headers=headers).status_code == 303
    assert ui_store.get(memory_id, namespace="alice").pinned is True


def test_the_csrf_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    from memory_retrievers.ui import security

    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    assert security.check_csrf("abc", "abc") and not security.check_csrf("abc", "abd")
    assert len(calls) == 2


def test_the_cookie_is_httponly_strict_and_scoped(token_client: TestClient) -> None:
    cookie = token_client.get("/?token=s3cret").headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie


@pytest.mark.parametrize("path", ["/", "/static/app.css", "/nope", "/ns/alice", "/ns/alice/m/x/pin", "/ns/alice/purge"])
def test_read_only_refuses_every_post(ui_store: MemoryStore, path: str) -> None:
    with TestClient(create_app(ui_store, read_only=True), base_url="http://127.0.0.1") as client:
        data = {"csrf_token": csrf_of(client), "confirm": "purge"}
        assert client.post(path, data=data, follow_redirects=False).status_code == 403
    assert len(ui_store.list("alice")) == 2


# Confirmations ---------------------------------------------------------------------------------


def test_a_confirmation_cannot_be_replayed_on_a_memory_whose_id_starts_alike(
    store: MemoryStore, rt_client: TestClient
) -> None:
    store.add("the first note", namespace="alice", kind="fact", id="note-0001")
    store.add("the second note", namespace="alice", kind="fact", id="note-0002")
    first = rt_client.get("/ns/alice/m/note-0001/confirm/forget").text
    word = first.split('data-testid="confirm-word">')[1].split("<")[0]
    response = rt_client.post("/ns/alice/m/note-0002/forget", data={"csrf_token": csrf_of(rt_client), "confirm": word})
    assert response.status_code == 400
    assert store.get("note-0002", namespace="alice").text == "the second note"


@pytest.mark.parametrize("typed", [" purge", "purge ", "PURGE", "purg", "purge\n", ""])
def test_the_typed_word_must_match_exactly(ui_store: MemoryStore, rt_client: TestClient, typed: str) -> None:
    response = rt_client.post("/ns/alice/purge", data={"csrf_token": csrf_of(rt_client), "confirm": typed})
    assert response.status_code == 400
    memory_id = _dog(ui_store)
    data = {"csrf_token": csrf_of(rt_client), "confirm": typed.replace("purge", memory_id[:8]).upper()}
    assert rt_client.post(f"/ns/alice/m/{memory_id}/forget", data=data).status_code == 400
    assert ui_store.get(memory_id, namespace="alice")


def test_forgetting_a_superseding_memory_says_and_does_revive_the_old_one(
    ui_store: MemoryStore, rt_client: TestClient
) -> None:
    old = _dog(ui_store)
    middle = ui_store.supersede(old, "Alice's dog is Rex, a beagle", namespace="alice")
    newest = ui_store.supersede(middle.id, "Alice's dog is Rex, a nine-year-old beagle", namespace="alice")
    # The middle of a chain: forgetting it makes its predecessor live again (the store's rule).
    page = rt_client.get(f"/ns/alice/m/{middle.id}/confirm/forget").text
    summary = page.split('data-testid="confirm-summary"')[1].split("</section>")[0]
    data = {"csrf_token": csrf_of(rt_client), "confirm": middle.id[:8]}
    assert rt_client.post(f"/ns/alice/m/{middle.id}/forget", data=data).status_code == 303
    assert ui_store.get(old, namespace="alice").superseded_by is None  # live again, as the page said
    assert old in summary and "becomes live again" in summary
    assert newest.id in summary and "both will be live" in summary
    assert ui_store.get(newest.id, namespace="alice").superseded_by is None


def test_purge_says_it_is_store_wide(rt_client: TestClient) -> None:
    page = rt_client.get("/ns/alice/confirm/purge").text
    summary = page.split('data-testid="confirm-summary"')[1].split("</section>")[0]
    assert "whole store" in summary and "every namespace" in summary


def test_forgetting_twice_is_a_404_the_second_time(ui_store: MemoryStore, rt_client: TestClient) -> None:
    memory_id = _dog(ui_store)
    data = {"csrf_token": csrf_of(rt_client), "confirm": memory_id[:8]}
    assert rt_client.post(f"/ns/alice/m/{memory_id}/forget", data=data).status_code == 303
    second = rt_client.post(f"/ns/alice/m/{memory_id}/forget", data=data)
    assert second.status_code == 404 and memory_id in second.text
    assert rt_client.get(f"/ns/alice/m/{memory_id}").status_code == 404
    assert rt_client.get(f"/ns/alice/m/{memory_id}/confirm/forget").status_code == 404
    for action in ("pin", "edit"):
        gone = rt_client.post(f"/ns/alice/m/{memory_id}/{action}", data={**data, "text": "new"})
        assert gone.status_code == 404


# Robustness ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/?page=0",
        "/?page=-1",
        "/?page=99999999999999999999",
        "/?page=1e3",
        "/?page=" + "9" * 5000,
        "/ns/alice?page=0",
        "/ns/alice?page=-1",
        "/ns/alice?page=99999999999999999999",
        "/ns/alice?page=x",
        "/ns/alice?kind=nope",
        "/ns/alice?kind=<b>",
        "/ns/alice?hidden=2",
        "/ns/alice/review?scan=yes",
        "/ns/alice/ask?q=dog&budget=-5",
        "/ns/alice/ask?q=dog&budget=99999999999999999999",
        "/ns/alice/ask?q=dog&budget=abc",
        "/ns/alice/ask?q=dog&overrides=nope",
        "/ns/alice/ask?q=dog&overrides=[1]",
        "/ns/alice/ask?q=dog&overrides=%7B%22nope%22:1%7D",
        "/ns/alice/ask?q=dog&overrides=%7B%22k%22:-1%7D",
        "/ns/alice/ask?q=dog&overrides=%7B%22k%22:1e999%7D",
        "/ns/alice/ask?q=dog&config=nope",
        "/ns/alice/ask?q=dog&compare=nope",
        "/ns/alice/ask?q=dog&compare=default&compare_overrides=%5B%5D",
    ],
)
def test_bad_parameters_are_a_4xx_page_never_a_500(rt_client: TestClient, url: str) -> None:
    response = rt_client.get(url)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[-600:])
    assert "Traceback" not in response.text


def test_a_huge_query_is_answered(rt_client: TestClient) -> None:
    response = rt_client.get("/ns/alice/ask", params={"q": "dog " * 5000})
    assert response.status_code in (200, 400) and "Traceback" not in response.text
    assert rt_client.get("/ns/alice", params={"q": "dog " * 5000}).status_code in (200, 400)


def test_a_store_error_is_a_typed_500_page(
    ui_store: MemoryStore, rt_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_retrievers.errors import StorageError

    async def broken(*args: object, **kwargs: object) -> None:
        raise StorageError("the disk is on fire <script>x</script>")

    monkeypatch.setattr(type(ui_store), "aget", broken)
    response = rt_client.get(f"/ns/alice/m/{_dog(ui_store)}")
    assert response.status_code == 500 and "StorageError" in response.text
    assert "Traceback" not in response.text and "<script>x" not in response.text
    assert "content-security-policy" in response.headers


def test_concurrent_pages_while_memories_are_added_never_500(ui_store: MemoryStore, rt_client: TestClient) -> None:
    statuses: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            for url in ("/", "/ns/alice", "/ns/alice/ask?q=dog", "/ns/alice/review"):
                statuses.append(rt_client.get(url).status_code)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for i in range(15):
            ui_store.add(f"Alice fact number {i}", namespace="alice", kind="fact")
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert statuses and set(statuses) == {200}, sorted(set(statuses))


# Hostile text, read-only pages, access stats ---------------------------------------------------

_NS = f"ns{HOSTILE}"


@pytest.fixture
def hostile_store(store: MemoryStore) -> MemoryStore:
    first = store.add(
        f"likes jazz {HOSTILE}",
        namespace=_NS,
        kind="preference",
        tags=[HOSTILE],
        entities=[HOSTILE],
        metadata={HOSTILE: HOSTILE, "formed_by": HOSTILE, "duplicate_of": HOSTILE},
        topic=HOSTILE,
        id=f"id{HOSTILE}",
    )
    store.add(f"does not like jazz {HOSTILE}", namespace=_NS, kind="fact", links=[first.id, HOSTILE])
    store.supersede(first.id, f"loves jazz {HOSTILE}", namespace=_NS)
    return store


def _pages_of(client: TestClient, store: MemoryStore) -> dict[str, str]:
    ns = encode_namespace(_NS)
    ids = [m.id for m in store.list(_NS, filter={"include_superseded": True})]
    run_scan(client, ns)  # the review page below shows what the scans found
    urls = ["/", f"/ns/{ns}", f"/ns/{ns}/review", f"/ns/{ns}/confirm/forget-namespace"]
    urls += [f"/ns/{ns}/confirm/purge", f"/ns/{ns}/ask?q=" + HOSTILE, f"/ns/{ns}/ask?q=jazz&compare=default"]
    urls += [f"/ns/{ns}?q={HOSTILE}", f"/ns/{ns}?kind={HOSTILE}", f"/ns/{ns}/ask?q=jazz&overrides={HOSTILE}"]
    for memory_id in ids:
        urls += [
            f"/ns/{ns}/m/{encode_namespace(memory_id)}",
            f"/ns/{ns}/m/{encode_namespace(memory_id)}/confirm/forget",
        ]
    pages = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code < 500, (url, response.text[-500:])
        assert "content-security-policy" in response.headers
        pages[url] = response.text
    return pages


def test_hostile_text_is_escaped_on_every_page(hostile_store: MemoryStore, rt_client: TestClient) -> None:
    pages = _pages_of(rt_client, hostile_store)
    memory_page = pages[f"/ns/{encode_namespace(_NS)}/m/{encode_namespace('id' + HOSTILE)}"]
    assert memory_page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5  # text, tags, metadata, topic...
    for url, page in pages.items():
        assert "<script>alert" not in page and "<img src=x" not in page, url
        assert " style=" not in page and "<style" not in page, url
        scripts = page.count("<script")
        assert scripts == page.count('<script src="/static/app.js" defer></script>'), url


def test_a_hostile_flash_message_is_escaped(hostile_store: MemoryStore, rt_client: TestClient) -> None:
    memory_id = f"id{HOSTILE}"
    ns = encode_namespace(_NS)
    url = f"/ns/{ns}/m/{encode_namespace(memory_id)}/pin"
    response = rt_client.post(url, data={"csrf_token": csrf_of(rt_client)})
    assert response.status_code == 303
    page = rt_client.get(response.headers["location"]).text
    assert 'data-testid="flash"' in page and "<script>alert" not in page


def test_read_only_renders_no_action_on_any_page(hostile_store: MemoryStore) -> None:
    with TestClient(create_app(hostile_store, read_only=True), base_url="http://127.0.0.1") as client:
        for url, page in _pages_of(client, hostile_store).items():
            # The review scans change nothing: a read-only inspector runs them (a POST with the form token).
            page = re.sub(r'<form method="post" action="[^"]*/review">.*?data-testid="run-scan".*?</form>', "", page)
            assert 'method="post"' not in page.lower(), url
            assert 'data-testid="action-' not in page and "confirm-button" not in page, url
            assert csrf_of(client) not in page, url


def test_inspecting_records_no_access(ui_store: MemoryStore, rt_client: TestClient) -> None:
    ui_store.add("Alice's cat is called Tom", namespace="alice", kind="fact")
    before = {m.id: (m.access_count, m.last_accessed_at) for m in ui_store.list("alice")}
    for memory_id in before:
        assert rt_client.get(f"/ns/alice/m/{memory_id}").status_code == 200
        assert rt_client.get(f"/ns/alice/m/{memory_id}/confirm/forget").status_code == 200
    for url in ("/", "/ns/alice", "/ns/alice?q=dog"):
        assert rt_client.get(url).status_code == 200
    run_scan(rt_client, "alice")
    for q in ("dog", "cat", "what is the name of Alice's pet"):
        assert rt_client.get("/ns/alice/ask", params={"q": q}).status_code == 200
        assert rt_client.get("/ns/alice/ask", params={"q": q, "compare": "default"}).status_code == 200
    after = {m.id: (m.access_count, m.last_accessed_at) for m in ui_store.list("alice")}
    assert after == before
    MemoryRetriever(ui_store).recall("Alice's dog", namespace="alice")  # an agent's recall does count
    assert {m.id: (m.access_count, m.last_accessed_at) for m in ui_store.list("alice")} != before


def test_acting_on_a_superseded_memory_is_a_4xx_or_works(ui_store: MemoryStore, rt_client: TestClient) -> None:
    old = _dog(ui_store)
    ui_store.supersede(old, "Alice's dog is Rex, a beagle", namespace="alice")
    token = csrf_of(rt_client)
    for action, extra in (("edit", {"text": "Rex is ten"}), ("pin", {}), ("unpin", {})):
        response = rt_client.post(f"/ns/alice/m/{old}/{action}", data={"csrf_token": token, **extra})
        assert response.status_code in (303, 400, 404, 409), (action, response.status_code, response.text[-400:])


def test_a_merge_naming_one_memory_twice_folds_it_once(store: MemoryStore, rt_client: TestClient) -> None:
    keep = store.add("Carol keeps bees in the garden", namespace="carol", kind="fact", tags=["a"])
    drop = store.add("Carol keeps two bee hives in the garden", namespace="carol", kind="fact", dedup=False, tags=["b"])
    data = {"csrf_token": csrf_of(rt_client), "keep": keep.id, "drop": [drop.id, drop.id]}
    response = rt_client.post("/ns/carol/merge-duplicates", data=data)
    assert response.status_code in (303, 400), response.text[-400:]
    kept = store.get(keep.id, namespace="carol")
    assert list(kept.tags).count("b") <= 1


def test_a_huge_edit_is_a_400_naming_text(ui_store: MemoryStore, rt_client: TestClient) -> None:
    old = _dog(ui_store)
    response = rt_client.post(
        f"/ns/alice/m/{old}/edit", data={"csrf_token": csrf_of(rt_client), "text": "x" * 2_000_000}
    )
    assert response.status_code in (303, 400), response.text[-400:]


def test_two_tabs_forgetting_at_once_get_one_303_and_one_404(ui_store: MemoryStore, rt_client: TestClient) -> None:
    memory_id = _dog(ui_store)
    data = {"csrf_token": csrf_of(rt_client), "confirm": memory_id[:8]}
    statuses: list[int] = []
    barrier = threading.Barrier(2)

    def forget() -> None:
        barrier.wait()
        statuses.append(rt_client.post(f"/ns/alice/m/{memory_id}/forget", data=data).status_code)

    tabs = [threading.Thread(target=forget) for _ in range(2)]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join()
    assert sorted(statuses) == [303, 404]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("&".join(f"f{i}=x" for i in range(5000)), "application/x-www-form-urlencoded"),
        ("--b\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\n" + "x" * 2_000_000 + "\r\n--b--\r\n",
         "multipart/form-data; boundary=b"),
        ("--b\r\nbroken", "multipart/form-data; boundary=b"),
        ("a=%ZZ&csrf_token=%", "application/x-www-form-urlencoded"),
    ],
)  # fmt: skip
def test_a_malformed_or_oversized_form_is_refused_not_a_500(
    ui_store: MemoryStore, rt_client: TestClient, body: str, content_type: str
) -> None:
    memory_id = _dog(ui_store)
    response = rt_client.post(
        f"/ns/alice/m/{memory_id}/edit", content=body.encode(), headers={"content-type": content_type}
    )
    assert 400 <= response.status_code < 500, (response.status_code, response.text[-300:])
    assert ui_store.get(memory_id, namespace="alice").superseded_by is None


@pytest.mark.parametrize("q", ["   ", "\t", " \n "])
def test_a_blank_text_filter_lists_every_memory(rt_client: TestClient, q: str) -> None:
    page = rt_client.get("/ns/alice", params={"q": q})
    assert page.status_code == 200 and page.text.count('data-testid="memory-row"') == 2


def test_overrides_cannot_make_the_ask_page_record_access(ui_store: MemoryStore, rt_client: TestClient) -> None:
    before = {m.id: m.access_count for m in ui_store.list("alice")}
    for overrides in ('{"record_access": true}', '{"record_access": 1}'):
        params = {"q": "Alice's dog", "overrides": overrides, "compare": "default", "compare_overrides": overrides}
        assert rt_client.get("/ns/alice/ask", params=params).status_code in (200, 400)
    assert {m.id: m.access_count for m in ui_store.list("alice")} == before


@pytest.mark.parametrize("budget", ["²", "¹⁰", "①", "1²"])
def test_a_budget_of_unicode_digit_signs_is_a_400_naming_budget(rt_client: TestClient, budget: str) -> None:
    # str.isdigit() accepts "²" but int() refuses it: the check must be the one int() makes.
    page = rt_client.get("/ns/alice/ask", params={"q": "dog", "budget": budget})
    assert page.status_code == 400 and 'data-testid="ask-error"' in page.text and "budget" in page.text


@pytest.mark.parametrize("field", ["overrides", "compare_overrides"])
@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000], ids=["lists", "objects"])
def test_deeply_nested_overrides_are_a_400_naming_the_field(rt_client: TestClient, field: str, text: str) -> None:
    params = {"q": "dog", field: text, "compare": "default" if field == "compare_overrides" else ""}
    page = rt_client.get("/ns/alice/ask", params=params)
    assert page.status_code == 400 and 'data-testid="ask-error"' in page.text and field in page.text


@pytest.mark.parametrize("token", ["€uro", "päss", "two words", "tab\there", "new\nline"])
def test_a_token_a_cookie_or_header_cannot_carry_is_refused_at_start(ui_store: MemoryStore, token: str) -> None:
    from memory_retrievers import ConfigError

    # Before: "€uro" started, then the first visit with ?token= was a 500 (the cookie is latin-1).
    with pytest.raises(ConfigError, match="token"):
        create_app(ui_store, token=token)


def test_every_printable_ascii_token_works_through_the_cookie(ui_store: MemoryStore) -> None:
    token = "a;b,c=d\"e\\f~g%h'i"
    with TestClient(create_app(ui_store, token=token), base_url="http://127.0.0.1", follow_redirects=False) as client:
        assert client.get("/", params={"token": token}).status_code == 303
        assert client.get("/").status_code == 200


@pytest.mark.parametrize(
    "metadata",
    [
        {"consolidated_from": 5},
        {"consolidated_from": [1, None, {"a": 1}]},
        {"consolidated_from": "abc"},
        {"duplicate_of": 5},
        {"duplicate_of": ["x"]},
        {"formed_by": {"a": 1}, "confidence": [1]},
    ],
    ids=["int", "mixed-list", "str", "dup-int", "dup-list", "formed-dict"],
)
def test_odd_metadata_values_render_not_500(
    store: MemoryStore, rt_client: TestClient, metadata: dict[str, object]
) -> None:
    memory = store.add("a memory with odd metadata", namespace="alice", kind="fact", metadata=metadata)
    page = rt_client.get(f"/ns/alice/m/{memory.id}")
    assert page.status_code == 200 and "a memory with odd metadata" in page.text


@pytest.mark.parametrize("name", ["it's", 'a"b', "x\\y", "a' OR '1'='1", "%_"])
def test_quotes_in_namespaces_and_ids_never_reach_another_namespace(
    store: MemoryStore, rt_client: TestClient, name: str
) -> None:
    memory = store.add("quote test", namespace=name, id=f"{name}-id'", links=["o'k"])
    store.add("a decoy", namespace="decoy")
    ns = encode_namespace(name)
    assert "a decoy" not in run_scan(rt_client, ns)
    for url in (f"/ns/{ns}", f"/ns/{ns}/m/{encode_namespace(memory.id)}", f"/ns/{ns}/review",
                f"/ns/{ns}/confirm/forget-namespace", f"/ns/{ns}/ask?q=quote+decoy"):  # fmt: skip
        page = rt_client.get(url)
        assert page.status_code == 200 and "a decoy" not in page.text, url
