"""The namespace timeline: per day, week or month by span, stacked by kind, escaped SVG."""

from __future__ import annotations

from datetime import date, timedelta

from memory_retrievers.ui.timeline import MAX_BARS, bucket_timeline, timeline_svg


def test_a_short_history_is_drawn_per_day_without_gaps() -> None:
    d = date(2025, 3, 1)
    tl = bucket_timeline([(d, "fact", 2), (d, "event", 1), (d + timedelta(days=3), "fact", 4)])
    assert tl.unit == "day"
    assert tl.starts == [d + timedelta(days=i) for i in range(4)]
    assert tl.counts == [{"fact": 2, "event": 1}, {}, {}, {"fact": 4}]
    svg = timeline_svg(tl)
    assert svg.startswith('<svg data-testid="timeline"') and svg.count("<rect") == 3
    assert "highest bar: 4" in svg


def test_longer_histories_are_drawn_per_week_then_per_month() -> None:
    start = date(2024, 1, 3)  # a Wednesday
    weekly = bucket_timeline([(start, "fact", 1), (start + timedelta(days=MAX_BARS + 10), "fact", 1)])
    assert weekly.unit == "week" and weekly.starts[0] == date(2024, 1, 1)  # weeks start on Monday
    assert len(weekly.starts) <= MAX_BARS
    monthly = bucket_timeline([(start, "fact", 1), (start + timedelta(days=MAX_BARS * 7 + 1), "event", 2)])
    assert monthly.unit == "month" and monthly.starts[0] == date(2024, 1, 1)
    assert all(s.day == 1 for s in monthly.starts) and sum(sum(c.values()) for c in monthly.counts) == 3


def test_an_empty_timeline_and_a_kind_that_is_not_a_memory_kind() -> None:
    assert "no memories" in timeline_svg(bucket_timeline([]))
    svg = timeline_svg(bucket_timeline([(date(2025, 1, 1), "<script>", 1)]))
    assert "<script>" not in svg and "<rect" not in svg  # only MemoryKind values become bars (and CSS classes)
