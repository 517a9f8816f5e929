"""What the inspector's browser tests, screenshots and page timings share: a store, a server, a browser.

- :func:`fill_showcase` fills a store with LoCoMo conversations (one namespace each, every turn a
  ``message`` as the CLI's LoCoMo import stores them) plus a few knowledge memories in the first
  conversation's namespace that give every page something to show: a supersession chain, a pinned
  preference, a fuzzy duplicate pair and a contradiction.
- :func:`served` runs an ASGI app under uvicorn in a background thread on a free loopback port.
- :func:`launch` starts Debian's chromium through Playwright (never Playwright's own download),
  with the flags that keep it off the network: without ``--disable-background-networking`` and
  friends it phones home at start, which a closed network refuses.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _data import DEFAULT_LOCOMO
from bulk_ray import records_of

from memory_retrievers import MemoryStore

CHROMIUM = Path("/usr/bin/chromium")
#: chromium's flags here: no sandbox (containers), no GPU, and nothing that reaches the internet.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}

#: Knowledge memories added to the first conversation's namespace (LoCoMo conv-26: Caroline and Melanie).
FACTS: list[dict[str, Any]] = [
    {"text": "Caroline is researching adoption agencies", "kind": "fact", "entities": ["Caroline"]},
    {"text": "Melanie prefers painting landscapes at sunrise", "kind": "preference", "entities": ["Melanie"]},
    {"text": "Caroline likes hiking in the mountains", "kind": "preference", "entities": ["Caroline"]},
    {"text": "Caroline does not like hiking in the mountains", "kind": "preference", "entities": ["Caroline"]},
    {"text": "Melanie runs a pottery class for kids", "kind": "fact", "entities": ["Melanie"]},
    {"text": "Melanie runs a pottery class for kids on Saturdays", "kind": "fact", "entities": ["Melanie"]},
]
#: The fact that is superseded (edited) once, and its newer text.
OLD_FACT = {"text": "Caroline wants to study psychology", "kind": "fact", "entities": ["Caroline"]}
NEW_FACT = "Caroline started a counseling certification course"
PINNED = {"text": "Caroline is a transgender woman and an LGBTQ activist", "kind": "fact", "pinned": True}


def locomo_path() -> Path:
    """The checkout's own ``../shared/data`` folder, or the shared one beside the git worktrees."""
    beside_worktrees = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
    return next((p for p in (DEFAULT_LOCOMO, beside_worktrees) if p.exists()), DEFAULT_LOCOMO)


def locomo_records(path: Path, conversations: int) -> list[dict[str, Any]]:
    """The first ``conversations`` LoCoMo conversations as chat records, one namespace each."""
    wanted = {c["sample_id"] for c in json.loads(path.read_text())[:conversations]}
    return [r for r in records_of(path, None) if r["namespace"] in wanted]


def questions(path: Path, namespace: str) -> list[str]:
    """The LoCoMo questions (with evidence) asked about one conversation."""
    for conv in json.loads(path.read_text()):
        if conv["sample_id"] == namespace:
            return [q["question"] for q in conv["qa"] if q.get("evidence") and q.get("category") in (1, 2, 3, 4)]
    raise ValueError(f"no conversation {namespace!r} in {path}")


def fill_showcase(store: MemoryStore, path: Path, *, conversations: int = 2) -> list[str]:
    """Fill ``store`` (see the module docstring); returns the namespaces, in LoCoMo order."""
    records = locomo_records(path, conversations)
    store.add_many(records, dedup=False)
    namespaces = list(dict.fromkeys(r["namespace"] for r in records))
    first = namespaces[0]
    store.add_many(FACTS, namespace=first, dedup=False)
    old = store.add(OLD_FACT["text"], namespace=first, kind="fact", entities=OLD_FACT["entities"])
    store.supersede(old.id, NEW_FACT, namespace=first)
    store.add(PINNED["text"], namespace=first, kind="fact", pinned=True)
    return namespaces


def inspector(store: MemoryStore, **options: Any) -> Any:
    """``memory_retrievers.ui.create_app(store, **options)``, with the ask page's routes wired in.

    Before the issue's branches are merged the app's routes lack the ask page (its handler lives
    in ``ui.routes_ask``, which the merge adds in front of the app's own): add it the way the
    merged app must, with the app's namespace convertor (``{namespace:ns}``, one escaped segment)
    so that a namespace with a slash, a space or a percent sign reaches the ask page intact.
    """
    from starlette.routing import NoMatchFound, Route

    from memory_retrievers.ui import create_app

    app = create_app(store, **options)
    try:
        app.url_path_for("ask", namespace="x")
    except NoMatchFound:
        from memory_retrievers.ui import routes_ask

        app.router.routes.insert(0, Route("/ns/{namespace:ns}/ask", routes_ask.ask_page, methods=["GET"], name="ask"))
    return app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def served(app: Any, *, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread; yields its base URL (``http://127.0.0.1:PORT``)."""
    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError(f"uvicorn did not start on {host}:{port}")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def launch(playwright: Any) -> Any:
    """Debian's chromium, headless, through Playwright (raises if it is not installed)."""
    if not CHROMIUM.exists():
        raise FileNotFoundError(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install --no-install-recommends chromium)"
        )
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
