"""Cold start: what a fresh process pays before its first answer (the README's figures).

Why: a CLI call, a serverless function or a freshly forked worker pays the imports and the model
load before anything else. Each run is a new interpreter, so nothing is cached in memory.

    python benchmarks/cold_start.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_PROBE = """
import json, tempfile, time
t0 = time.perf_counter()
from memory_retrievers import MemoryRetriever, MemoryStore
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
                  "first_recall_s": t4 - t3, "next_recall_s": t5 - t4}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="fresh processes to time")
    args = ap.parse_args()
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}), flush=True)


if __name__ == "__main__":
    main()
