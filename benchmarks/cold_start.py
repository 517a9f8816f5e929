"""Cold start: what a fresh process pays before its first answer (the README's figures).

Why: a CLI call, a serverless function or a freshly forked worker pays the imports and the model
load before anything else. Each run is a new interpreter, so nothing is cached in memory. The
figure that matters is import -> first recall (``to_first_recall_s``): the README quickstart's
path, model load included. ``--compare`` alternates runs with the model loaded in the background
while the store opens (the default) and runs where it loads on the first write (as before issue 42),
so both are measured under the same load.

    python benchmarks/cold_start.py [--runs 3] [--compare]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_PROBE = """
import json, sys, tempfile, time
t0 = time.perf_counter()
from memory_retrievers import MemoryRetriever, MemoryStore
if sys.argv[1] == "on-first-write":
    from memory_retrievers import SentenceTransformerEmbedder
    SentenceTransformerEmbedder.load_in_background = lambda self: None
t1 = time.perf_counter()
store = MemoryStore(tempfile.mkdtemp())
t2 = time.perf_counter()
store.add("Alice prefers the dark theme", namespace="alice", kind="preference")
t3 = time.perf_counter()
MemoryRetriever(store, namespace="alice").recall("which theme does she like?")
t4 = time.perf_counter()
MemoryRetriever(store, namespace="alice").recall("what about the editor?")
t5 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_add_s": t3 - t2,
                  "first_recall_s": t4 - t3, "next_recall_s": t5 - t4, "to_first_recall_s": t4 - t0}))
"""


def probe(mode: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: round(v, 3) for k, v in figures.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="fresh processes to time (per mode with --compare)")
    ap.add_argument("--compare", action="store_true", help="alternate with runs loading the model on first write")
    args = ap.parse_args()
    modes = ["background", "on-first-write"] if args.compare else ["background"]
    totals: dict[str, list[float]] = {m: [] for m in modes}
    for n in range(args.runs):
        for mode in modes if n % 2 == 0 else modes[::-1]:
            figures = probe(mode)
            totals[mode].append(figures["to_first_recall_s"])
            print(json.dumps({"model load": mode, **figures}), flush=True)
    print(json.dumps({f"to_first_recall_s p50, {m}": round(statistics.median(v), 3) for m, v in totals.items()}))


if __name__ == "__main__":
    main()
