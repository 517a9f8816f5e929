"""How fast the inspector's pages load on a namespace of 100,000 memories (and 1,000 small ones beside it).

Why: the inspector must stay responsive on a big namespace (issue 30): pages are read a page at
a time, never whole. This measures each page twice, on the same store:

- **server**: the app's own time for the request, in process (Starlette's ``TestClient``, no
  socket): the first request (cold caches) and the median of ``--repeats`` more;
- **browser**: Debian's chromium (headless, through Playwright) loading the page from the app
  served by uvicorn on loopback: the navigation timing's ``loadEventEnd`` (HTML, CSS, script and
  layout done) and time to first byte, medians of ``--repeats`` loads.

Pages: the namespaces page (first and a deep page of the 1,001 namespaces), the big namespace's
page 1, a deep page (``--deep-page``, 1,000 by default: offset 49,950), filtered by kind and
searched by text (BM25), a small namespace, a memory page, the review scans (a POST with the form
token, then the review page it redirects to; the browser loads that review page) and an ask (the
real query embedder).

The store: one namespace ``big`` of ``--size`` memories built as benchmarks/workloads.py builds
its chat namespace (LoCoMo dialogue made into distinct memories, each with the real MiniLM vector
of its dialogue, ``--embedder pooled``; or ``--embedder hash``: no model at all, faster to build,
the ask then meaningless but timed alike), plus ``--namespaces`` namespaces of ``--per`` memories.
It is cached in ``--store`` (a folder; reused when its recorded shape matches) because a build
takes minutes:

    python benchmarks/ui_pages.py --size 100000 --store /tmp/ui-pages-store
    python benchmarks/ui_pages.py --size 100000 --store /tmp/ui-pages-store --profile big-deep

Writes benchmarks/results/ui_pages.json and prints a table. ``--profile PAGE`` prints where the
server's time goes for one page (cProfile over every thread that serves it).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import load_turns
from _ui_browser import VIEWPORT, inspector, launch, locomo_path, served

from memory_retrievers import HashEmbedder, MemoryStore, SentenceTransformerEmbedder

OUT = Path(__file__).parent / "results" / "ui_pages.json"
BIG = "big"
QUESTION = "What did Caroline paint after the charity race?"
SLOW_S = 1.0
LONG_S = 5.0
NAVIGATION = """() => {
    const n = performance.getEntriesByType('navigation')[0];
    return {load: n.loadEventEnd - n.startTime, ttfb: n.responseStart - n.startTime};
}"""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def shape(args: Any) -> dict[str, Any]:
    return {"size": args.size, "namespaces": args.namespaces, "per": args.per, "embedder": args.embedder}


def embedder_for(args: Any, *, building: bool) -> Any:
    """The store's embedder: while building, the pooled one hands out the haystack's vectors."""
    if args.embedder == "hash":
        return HashEmbedder(384)
    model = SentenceTransformerEmbedder()
    if not building:
        return model  # same name and dimension: reads and queries need nothing more
    from workloads import Haystack, PooledEmbedder

    return PooledEmbedder(model, Haystack.of(load_turns(args.data)[: args.pool], model))


def build(args: Any) -> float:
    """Fill ``args.store`` (see the module docstring); returns the seconds it took."""
    from workloads import Haystack

    started = time.perf_counter()
    embedder = embedder_for(args, building=True)
    hay = embedder.haystack if hasattr(embedder, "haystack") else Haystack(load_turns(args.data)[: args.pool], None)
    store = MemoryStore(args.store / "db", embedder=embedder, config={"version_retention": timedelta(seconds=60)})
    for start in range(0, args.size, 5000):
        texts = hay.texts(min(5000, args.size - start), start)
        store.add_many(
            [{"text": t, "kind": "message", "session_id": f"s{(start + i) // 25}"} for i, t in enumerate(texts)],
            namespace=BIG,
            dedup=False,
        )
        log(f"{BIG}: {start + len(texts)} memories")
    batch: list[dict[str, Any]] = []
    for n in range(args.namespaces):
        offset = args.size + n * args.per
        batch += [{"text": t, "namespace": f"user-{n:04d}", "kind": "fact"} for t in hay.texts(args.per, offset)]
        if len(batch) >= 5000 or n == args.namespaces - 1:
            store.add_many(batch, dedup=False)
            batch = []
    store.admin.optimize()
    store.close()
    seconds = time.perf_counter() - started
    (args.store / "shape.json").write_text(json.dumps({**shape(args), "build_s": round(seconds, 1)}))
    return seconds


def open_store(args: Any) -> tuple[MemoryStore, float | None]:
    """The cached store when its shape matches the arguments, else a new build."""
    marker = args.store / "shape.json"
    built = None
    if marker.exists() and {k: v for k, v in json.loads(marker.read_text()).items() if k != "build_s"} == shape(args):
        log(f"reusing the store in {args.store}")
    else:
        shutil.rmtree(args.store, ignore_errors=True)
        args.store.mkdir(parents=True)
        built = build(args)
        log(f"store built in {built:.0f} s")
    return MemoryStore(args.store / "db", embedder=embedder_for(args, building=False)), built


def page_urls(app: Any, store: MemoryStore, args: Any) -> dict[str, str]:
    """Each measured page's path, built by the app's own routes (whatever encoding they give names)."""
    big = str(app.url_path_for("namespace", namespace=BIG))
    middle = store.list(BIG, limit=1, offset=args.size // 2)[0]
    return {
        "namespaces": "/",
        "namespaces-deep": f"/?page={max(1, (args.namespaces + 1) // 50)}",
        "big-page-1": big,
        "big-deep": f"{big}?page={args.deep_page}",
        "big-kind": f"{big}?kind=message&page=2",
        "big-search": f"{big}?q=painting",
        "small-namespace": str(app.url_path_for("namespace", namespace="user-0500")),
        "memory": str(app.url_path_for("memory", namespace=BIG, id=middle.id)),
        "review-scan": f"{big}/review",  # POSTED: the scans run, then the page shows them
        "ask": f"{big}/ask?q={quote(QUESTION)}&budget=500",
    }


#: Pages the server pass reaches by a POST with the app's form token (the browser then loads them by GET).
POSTED = frozenset({"review-scan"})


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def server_times(app: Any, urls: dict[str, str], repeats: int) -> dict[str, dict[str, Any]]:
    from starlette.testclient import TestClient

    out: dict[str, dict[str, Any]] = {}
    token = {"csrf_token": app.state.csrf_token}
    with TestClient(app, base_url="http://127.0.0.1") as client:

        def post(url: str) -> Any:
            return client.post(url, data=token)

        for name, url in urls.items():
            send = post if name in POSTED else client.get
            started = time.perf_counter()
            first = send(url)
            # A POST's response is the page it redirected to: time both requests, not the last one.
            cold = time.perf_counter() - started if name in POSTED else first.elapsed.total_seconds()
            if first.status_code != 200:
                log(f"{name}: HTTP {first.status_code} for {url}: {first.text[:300]}")
            # A page that takes many seconds is timed once more, not ``repeats`` times (it is slow either way).
            warm = [timed(lambda u=url, f=send: f(u)) for _ in range(repeats if cold < LONG_S else 1)]
            out[name] = {
                "status": first.status_code,
                "html_kb": round(len(first.content) / 1024, 1),
                "server_cold_ms": round(cold * 1000, 1),
                "server_p50_ms": round(statistics.median(warm) * 1000, 1),
                "server_runs": 1 + len(warm),
            }
            log(f"{name}: server {out[name]['server_p50_ms']} ms")
    return out


def browser_times(
    app: Any, urls: dict[str, str], repeats: int, server: dict[str, dict[str, Any]]
) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict[str, float]] = {}
    with served(app) as base, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_navigation_timeout(900_000)
        for name, url in urls.items():
            loads, ttfbs = [], []
            for _ in range(repeats if server[name]["server_cold_ms"] < LONG_S * 1000 else 1):
                page.goto(base + url, wait_until="load")
                timing = page.evaluate(NAVIGATION)
                loads.append(timing["load"])
                ttfbs.append(timing["ttfb"])
            out[name] = {
                "browser_load_p50_ms": round(statistics.median(loads), 1),
                "browser_ttfb_p50_ms": round(statistics.median(ttfbs), 1),
            }
            log(f"{name}: browser load {out[name]['browser_load_p50_ms']} ms")
        browser.close()
    return out


def profile(app: Any, url: str) -> str:
    """cProfile of one (warm) request, the app driven in this thread through httpx's ASGI transport."""
    import asyncio

    import httpx

    profiler = cProfile.Profile()

    async def get() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            await client.get(url)  # warm, as in the table
            profiler.enable()
            await client.get(url)
            profiler.disable()

    asyncio.run(get())
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
    return text.getvalue()


def table(rows: list[dict[str, Any]]) -> str:
    columns = [
        ("page", "page", 17),
        ("status", "status", 7),
        ("html_kb", "KB", 7),
        ("server_cold_ms", "server cold ms", 16),
        ("server_p50_ms", "server p50 ms", 15),
        ("browser_load_p50_ms", "browser load ms", 17),
        ("browser_ttfb_p50_ms", "TTFB ms", 9),
    ]
    head = "".join(f"{title:<{w}}" if key == "page" else f"{title:>{w}}" for key, title, w in columns)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append("".join(f"{r[key]:<{w}}" if key == "page" else f"{r[key]:>{w}}" for key, _, w in columns))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000, help="memories in the big namespace")
    ap.add_argument("--namespaces", type=int, default=1000, help="small namespaces beside it")
    ap.add_argument("--per", type=int, default=5, help="memories per small namespace")
    ap.add_argument("--store", type=Path, required=True, help="folder caching the built store (reused when it matches)")
    ap.add_argument("--embedder", choices=["pooled", "hash"], default="pooled")
    ap.add_argument("--pool", type=int, default=4000, help="pooled: dialogue turns the memories are made of")
    ap.add_argument("--data", type=Path, default=locomo_path())
    ap.add_argument("--deep-page", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", help="print where the server's time goes for this page (a name from the table)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    store, built = open_store(args)
    app = inspector(store, read_only=True)  # measuring reads: no action can change the cached store
    urls = page_urls(app, store, args)
    if args.profile:
        print(profile(app, urls[args.profile]))
        store.close()
        return
    server = server_times(app, urls, args.repeats)
    browser = browser_times(app, urls, args.repeats, server)
    store.close()
    rows = [{"page": name, "url": url, **server[name], **browser[name]} for name, url in urls.items()]
    report = {
        "command": " ".join(["python", *sys.argv]),
        "memories_in_big_namespace": args.size,
        "small_namespaces": args.namespaces,
        "memories_per_small_namespace": args.per,
        "vectors": "real MiniLM vectors of the dialogue (workloads.py's haystack); queries real"
        if args.embedder == "pooled"
        else "hash embedder (no model): recall meaningless, timed alike",
        "store_build_s": round(built, 1) if built is not None else "reused",
        "pages": rows,
        "slow_pages": [r["page"] for r in rows if r["server_p50_ms"] > SLOW_S * 1000],
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(rows))
    print(f"vectors: {report['vectors']}")


if __name__ == "__main__":
    main()
