"""``min_relevance``: how often recall abstains (returns nothing) vs how much evidence recall it costs.

Why: ``ScoredMemory.score`` is a fused rank score that orders one recall and means nothing across
queries; ``ScoredMemory.relevance`` (cosine similarity to the query, clipped to [0, 1]) is meant
to be compared with a fixed threshold. This measures, on the LoCoMo dev split with the default
model, for each threshold:

- answerable questions (categories 1-4): evidence recall@10 and hit@10, and how often the result
  is empty (a wrong abstention);
- adversarial questions (category 5): how often the result is empty. These ask about something
  the conversation says of the *other* speaker, so their words match real turns: a similarity
  threshold can hardly tell them apart, and the figure says how little it does;
- off-topic questions (a fixed list unrelated to any conversation, asked of every conversation):
  how often the result is empty, i.e. how often an agent gets nothing rather than noise;
- the relevance of the best memory per question, per group (median and 10th/90th percentiles).

    python benchmarks/relevance.py [--data ../shared/data/locomo/locomo_dev.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from _data import DEFAULT_LOCOMO, load_turns

from memory_retrievers import MemoryRetriever, MemoryStore

K = 10
THRESHOLDS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4)
OFF_TOPIC = [
    "What is the quantum chromodynamics lecture schedule?",
    "How do I reset the router's firmware?",
    "What is the boiling point of tungsten?",
    "Which compiler flags enable link-time optimisation?",
    "What was the GDP of Portugal in 1987?",
    "How many moons does Neptune have?",
    "What is the syntax of a SQL window function?",
    "Who designed the Eiffel Tower's elevators?",
    "How do you calculate a mortgage amortisation table?",
    "What is the half-life of carbon-14?",
]


def questions(path: Path) -> list[tuple[str, str, set[str], int]]:
    """(conversation, question, evidence dia_ids, category) for categories 1-5."""
    out = []
    for conv in json.loads(path.read_text()):
        for q in conv["qa"]:
            if q.get("category") in (1, 2, 3, 4, 5) and q.get("evidence"):
                evidence = {e.strip() for e in q["evidence"]}
                out.append((conv["sample_id"], q["question"], evidence, q["category"]))
    return out


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    cuts = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return {"p10": round(cuts[0], 3), "median": round(statistics.median(values), 3), "p90": round(cuts[-1], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON (never copied into the repo)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "relevance.json")
    args = ap.parse_args()

    turns = load_turns(args.data)
    qs = questions(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "store")
        added = store.add_many(
            [
                {
                    "text": t.text,
                    "namespace": t.conversation,
                    "kind": "message",
                    "session_id": t.session,
                    "created_at": t.created_at + timedelta(seconds=i),
                }
                for i, t in enumerate(turns)
            ]
        )
        dia_of = {m.id: t.dia_id for m, t in zip(added, turns, strict=True)}
        store.admin.optimize()
        ends: dict[str, datetime] = {}
        for t in turns:
            ends[t.conversation] = max(ends.get(t.conversation, t.created_at), t.created_at)
        asked = [(conv, q, ev, cat) for conv, q, ev, cat in qs] + [
            (conv, q, set(), 0) for conv in ends for q in OFF_TOPIC
        ]
        results: dict[str, Any] = {"k": K, "questions": {}, "thresholds": {}}
        best: dict[str, list[float]] = {"answerable": [], "adversarial": [], "off_topic": []}
        for threshold in THRESHOLDS:
            cfg = {"record_access": False, "relevance": {"min_relevance": threshold}}
            rets = {conv: MemoryRetriever(store, namespace=conv, config=cfg) for conv in ends}
            recall10: list[float] = []
            hits: list[float] = []
            empty = {"answerable": 0, "adversarial": 0, "off_topic": 0}
            counts = {"answerable": 0, "adversarial": 0, "off_topic": 0}
            for conv, q, evidence, cat in asked:
                group = "off_topic" if cat == 0 else "adversarial" if cat == 5 else "answerable"
                res = rets[conv].recall(q, k=K, token_budget=None, now=ends[conv] + timedelta(days=1))
                counts[group] += 1
                empty[group] += not res.memories
                if threshold == 0.0 and res.memories:
                    best[group].append(max(m.relevance for m in res.memories))
                if group == "answerable":
                    found = {dia_of[m.id] for m in res.memories}
                    recall10.append(len(found & evidence) / len(evidence))
                    hits.append(float(bool(found & evidence)))
            results["questions"] = counts
            results["thresholds"][str(threshold)] = {
                "evidence_recall@10": round(statistics.mean(recall10), 3),
                "hit@10": round(statistics.mean(hits), 3),
                "empty_answerable": round(empty["answerable"] / counts["answerable"], 3),
                "empty_adversarial": round(empty["adversarial"] / counts["adversarial"], 3),
                "empty_off_topic": round(empty["off_topic"] / counts["off_topic"], 3),
            }
            print(threshold, results["thresholds"][str(threshold)], flush=True)
        results["best_relevance"] = {group: percentiles(values) for group, values in best.items()}
        store.close()
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
