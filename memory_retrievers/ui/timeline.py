"""A namespace's timeline as an inline SVG: memories created per day, week or month, stacked by kind.

Drawn on the server (no charting library, no script): one ``<rect>`` per kind and period, coloured
by a CSS class per kind (``k-fact``...), with a ``<title>`` tooltip giving the period and counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from html import escape

from memory_retrievers.models import MemoryKind

__all__ = ["Timeline", "bucket_timeline", "timeline_svg"]

#: Most bars drawn; a longer history is shown by week, then by month.
MAX_BARS = 120
_WIDTH, _HEIGHT, _AXIS = 720, 160, 18


@dataclass(frozen=True, slots=True)
class Timeline:
    """Counts per period and kind.

    Attributes:
        unit: ``"day"``, ``"week"`` (starting Monday) or ``"month"``.
        starts: The first day of each period, oldest first, without gaps.
        counts: For each period, memories per kind.
    """

    unit: str
    starts: list[date]
    counts: list[dict[str, int]]


def _period(day: date, unit: str) -> date:
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    return day


def _next(start: date, unit: str) -> date:
    if unit == "month":
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return start + timedelta(days=7 if unit == "week" else 1)


def bucket_timeline(daily: Sequence[tuple[date, str, int]]) -> Timeline:
    """Group ``(day, kind, count)`` by the finest of day, week or month that needs at most :data:`MAX_BARS` bars."""
    if not daily:
        return Timeline("day", [], [])
    first, last = min(d for d, _, _ in daily), max(d for d, _, _ in daily)
    span = (last - first).days + 1
    unit = "day" if span <= MAX_BARS else "week" if span <= MAX_BARS * 7 else "month"
    tally: Counter[tuple[date, str]] = Counter()
    for day, kind, count in daily:
        tally[(_period(day, unit), kind)] += count
    starts: list[date] = []
    current = _period(first, unit)
    while current <= last:
        starts.append(current)
        current = _next(current, unit)
    kinds = [k.value for k in MemoryKind]
    counts = [{k: tally[(s, k)] for k in kinds if tally[(s, k)]} for s in starts]
    return Timeline(unit, starts, counts)


def timeline_svg(timeline: Timeline) -> str:
    """The timeline as an ``<svg data-testid="timeline">`` element (safe to embed: every text is escaped)."""
    n = len(timeline.starts)
    head = (
        f'<svg data-testid="timeline" class="timeline" viewBox="0 0 {_WIDTH} {_HEIGHT + _AXIS}" '
        f'role="img" aria-label="memories created per {timeline.unit}, by kind">'
    )
    if n == 0:
        return head + f'<text x="8" y="{_HEIGHT // 2}">no memories</text></svg>'
    peak = max(sum(c.values()) for c in timeline.counts) or 1
    bar = _WIDTH / n
    parts = [head, f"<title>memories created per {timeline.unit}, by kind (highest bar: {peak})</title>"]
    for i, (start, counts) in enumerate(zip(timeline.starts, timeline.counts, strict=True)):
        y = float(_HEIGHT)
        label = escape(f"{timeline.unit} of {start.isoformat()}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        parts.append(f"<g><title>{label or escape(start.isoformat())}</title>")
        for kind, count in counts.items():
            h = _HEIGHT * count / peak
            y -= h
            parts.append(
                f'<rect class="k-{escape(kind)}" x="{i * bar:.2f}" y="{y:.2f}" width="{max(bar - 1, 0.5):.2f}" '
                f'height="{h:.2f}"></rect>'
            )
        parts.append("</g>")
    parts.append(f'<text class="axis" x="0" y="{_HEIGHT + _AXIS - 4}">{escape(timeline.starts[0].isoformat())}</text>')
    parts.append(
        f'<text class="axis" x="{_WIDTH}" y="{_HEIGHT + _AXIS - 4}" text-anchor="end">'
        f"{escape(timeline.starts[-1].isoformat())}</text></svg>"
    )
    return "".join(parts)
