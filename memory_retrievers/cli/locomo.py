"""LoCoMo conversations: turned into memories (``import``), and the evidence-recall evaluation (``eval locomo``).

LoCoMo (Maharana et al., 2024) is a list of conversations, each with ``conversation``
(``speaker_a``, ``speaker_b``, ``session_N`` turn lists with ``session_N_date_time``) and ``qa``
(questions with ``evidence`` dialog ids and a ``category``). The turn text and timestamps follow
the project's recall benchmark (``benchmarks/locomo_recall.py``): ``"Speaker: text"`` (a shared
photo's caption appended), each turn at its session's date plus its index in seconds, so the
figures printed by ``eval locomo`` are comparable with the README's table.

Metric: evidence recall@k = share of a question's evidence turns among the top k memories,
averaged over the answerable questions (categories 1-4) that have evidence; hit@k = any evidence
turn in the top k.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["CATEGORY_NAMES", "Question", "Turn", "evaluate", "is_locomo", "questions", "turns"]

#: LoCoMo's answerable categories, as labelled in most follow-up work (label names vary; report by number).
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D\d+:\d+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialog turn as a memory record source."""

    conversation: str
    session: str
    dia_id: str
    speaker: str
    text: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Question:
    """One answerable question with its evidence turns."""

    conversation: str
    question: str
    evidence: frozenset[str]
    category: int


def is_locomo(value: Any) -> bool:
    """Whether parsed JSON looks like LoCoMo (a conversation or a list of them)."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(c, Mapping) and isinstance(c.get("conversation"), Mapping) for c in items)


def _session_date(raw: str) -> datetime:
    # e.g. "1:56 pm on 8 May, 2023"
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def conversations(value: Any) -> list[Mapping[str, Any]]:
    """The conversations of parsed LoCoMo JSON."""
    return list(value) if isinstance(value, list) else [value]


def turns(conversation: Mapping[str, Any], index: int = 0) -> Iterator[Turn | tuple[str, str]]:
    """The turns of one conversation in order, or ``(where, problem)`` for a malformed part.

    ``index`` names conversations without a ``sample_id``.
    """
    name = str(conversation.get("sample_id") or f"conversation-{index + 1}")
    conv = conversation["conversation"]
    sessions = sorted((k for k in conv if _SESSION.fullmatch(k)), key=lambda k: int(k.split("_")[1]))
    n = 0
    for session in sessions:
        where = f"{name} {session}"
        try:
            date = _session_date(str(conv[f"{session}_date_time"]))
        except (KeyError, ValueError) as exc:
            yield where, f"no usable {session}_date_time ({exc}); expected e.g. '1:56 pm on 8 May, 2023'"
            continue
        if not isinstance(conv[session], list):
            yield where, f"{session} is not a list of turns"
            continue
        for t in conv[session]:
            if not isinstance(t, Mapping) or not all(isinstance(t.get(k), str) for k in ("speaker", "dia_id", "text")):
                yield f"{where} turn {n + 1}", "a turn needs string speaker, dia_id and text"
                n += 1
                continue
            text = t["text"]
            if t.get("blip_caption"):
                text = f"{text} [shares a photo: {t['blip_caption']}]"
            yield Turn(name, session, t["dia_id"], t["speaker"], f"{t['speaker']}: {text}", date)
            n += 1


def questions(conversation: Mapping[str, Any], index: int = 0) -> list[Question]:
    """The answerable questions (categories 1-4) with at least one well-formed evidence id."""
    name = str(conversation.get("sample_id") or f"conversation-{index + 1}")
    out = []
    for q in conversation.get("qa") or []:
        if not isinstance(q, Mapping) or q.get("category") not in CATEGORY_NAMES or not q.get("evidence"):
            continue
        # A few evidence strings hold several ids ("D8:6; D9:17"): split them.
        evidence = frozenset(p for e in q["evidence"] for p in re.split(r"[;,\s]+", str(e)) if _DIA.fullmatch(p))
        if evidence and isinstance(q.get("question"), str):
            out.append(Question(name, q["question"], evidence, int(q["category"])))
    return out


def turn_records(items: Sequence[Turn], *, namespace: str | None) -> list[dict[str, Any]]:
    """Memory records of turns: one namespace per conversation unless ``namespace`` is given."""
    return [
        {
            "text": t.text,
            "namespace": namespace or t.conversation,
            "kind": "message",
            "session_id": f"{t.conversation}/{t.session}",
            # Seconds after the session start by position, as the benchmark: turns keep their order.
            "created_at": t.created_at + timedelta(seconds=i),
            "metadata": {"dia_id": t.dia_id, "speaker": t.speaker, "conversation": t.conversation},
        }
        for i, t in enumerate(items)
    ]


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the evidence-recall table."""

    label: str
    questions: int
    recall_at_5: float
    recall_at_10: float
    hit_at_10: float
    p50_ms: float
    p95_ms: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "label": self.label,
            "questions": self.questions,
            "recall@5": self.recall_at_5,
            "recall@10": self.recall_at_10,
            "hit@10": self.hit_at_10,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
        }


def _row(label: str, scored: Sequence[tuple[float, float, float, float]]) -> Row:
    lat = sorted(s[3] for s in scored)
    return Row(
        label,
        len(scored),
        round(statistics.fmean(s[0] for s in scored), 3),
        round(statistics.fmean(s[1] for s in scored), 3),
        round(statistics.fmean(s[2] for s in scored), 3),
        round(statistics.median(lat), 2),
        round(lat[max(0, int(0.95 * len(lat)) - 1)], 2),
    )


def evaluate(
    qs: Sequence[Question],
    recall: Callable[[Question], list[str]],
    *,
    progress: Callable[[int], None] | None = None,
) -> list[Row]:
    """Evidence recall of ``recall`` (question -> dia ids, best first): overall, then per category.

    Args:
        qs: The questions.
        recall: Returns the dialog ids of the memories recalled for a question, best first.
        progress: Called with the number of questions done.
    """
    scored: list[tuple[int, tuple[float, float, float, float]]] = []
    for i, q in enumerate(qs):
        start = time.perf_counter()
        got = recall(q)
        ms = (time.perf_counter() - start) * 1000
        ev = q.evidence
        scored.append(
            (
                q.category,
                (
                    len(set(got[:5]) & ev) / len(ev),
                    len(set(got[:10]) & ev) / len(ev),
                    float(bool(set(got[:10]) & ev)),
                    ms,
                ),
            )
        )
        if progress is not None:
            progress(i + 1)
    if not scored:
        return []
    rows = [_row("all", [s for _, s in scored])]
    for category, name in CATEGORY_NAMES.items():
        part = [s for c, s in scored if c == category]
        if part:
            rows.append(_row(f"{category} {name}", part))
    return rows
