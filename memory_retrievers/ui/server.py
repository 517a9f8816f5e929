"""Serving the inspector with uvicorn: :func:`serve` (blocking), with the checks of a safe bind first."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memory_retrievers.ui.app import create_app
from memory_retrievers.ui.security import check_bind, is_loopback

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["serve", "url_of"]


def url_of(host: str, port: int, token: str | None) -> str:
    """The URL to open in a browser (with ``?token=`` when there is one: the first visit sets the cookie)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def serve(
    store_or_uri: MemoryStore | str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    read_only: bool = False,
    allowed_hosts: list[str] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the inspector until interrupted (Ctrl-C).

    Args:
        store_or_uri: An open store, or a folder/URI opened here with the default embedder (and
            closed on exit).
        host: Address to bind; anything but loopback needs ``token``.
        port: Port (``0``: a free one, printed when the server is up).
        token: Access token (see :func:`~memory_retrievers.ui.create_app`).
        read_only: Refuse every change.
        allowed_hosts: Extra names the ``Host`` header may carry (``host`` itself is allowed).
        on_ready: Called with the URL (token included) once the server listens; by default it is
            printed to stderr.

    Raises:
        ConfigError: A non-loopback ``host`` without ``token``.
    """
    check_bind(host, token)
    from memory_retrievers.store.memory_store import MemoryStore

    owned = not isinstance(store_or_uri, MemoryStore)
    if isinstance(store_or_uri, MemoryStore):
        store = store_or_uri
    else:  # long-lived: see what other processes (the command line, the agent) commit meanwhile
        store = MemoryStore(store_or_uri, config={"read_consistency_interval": timedelta(0)})
    hosts = [*(allowed_hosts or []), *_own_names(host)]
    app = create_app(store, read_only=read_only, token=token, allowed_hosts=hosts)
    try:
        asyncio.run(_run(app, host, port, token, on_ready or _announce))
    finally:
        if owned:
            store.close()


def _own_names(host: str) -> list[str]:
    """The names a browser may use for this bind: the host itself, or this machine's for a wildcard bind."""
    if is_loopback(host):
        return []
    if host not in ("0.0.0.0", "::", ""):
        return [host]
    import socket

    name = socket.gethostname()
    try:
        _, aliases, addresses = socket.gethostbyname_ex(name)
    except OSError:  # no resolver entry for our own name: the name alone
        aliases, addresses = [], []
    return [name, socket.getfqdn(), *aliases, *addresses]


def _announce(url: str) -> None:
    print(f"memory inspector: {url}", file=sys.stderr, flush=True)


async def _run(app: Any, host: str, port: int, token: str | None, on_ready: Callable[[str], None]) -> None:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False))
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.05)
    if server.started:
        bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
        on_ready(url_of(host, int(bound), token))
    await task
