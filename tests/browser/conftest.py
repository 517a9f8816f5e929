"""The inspector in a real browser: Debian's chromium driven by Playwright, on a store of LoCoMo conversations.

Long tier (each module sets ``pytestmark = pytest.mark.long``). The store holds two LoCoMo
conversations embedded by the real model plus a few knowledge memories (a supersession chain, a
pinned fact, a duplicate pair, a contradiction: ``benchmarks/_ui_browser.py``), shared by every
test of the session; tests that change it pick memories no other test relies on.

Chromium: ``.ci/run`` installs Debian's package, so a missing ``/usr/bin/chromium`` fails these
tests loudly; set ``MEMORY_RETRIEVERS_SKIP_BROWSER=1`` to skip them on a machine without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from memory_retrievers import MemoryStore, SentenceTransformerEmbedder
from testing.paths import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _steps.py, the tests' shared steps

from _steps import ODD, ODD_MEMORIES, TOKEN, Recorded
from _ui_browser import CHROMIUM, VIEWPORT, fill_showcase, inspector, launch, locomo_path, served

LOCOMO = locomo_path()
SKIP_ENV = "MEMORY_RETRIEVERS_SKIP_BROWSER"


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's chromium, or a loud failure (CI installs it; skipping needs an explicit opt-out)."""
    if not CHROMIUM.exists():
        if os.environ.get(SKIP_ENV):
            pytest.skip(f"{CHROMIUM} is missing and {SKIP_ENV} is set")
        pytest.fail(
            f"{CHROMIUM} is missing: `apt-get install --no-install-recommends chromium` (.ci/run does), "
            f"or set {SKIP_ENV}=1 to skip the browser tests"
        )
    if not LOCOMO.exists():
        pytest.fail(f"the LoCoMo dev split is missing at {LOCOMO} (../shared/data/locomo)")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Any]:
    # Per module, not per session: while Playwright's sync API is started, its event loop counts as
    # running in the main thread, and every later async test of the session (pytest-asyncio) fails
    # with "Cannot run the event loop while another loop is running".
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def locomo_store(
    tmp_path_factory: pytest.TempPathFactory, minilm: SentenceTransformerEmbedder
) -> Iterator[MemoryStore]:
    """Two LoCoMo conversations (conv-26, conv-30), the showcase's knowledge memories, and :data:`ODD`."""
    store = MemoryStore(tmp_path_factory.mktemp("browser") / "db", embedder=minilm)
    fill_showcase(store, LOCOMO, conversations=2)
    for text in ODD_MEMORIES:
        store.add(text, namespace=ODD, kind="fact")
    yield store
    store.close()


@pytest.fixture(scope="session")
def app_url(locomo_store: MemoryStore) -> Iterator[str]:
    with served(inspector(locomo_store)) as url:
        yield url


@pytest.fixture(scope="session")
def token_url(locomo_store: MemoryStore) -> Iterator[str]:
    with served(inspector(locomo_store, token=TOKEN)) as url:
        yield url


@pytest.fixture(scope="session")
def read_only_url(locomo_store: MemoryStore) -> Iterator[str]:
    with served(inspector(locomo_store, read_only=True)) as url:
        yield url


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


@pytest.fixture
def page(browser: Any, recorded: Recorded) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page; every request it makes must stay on loopback.

    The teardown also fails on a Content-Security-Policy violation in the console (an inline
    script or style, an asset from elsewhere): the inspector's pages must work under its own CSP.
    """
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.on("request", lambda request: recorded.requests.append(request.url))
    page.on("console", lambda msg: recorded.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda error: recorded.console_errors.append(f"uncaught: {error}"))
    yield page
    context.close()
    hosts = {urlsplit(u).hostname for u in recorded.requests if not u.startswith(("data:", "about:"))}
    assert hosts <= {"127.0.0.1", "localhost"}, f"requests left loopback: {sorted(hosts)}"
    csp = [e for e in recorded.console_errors if "Content Security Policy" in e or e.startswith("uncaught")]
    assert not csp, csp
