"""The zero-LLM contradiction scan on LoCoMo's extracted facts, against a hand-labelled sample.

The sample is every pair of facts, within one conversation of the dev split, whose polarities
differ (one negated, one not) and whose cores overlap by at least 0.3 (Jaccard): the pairs the scan
could flag at any threshold down to 0.3. Each was read and labelled by hand; the labels are below
as (conversation, fact index, fact index) -> contradicts?, where fact indices count the
conversation's ``observation`` facts in file order, so no LoCoMo text is copied here. Reported:
how many pairs the scan flags at each threshold, and how many of those are labelled contradictions.

    python benchmarks/contradictions.py [--data PATH] [--out benchmarks/results/contradictions.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO

from memory_retrievers.formation import find_contradictions
from memory_retrievers.formation.contradictions import contradiction_core

# Hand labels. None of the 25 is a contradiction: most pair an encouragement with "not give up";
# the closest calls (conv-42 190/251, 118/251: Nate won a tournament last week / did not make the
# finals of the last one) are different tournaments in different sessions.
LABELS: dict[tuple[str, int, int], bool] = {
    pair: False
    for pair in [
        ("conv-30", 30, 114), ("conv-30", 114, 126), ("conv-30", 80, 114), ("conv-30", 114, 140),
        ("conv-30", 33, 140), ("conv-30", 31, 140), ("conv-44", 88, 208), ("conv-42", 207, 251),
        ("conv-30", 80, 167), ("conv-30", 90, 114), ("conv-43", 62, 91), ("conv-30", 115, 143),
        ("conv-30", 33, 115), ("conv-30", 33, 80), ("conv-30", 31, 115), ("conv-30", 31, 80),
        ("conv-44", 68, 70), ("conv-43", 71, 72), ("conv-43", 31, 62), ("conv-42", 190, 251),
        ("conv-42", 118, 251), ("conv-41", 87, 133), ("conv-30", 76, 167), ("conv-42", 163, 251),
        ("conv-42", 47, 251),
    ]
}  # fmt: skip


def facts_by_conversation(path: Path) -> dict[str, list[str]]:
    return {
        conv["sample_id"]: [f[0] for obs in conv["observation"].values() for facts in obs.values() for f in facts]
        for conv in json.loads(path.read_text())
    }


def sample(facts: dict[str, list[str]], min_overlap: float = 0.3) -> set[tuple[str, int, int]]:
    """Every opposite-polarity pair with core overlap >= ``min_overlap`` (what was labelled)."""
    out = set()
    for conv, texts in facts.items():
        cores = [contradiction_core(t) for t in texts]
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                (a, na), (b, nb) = cores[i], cores[j]
                if na != nb and len(a) >= 2 and len(b) >= 2 and len(a & b) / len(a | b) >= min_overlap:
                    out.add((conv, i, j))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "contradictions.json")
    args = ap.parse_args()
    facts = facts_by_conversation(args.data)
    labelled = sample(facts)
    if labelled != set(LABELS):
        raise SystemExit(f"the data differs from the labelled sample ({len(labelled)} pairs vs {len(LABELS)})")
    rows = []
    for threshold in (0.75, 0.6, 0.5, 0.4, 0.3):
        flagged = {
            (conv, c.first, c.second)
            for conv, texts in facts.items()
            for c in find_contradictions(texts, min_overlap=threshold)
        }
        true = sum(1 for pair in flagged if LABELS.get(pair))
        rows.append(
            {
                "min_overlap": threshold,
                "flagged": len(flagged),
                "labelled_contradictions_flagged": true,
                "precision": round(true / len(flagged), 3) if flagged else None,
            }
        )
        print(rows[-1])
    result = {
        "facts": sum(len(t) for t in facts.values()),
        "labelled_pairs": len(LABELS),
        "labelled_contradictions": sum(LABELS.values()),
        "by_threshold": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "by_threshold"}))


if __name__ == "__main__":
    main()
