from datetime import datetime, timedelta, timezone

import pytest

from memory_retrievers import Memory, MemoryKind, RecallConfig
from memory_retrievers.recall.scoring import DecayKind, ScoringConfig, ScoringContext, decay, multipliers
from memory_retrievers.text.dates import DateSpan

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)
# The pure curves (decay weight 1) with the config's other constants; each test varies one field.
# The scoring functions take the config's scoring section itself: a new scoring option is a field of
# ScoringConfig read by multipliers(), one file (scoring.py), with no mirror to keep in step.
PURE = ScoringConfig(decay_weight=1.0, kind_boosts={})


def params_with(**changes: object) -> ScoringConfig:  # the pure curves with one field changed
    return PURE.model_copy(update=changes)


def mem(**kw: object) -> Memory:
    base = {"id": "m", "namespace": "n", "text": "t", "created_at": NOW - timedelta(days=30)}
    return Memory(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "days", "expected"),
    [
        (DecayKind.HYPERBOLIC, 0, 1.0),
        (DecayKind.HYPERBOLIC, 60, 0.5),  # 1 / (1 + 60/60)
        (DecayKind.HYPERBOLIC, 120, 1 / 3),  # 1 / (1 + 120/60)
        (DecayKind.EXPONENTIAL, 60, 0.5),  # 0.5 ** (60/60)
        (DecayKind.EXPONENTIAL, 120, 0.25),
        (DecayKind.NONE, 1000, 1.0),
        (DecayKind.HYPERBOLIC, -5, 1.0),  # future timestamps do not boost
    ],
)
def test_decay_curves(kind: DecayKind, days: float, expected: float) -> None:
    assert decay(days, params_with(decay=kind)) == pytest.approx(expected)


def test_decay_weight_blends_towards_one() -> None:
    # w = 0.25 at 60 days: 0.75 + 0.25 * 0.5 = 0.875
    assert decay(60, params_with(decay_weight=0.25)) == pytest.approx(0.875)


def test_multipliers_by_hand() -> None:
    m = mem(priority=2.0, pinned=True, kind=MemoryKind.INSIGHT, project="p", topic="t")
    out = multipliers(
        m, ScoringContext(now=NOW, project="p", topic="t"), params_with(kind_boosts={MemoryKind.INSIGHT: 1.5})
    )
    # 30 days since creation, never accessed: 1 / (1 + 30/60) = 2/3
    assert out == pytest.approx({"decay": 2 / 3, "priority": 2.0, "pinned": 1.1, "kind": 1.5, "project": 1.3})


def test_last_access_resets_decay() -> None:
    m = mem(last_accessed_at=NOW - timedelta(days=6))
    assert multipliers(m, ScoringContext(now=NOW), params_with())["decay"] == pytest.approx(1 / 1.1)


@pytest.mark.parametrize(("project", "factor"), [("p", 1.3), ("other", 0.8), (None, 0.9)])
def test_project_boost_and_penalties(project: str | None, factor: float) -> None:
    out = multipliers(mem(project=project), ScoringContext(now=NOW, project="p"), params_with())
    assert out["project"] == factor


def test_topic_scoping() -> None:
    ctx = ScoringContext(now=NOW, topic="cooking")
    assert multipliers(mem(topic="travel"), ctx, params_with())["topic"] == 0.4
    assert "topic" not in multipliers(mem(topic="cooking"), ctx, params_with())
    assert "topic" not in multipliers(mem(topic=None), ctx, params_with())
    assert "project" not in multipliers(mem(project="x"), ScoringContext(now=NOW), params_with())


def test_the_speaker_cue_boosts_only_the_named_speakers_chat_turns() -> None:
    ctx = ScoringContext(now=NOW, speakers=frozenset({"melanie"}))
    params = params_with(speaker_boost=1.5)
    assert multipliers(mem(text="Melanie: I paint", kind=MemoryKind.MESSAGE), ctx, params)["speaker"] == 1.5
    assert "speaker" not in multipliers(mem(text="Caroline: Melanie paints", kind=MemoryKind.MESSAGE), ctx, params)
    assert "speaker" not in multipliers(mem(text="Melanie: a fact, not a turn", kind=MemoryKind.FACT), ctx, params)
    assert "speaker" not in multipliers(
        mem(text="Melanie: I paint", kind=MemoryKind.MESSAGE), ScoringContext(now=NOW), params
    )


def test_the_date_cue_boosts_memories_created_within_a_named_span() -> None:
    day = DateSpan(NOW - timedelta(days=30), NOW - timedelta(days=29))
    ctx = ScoringContext(now=NOW, dates=(day,))
    params = params_with(date_boost=2.0)
    assert multipliers(mem(), ctx, params)["date"] == 2.0  # created 30 days ago: the span's first instant
    assert "date" not in multipliers(mem(created_at=NOW - timedelta(days=29)), ctx, params)  # end excluded
    assert "date" not in multipliers(mem(), ScoringContext(now=NOW), params)
    assert RecallConfig().scoring.date_boost == 2.0 and RecallConfig().scoring.speaker_boost == 2.0


def test_the_scoring_functions_take_only_the_scoring_section() -> None:
    # Before 1.0 there is no ScoringParams mirror: the section itself is the one way to pass them.
    import memory_retrievers.recall.scoring as scoring

    assert not hasattr(scoring, "ScoringParams") and not hasattr(RecallConfig(), "scoring_params")
