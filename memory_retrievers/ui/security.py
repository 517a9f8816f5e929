"""The inspector's protections: loopback by default, a token off loopback, Host and cross-site checks.

- :func:`check_bind` refuses a non-loopback bind without a token (``ConfigError``).
- :class:`Guard` (ASGI middleware) runs on every request: the ``Host`` header must be one the app
  serves (a DNS-rebinding page cannot reach a loopback app under its own name); with a token,
  the request carries it as ``Authorization: Bearer <token>`` or the ``mr_ui_token`` cookie set
  after a first visit with ``?token=<token>``; a POST is refused in read-only mode (but the
  review scans, which change nothing), when its
  ``Origin`` is another origin and when ``Sec-Fetch-Site`` says ``cross-site``; every response
  gets the security headers (CSP without inline scripts or other hosts).
- :func:`check_csrf` compares a form's ``csrf_token`` with the app's secret (every form renders it).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_retrievers.errors import ConfigError

__all__ = ["COOKIE", "SECURITY_HEADERS", "Guard", "check_bind", "check_csrf", "is_loopback"]

COOKIE = "mr_ui_token"
SECURITY_HEADERS: dict[str, str] = {
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: The one POST a read-only inspector takes: running the review scans, which read and change nothing
#: (a POST only so that the form token keeps other sites from starting them). A namespace is one
#: path segment (``links.encode_namespace``), so nothing else ends this way.
_READ_ONLY_POST = re.compile(r"/ns/[^/]+/review\Z")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) only answers this machine."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve on a non-loopback ``host`` without a token.

    Raises:
        ConfigError: ``host`` is reachable from other machines and ``token`` is empty.
    """
    if token is not None and (not isinstance(token, str) or not token):
        raise ConfigError("token must be a non-empty string or None")
    # It travels in a cookie and an Authorization header: printable ASCII without spaces only.
    if token is not None and not (token.isascii() and token.isprintable() and " " not in token):
        raise ConfigError(
            "token must be printable ASCII without spaces (it is sent in a cookie and an Authorization header); "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"host {host!r} is reachable from other machines: pass token=... (--token T) so that only "
            "people with the token can use the inspector, or bind to 127.0.0.1"
        )


def check_csrf(secret: str, submitted: object) -> bool:
    """Whether a form's ``csrf_token`` field equals the app's secret (constant-time comparison)."""
    return isinstance(submitted, str) and hmac.compare_digest(submitted.encode(), secret.encode())


def _host_name(value: str) -> str:
    """The host of a ``Host`` header (port dropped, IPv6 brackets kept off); ``""`` when it is not one.

    A port that is not digits (``localhost:8765@evil.example``, ``localhost:x``) makes the whole
    value invalid rather than leaving its name to be matched: no browser sends such a header.
    """
    value = value.lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    if port and not (port.isascii() and port.isdigit()):
        return ""
    return name


class Guard:
    """ASGI middleware enforcing the checks of this module's docstring on every HTTP request.

    Args:
        app: The inspector's app.
        token: The access token, or ``None`` (loopback only).
        read_only: Refuse every POST.
        hosts: Host names accepted in the ``Host`` header besides the loopback names.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, read_only: bool, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token
        self.read_only = read_only
        self.hosts = frozenset(_host_name(h) for h in hosts) | _LOOPBACK_NAMES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request, then pass it on (or answer it), adding the security headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in SECURITY_HEADERS]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
        else:
            await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        host = _host_name(headers.get("host", ""))
        if host not in self.hosts:
            return PlainTextResponse(
                f"400: the Host header {host!r} is not one this inspector serves; if that is how people reach it, "
                "start it with --allowed-host NAME (allowed_hosts=[...] in Python)",
                400,
            )
        if self.token is not None:
            answer = self._token_answer(scope, headers, self.token)
            if answer is not None:
                return answer
        if scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            return self._post_refusal(scope, headers)
        return None

    @staticmethod
    def _token_answer(scope: Scope, headers: Headers, token: str) -> Response | None:
        """A redirect that sets the cookie, a 401, or ``None`` when the request carries the token."""
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given and _same(given[0], token):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            root, path = scope.get("root_path", ""), scope["path"]
            # Starlette 1.x keeps the mount prefix in ``path``; older servers may not.
            target = path if path.startswith(root) else root + path
            # ``//evil.example/?token=..`` must not redirect to another host: one leading slash only.
            target = "/" + target.lstrip("/\\") + (f"?{rest}" if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
            return response
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and _same(auth[7:].strip(), token):
            return None
        cookie = SimpleCookie(headers.get("cookie", ""))
        if COOKIE in cookie and _same(cookie[COOKIE].value, token):
            return None
        return HTMLResponse(_UNAUTHORIZED, status_code=401, headers={"www-authenticate": "Bearer"})

    def _post_refusal(self, scope: Scope, headers: Headers) -> Response | None:
        if self.read_only and not _READ_ONLY_POST.search(scope["path"]):
            return PlainTextResponse("403: this inspector is read-only (started with --read-only)", 403)
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
            return PlainTextResponse(f"403: a request from another origin ({origin}) cannot change memories", 403)
        # Only the app's own pages (same-origin) or the user typing/bookmarking (none) may change memories:
        # same-site is another port or subdomain of this host, which is another app.
        if headers.get("sec-fetch-site", "same-origin").lower() not in ("same-origin", "none"):
            return PlainTextResponse("403: a cross-site request cannot change memories", 403)
        return None


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


_UNAUTHORIZED = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Token needed</title></head>
<body><h1>401: this inspector needs its token</h1>
<p>Open the URL the <code>memory-retrievers ui</code> command printed (it ends with <code>?token=…</code>):
the token is then kept in a cookie for this browser. From a script, send
<code>Authorization: Bearer &lt;token&gt;</code>.</p></body></html>"""
