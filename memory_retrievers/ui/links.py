"""URLs of the inspector: namespaces as one URL segment, and links that work under any mount prefix.

A namespace may hold ``/``, ``%``, spaces or any unicode, and ASGI servers decode ``%2F`` before
routing, so percent-encoding alone cannot keep ``team/a`` in one segment. The inspector encodes a
namespace with ``~`` as its escape character instead: letters, digits, ``-``, ``_`` and ``.`` stay
as they are, every other UTF-8 byte becomes ``~XX`` (upper-case hex). ``alice`` stays ``alice``,
``team/a`` becomes ``team~2Fa``; the encoding is one-to-one, so decoding is exact.

Links are built from the app's own router plus the request's ``root_path``, so an inspector
mounted under ``/inspector`` in another Starlette or FastAPI app links inside its mount.
"""

from __future__ import annotations

import re
import string
from typing import Any
from urllib.parse import urlencode

from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request

__all__ = ["NamespaceConvertor", "decode_namespace", "encode_namespace", "ns_url", "path_for"]

_PLAIN = frozenset(string.ascii_letters + string.digits + "-_.")
_ESCAPE = re.compile(r"~([0-9A-F]{2})")


def encode_namespace(namespace: str) -> str:
    """``namespace`` as one URL segment: unreserved ASCII kept, every other UTF-8 byte as ``~XX``."""
    out: list[str] = []
    for char in namespace:
        if char in _PLAIN:
            out.append(char)
        else:
            out.extend(f"~{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def decode_namespace(segment: str) -> str:
    """The namespace an :func:`encode_namespace` segment stands for.

    Raises:
        ValueError: ``segment`` is not an encoded namespace (a stray ``~`` or invalid UTF-8).
    """
    raw = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(segment):
        raw += segment[pos : match.start()].encode("ascii")
        raw.append(int(match.group(1), 16))
        pos = match.end()
    raw += segment[pos:].encode("ascii")
    if "~" in _ESCAPE.sub("", segment):
        raise ValueError(f"not an encoded namespace: {segment!r}")
    return raw.decode("utf-8")


class NamespaceConvertor(Convertor[str]):
    """Starlette convertor ``{namespace:ns}``: one segment in the URL, the decoded namespace in the handler."""

    regex = r"(?:[A-Za-z0-9_.\-]|~[0-9A-F]{2})+"

    def convert(self, value: str) -> str:
        """The namespace of a matched segment (bytes that are not UTF-8 become U+FFFD: no such namespace)."""
        try:
            return decode_namespace(value)
        except ValueError:
            return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) < 128 else "\ufffd", value)

    def to_string(self, value: str) -> str:
        """The segment of a namespace."""
        return encode_namespace(value)


register_url_convertor("ns", NamespaceConvertor())


def path_for(request: Request, name: str, /, **path_params: Any) -> str:
    """The absolute path of the inspector's route ``name`` (inside whatever mount serves this request)."""
    root: str = request.scope.get("root_path", "").rstrip("/")
    return root + str(request.app.url_path_for(name, **path_params))


def ns_url(request: Request, route_name: str, namespace: str, /, **params: Any) -> str:
    """A link to ``route_name`` of ``namespace``: route parameters fill the path, the rest the query.

    Query parameters that are ``None`` or ``""`` are left out.

    Example:
        ``ns_url(request, "memory", "team/a", id="42")`` -> ``/ns/team~2Fa/m/42``;
        ``ns_url(request, "namespace", "alice", page=2)`` -> ``/ns/alice?page=2``.
    """
    route_params = _route_params(request, route_name)
    path_params = {k: v for k, v in params.items() if k in route_params}
    query = {k: v for k, v in params.items() if k not in route_params and v is not None and v != ""}
    url = path_for(request, route_name, namespace=namespace, **path_params)
    return f"{url}?{urlencode(query)}" if query else url


def _route_params(request: Request, name: str) -> frozenset[str]:
    for route in request.app.router.routes:
        if getattr(route, "name", None) == name:
            return frozenset(getattr(route, "param_convertors", {}))
    return frozenset()
