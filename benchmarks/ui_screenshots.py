"""The inspector's screenshots for the docs (docs/how-to/inspector.md), one PNG per page.

Builds a store of LoCoMo conversations in a temporary folder (the real model; plus a few knowledge
memories: a supersession chain, a pinned fact, a duplicate pair, a contradiction), serves the
inspector on a free loopback port, and photographs each page in Debian's chromium (headless,
through Playwright) at a fixed 1280x800 viewport:

    python benchmarks/ui_screenshots.py --data ../shared/data/locomo/locomo_dev.json --out docs/images

Writes ``inspector-{namespaces,namespace,memory,ask,explanation,compare,confirm,review}.png`` into
``--out``.
The pages are reached by clicking, as a person would; the confirmation page is photographed and
never confirmed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _ui_browser import NEW_FACT, VIEWPORT, fill_showcase, inspector, launch, locomo_path, served

from memory_retrievers import HashEmbedder, MemoryStore, SentenceTransformerEmbedder

OUT = Path(__file__).resolve().parents[1] / "docs" / "images"
QUESTION = "When did Caroline go to the LGBTQ support group?"
BUDGET = 200
SHOTS = ("namespaces", "namespace", "memory", "ask", "explanation", "compare", "confirm", "review")
#: Scroll so that an element sits just below the top of the viewport (its heading still in view).
SCROLL_TO = "el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 70)"


def click_into(page: Any, namespace: str) -> None:
    page.locator(f'tr[data-testid=namespace-row][data-namespace="{namespace}"] a').first.click()
    page.locator("[data-testid=namespace-summary]").wait_for()


def ask(page: Any, question: str, *, compare: str | None = None) -> None:
    form = page.locator("form[data-testid=ask-form]")
    form.locator("[name=q]").fill(question)
    form.locator("[name=budget]").fill(str(BUDGET))
    if compare:
        form.locator("select[name=compare]").select_option(compare)
    form.locator("button[type=submit], input[type=submit], button:not([type])").first.click()
    page.wait_for_load_state("networkidle")


def photograph(store: MemoryStore, namespace: str, out: Path) -> dict[str, int]:
    """Visit every page and save one PNG each; returns each file's size in bytes."""
    from playwright.sync_api import sync_playwright

    new_fact = next(m for m in store.list(namespace, filter={"kinds": ["fact"]}, limit=100) if m.text == NEW_FACT)
    out.mkdir(parents=True, exist_ok=True)
    with served(inspector(store)) as base, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport=VIEWPORT)

        def shot(name: str) -> None:
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(out / f"inspector-{name}.png"))

        page.goto(base + "/")
        shot("namespaces")
        click_into(page, namespace)
        shot("namespace")
        page.locator(f'tr[data-testid=memory-row][data-id="{new_fact.id}"] a').first.click()
        shot("memory")
        page.locator("a[data-testid=action-forget]").click()
        page.locator("[data-testid=confirm-summary]").wait_for()
        shot("confirm")
        page.go_back()
        page.go_back()
        page.locator("a[data-testid=review-link]").click()
        page.locator("button[data-testid=run-scan]").click()
        page.locator("[data-testid=contradiction]").first.wait_for()
        shot("review")
        page.go_back()
        page.go_back()
        page.locator("a[data-testid=ask-link]").click()
        ask(page, QUESTION)
        page.locator("[data-testid=block]").evaluate(SCROLL_TO)
        shot("ask")
        page.locator("[data-testid=explained-memory]").first.evaluate(SCROLL_TO)
        shot("explanation")
        ask(page, QUESTION, compare="knowledge_base")
        page.locator("[data-testid=compare-diff]").evaluate(SCROLL_TO)
        shot("compare")
        browser.close()
    return {name: (out / f"inspector-{name}.png").stat().st_size for name in SHOTS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=locomo_path(), help="the LoCoMo dev split (locomo_dev.json)")
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder for the PNGs (default {OUT})")
    ap.add_argument("--conversations", type=int, default=2, help="LoCoMo conversations to store (one namespace each)")
    ap.add_argument("--hash-embedder", action="store_true", help="skip the model: fast, but recall is meaningless")
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"LoCoMo data not found at {args.data}: pass --data PATH (../shared/data/locomo)")
    embedder = HashEmbedder(64) if args.hash_embedder else SentenceTransformerEmbedder()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        store = MemoryStore(Path(folder) / "db", embedder=embedder)
        namespaces = fill_showcase(store, args.data, conversations=args.conversations)
        print(f"store of {sum(store.count(ns) for ns in namespaces)} memories built", file=sys.stderr)
        sizes = photograph(store, namespaces[0], args.out)
        store.close()
    for name, size in sizes.items():
        print(f"{args.out / f'inspector-{name}.png'}  {size / 1024:.0f} KB")
    print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
