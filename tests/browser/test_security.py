"""The protections, tried from a real browser: the token, cross-site requests, read-only mode, no outside requests."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from _steps import TOKEN, Recorded, ask, follow, memory_row_ids, open_ask, open_memory_row, open_namespace

from memory_retrievers import MemoryStore

pytestmark = pytest.mark.long

CONVERSATION = "conv-30"  # the security tests change nothing: any change is a failure


class OtherSite:
    """A second web server on another port: the pages a hostile site would serve."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path, "<!doctype html><title>other site</title>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def other_site() -> Iterator[OtherSite]:
    site = OtherSite()
    yield site
    site.close()


def forget_form(page: Any, base: str, store: MemoryStore) -> tuple[str, str, dict[str, str]]:
    """A memory of the conversation, its forget action's URL, and the fields a real submit sends.

    Read from the app's own confirmation page (never submitted): the attacker below is given
    even the CSRF token, as if it had leaked, so that what refuses it is the origin check.
    """
    memory_id = store.list(CONVERSATION, limit=1, offset=7)[0].id
    open_namespace(page, base, CONVERSATION)
    open_memory_row(page, memory_id)
    follow(page, page.locator("a[data-testid=action-forget]"))
    form = page.locator("form").filter(has=page.locator("button[data-testid=confirm-button]"))
    action = urljoin(page.url, form.get_attribute("action") or page.url)
    fields: dict[str, str] = form.evaluate(
        "f => Object.fromEntries([...new FormData(f).entries()].map(([k, v]) => [k, String(v)]))"
    )
    fields["confirm"] = memory_id[:8]
    return memory_id, action, fields


def hostile_page(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    return (
        "<!doctype html><title>win a prize</title>"
        f'<form method="post" action="{action}">{inputs}</form>'
        "<script>document.forms[0].submit()</script>"
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["same-site-other-port", "cross-site"])
@pytest.mark.parametrize("with_csrf", [False, True], ids=["no-csrf", "leaked-csrf"])
def test_a_form_posted_from_another_origin_is_refused(
    page: Any, app_url: str, locomo_store: MemoryStore, other_site: OtherSite, host: str, with_csrf: bool
) -> None:
    memory_id, action, fields = forget_form(page, app_url, locomo_store)
    if not with_csrf:
        fields.pop("csrf_token")
    path = f"/attack-{host}-{with_csrf}"
    other_site.pages[path] = hostile_page(action, fields)
    with page.expect_response(lambda r: r.url == action and r.request.method == "POST") as posted:
        page.goto(f"http://{host}:{other_site.port}{path}")
    assert posted.value.status == 403
    assert locomo_store.get(memory_id, namespace=CONVERSATION).id == memory_id  # it survives


def test_another_origin_cannot_read_the_app(page: Any, app_url: str, other_site: OtherSite, recorded: Recorded) -> None:
    page.goto(f"http://localhost:{other_site.port}/")
    got = page.evaluate(
        "url => fetch(url).then(r => r.text()).then(t => 'read ' + t.length, e => 'blocked ' + e)", app_url + "/"
    )
    assert got.startswith("blocked"), got
    framed = page.evaluate(
        """url => new Promise(done => {
            const f = document.createElement('iframe');
            f.src = url;
            f.onload = () => { try { done('read ' + f.contentDocument.body.innerText.length); }
                               catch (e) { done('blocked ' + e); } };
            document.body.appendChild(f);
        })""",
        app_url + "/",
    )
    assert framed.startswith("blocked"), framed  # the same-origin policy
    refused = [e for e in recorded.console_errors if "frame-ancestors 'none'" in e]
    assert refused, recorded.console_errors  # and the app's CSP refused to be framed at all
    recorded.console_errors.clear()  # expected here: the page fixture fails on any other CSP report


def test_without_the_token_every_page_is_401(page: Any, token_url: str) -> None:
    response = page.goto(token_url + "/")
    assert response.status == 401
    assert "token" in page.content().lower()  # says how to pass it
    assert page.goto(token_url + "/?token=wrong-token").status == 401
    assert page.context.cookies() == [] or all(c["name"] != "mr_ui_token" for c in page.context.cookies())


def test_the_token_in_the_url_becomes_a_cookie_for_later_pages(page: Any, token_url: str) -> None:
    response = page.goto(f"{token_url}/?token={TOKEN}")
    assert response.status == 200
    assert "token=" not in page.url  # redirected to the same URL without it
    cookie = next(c for c in page.context.cookies() if c["name"] == "mr_ui_token")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    with page.expect_response(lambda r: r.request.resource_type == "document") as later:
        open_namespace(page, token_url, CONVERSATION)
    assert later.value.status == 200
    assert memory_row_ids(page)


def test_a_bearer_token_works_without_the_cookie(browser: Any, token_url: str) -> None:
    context = browser.new_context(extra_http_headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        assert context.new_page().goto(token_url + "/").status == 200
    finally:
        context.close()


def test_read_only_mode_shows_no_actions_and_refuses_posts(
    page: Any, app_url: str, read_only_url: str, locomo_store: MemoryStore
) -> None:
    memory_id, action, fields = forget_form(page, app_url, locomo_store)
    open_namespace(page, read_only_url, CONVERSATION)
    open_memory_row(page, memory_id)
    for action_testid in ("action-pin", "action-unpin", "edit-form", "action-forget"):
        assert page.locator(f"[data-testid={action_testid}]").count() == 0, action_testid
    posts = page.locator("form").evaluate_all("fs => fs.filter(f => f.method === 'post').length")
    assert posts == 0
    same_action = read_only_url + urlsplit(action).path
    assert page.request.post(same_action, form=fields).status == 403
    assert locomo_store.get(memory_id, namespace=CONVERSATION).id == memory_id


def test_a_session_never_asks_anything_of_another_origin(
    page: Any, app_url: str, recorded: Recorded, locomo_store: MemoryStore
) -> None:
    """Every page a person visits, with all its assets: nothing but the app's own origin is requested."""
    response = page.goto(app_url + "/")
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    open_namespace(page, app_url, CONVERSATION)
    open_memory_row(page, memory_row_ids(page)[0])
    follow(page, page.locator("a[data-testid=action-forget]"))  # the confirmation page, not confirmed
    open_namespace(page, app_url, CONVERSATION)
    follow(page, page.locator("a[data-testid=review-link]"))
    open_ask(page, app_url, CONVERSATION)
    ask(page, "What did Jon open?", budget=300, compare="knowledge_base")
    page.wait_for_load_state("networkidle")
    assert recorded.origins() == {app_url}, sorted(recorded.origins())
    assert any(u.endswith(".css") for u in recorded.requests)  # the assets came, from the app itself
