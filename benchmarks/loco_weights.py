"""Leave-one-conversation-out choice of the recall defaults on the LoCoMo dev split.

Why: a default tuned on the questions it is scored on flatters itself. Each of the six dev
conversations is held out in turn; the grid point with the best evidence recall@10 on the other
five is scored on the held-out one. The mean over the held-out questions is the LOCO figure, and
the grid point best on all six is what the defaults should be (the script says whether they are).

The grid is the knobs this release added or re-weighed: ``speaker_boost``, ``date_boost``, the
``dated`` channel's weight and the ``context`` channel's weight. Everything else stays at its
default, with zero LLM calls. Query embeddings are cached across grid points (the same questions
are asked again), so the whole grid takes minutes, not hours.

    python benchmarks/loco_weights.py [--data PATH] [--out PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, load_turns
from locomo_recall import Embedder, K, build_ours, load_questions

from memory_retrievers import MemoryRetriever, RecallConfig

GRID: dict[str, tuple[float, ...]] = {
    "speaker_boost": (1.0, 1.5, 2.0),
    "date_boost": (1.0, 1.5, 2.0),
    "dated": (0.0, 1.0, 2.0),
    "context": (2.0, 3.0),
}


class CachedQueries:
    """The shared model, with query embeddings remembered (the grid asks each question many times)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._queries: dict[str, np.ndarray] = {}
        self.name, self.dimension = model.name, model.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.embed_documents(texts))

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(await self._model.aembed_documents(texts))

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = np.asarray(self._model.embed_query(text))
        return self._queries[text]

    async def aembed_query(self, text: str) -> np.ndarray:
        return self.embed_query(text)


def config_of(point: tuple[float, ...]) -> dict[str, Any]:
    speaker, date, dated, context = point
    return {"scoring": {"speaker_boost": speaker, "date_boost": date}, "weights": {"dated": dated, "context": context}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "loco_weights.json")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    turns = load_turns(args.data)
    questions = load_questions(args.data)
    emb = Embedder(turns)
    emb.model = CachedQueries(emb.model)  # type: ignore[assignment]
    ends = {}
    for t in turns:
        ends[t.conversation] = max(ends.get(t.conversation, t.created_at), t.created_at)
    conversations = sorted(ends)
    points = list(itertools.product(*GRID.values()))
    # point -> conversation -> recall@10 of each of its questions
    scores: dict[tuple[float, ...], dict[str, list[float]]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        _, store, dia_of = build_ours(turns, emb, Path(tmp), {})
        for point in points:
            cfg = {**config_of(point), "record_access": False}
            rets = {c: MemoryRetriever(store, namespace=c, config=cfg) for c in conversations}
            per: dict[str, list[float]] = {c: [] for c in conversations}
            for conv, q, ev, _ in questions:
                res = rets[conv].recall(q, k=K, token_budget=None, now=ends[conv] + timedelta(days=1))
                per[conv].append(len({dia_of[m.id] for m in res.memories} & ev) / len(ev))
            scores[point] = per
        store.close()

    def mean(point: tuple[float, ...], convs: Sequence[str]) -> float:
        return float(np.mean([x for c in convs for x in scores[point][c]]))

    folds = []
    held_out: list[float] = []
    for held in conversations:
        train = [c for c in conversations if c != held]
        best = max(points, key=lambda p: mean(p, train))  # ties: the first in grid order
        held_out += scores[best][held]
        folds.append(
            {
                "held_out": held,
                "chosen": config_of(best),
                "recall@10 on the other five": round(mean(best, train), 3),
                "recall@10 held out": round(mean(best, [held]), 3),
            }
        )
        print(f"{held}: chose {config_of(best)} -> held out {mean(best, [held]):.3f}")
    best_all = max(points, key=lambda p: mean(p, conversations))
    d = RecallConfig()
    defaults = (d.scoring.speaker_boost, d.scoring.date_boost, d.weights.dated, d.weights.context)
    out = {
        "grid": GRID,
        "questions": len(questions),
        "loco_recall@10": round(float(np.mean(held_out)), 3),
        "folds": folds,
        "best_on_all": config_of(best_all),
        "best_on_all_recall@10": round(mean(best_all, conversations), 3),
        "defaults": config_of(defaults),
        "defaults_recall@10": round(mean(defaults, conversations), 3) if defaults in scores else None,
        "defaults_are_best_on_all": defaults == best_all,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"LOCO recall@10: {out['loco_recall@10']}")
    print(f"best on all six: {out['best_on_all']} ({out['best_on_all_recall@10']})")
    print(f"defaults {out['defaults']}: {out['defaults_recall@10']} (best on all: {out['defaults_are_best_on_all']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
