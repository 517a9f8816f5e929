"""Calendar dates a query names, as spans of time (pure functions).

"What did Nate make on 9 November, 2022?" is about what was said that day: on the LoCoMo dev
split, 81 % of the evidence turns of questions naming a date were written within the named day,
month or year. Recall boosts memories created within a named span and searches them as their own
channel (see :class:`~memory_retrievers.RecallConfig`). Only absolute dates are read: a day
("9 November, 2022", "November 9th 2022", "2022-11-09"), a month ("November 2022") or a year
("in 2022"). Relative ones ("last week") need the time of the conversation, not of the recall.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = ["DateSpan", "mentioned_dates"]


@dataclass(frozen=True, slots=True)
class DateSpan:
    """A span of time in UTC, ``start`` included, ``end`` excluded."""

    start: datetime
    end: datetime

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` (naive means UTC) falls within the span."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return self.start <= moment < self.end

    def contains_seconds(self, seconds: float) -> bool:
        """Whether a POSIX timestamp falls within the span."""
        return self.start.timestamp() <= seconds < self.end.timestamp()


_MONTHS = {name.casefold(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.casefold(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
# "may" is also a verb: only the capitalised month counts.
_MONTH = "(?:May|(?i:" + "|".join(sorted((m for m in _MONTHS if m != "may"), key=len, reverse=True)) + r")\.?)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = (
    ("ymd", re.compile(r"(?<!\d)((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})(?!\d)")),
    ("dmy", re.compile(rf"(?<!\d){_DAY}\s+(?:of\s+)?({_MONTH}),?\s+{_YEAR}(?!\d)")),
    ("mdy", re.compile(rf"\b({_MONTH})\s+{_DAY},?\s+{_YEAR}(?!\d)")),
    ("my", re.compile(rf"\b({_MONTH}),?\s+(?:of\s+)?{_YEAR}(?!\d)")),
    ("y", re.compile(rf"(?<![\d-]){_YEAR}(?![\d-])")),
)


def _month(name: str) -> int:
    return _MONTHS[name.rstrip(".").casefold()]


def _span(kind: str, groups: tuple[str, ...]) -> DateSpan | None:
    utc = timezone.utc
    try:
        if kind == "y":
            year = int(groups[0])
            return DateSpan(datetime(year, 1, 1, tzinfo=utc), datetime(year + 1, 1, 1, tzinfo=utc))
        if kind == "my":
            year, month = int(groups[1]), _month(groups[0])
            end = datetime(year + 1, 1, 1, tzinfo=utc) if month == 12 else datetime(year, month + 1, 1, tzinfo=utc)
            return DateSpan(datetime(year, month, 1, tzinfo=utc), end)
        if kind == "ymd":
            day = datetime(int(groups[0]), int(groups[1]), int(groups[2]), tzinfo=utc)
        elif kind == "dmy":
            day = datetime(int(groups[2]), _month(groups[1]), int(groups[0]), tzinfo=utc)
        else:
            day = datetime(int(groups[2]), _month(groups[0]), int(groups[1]), tzinfo=utc)
    except ValueError:  # "31 February": not a date
        return None
    return DateSpan(day, day + timedelta(days=1))


def mentioned_dates(text: str) -> tuple[DateSpan, ...]:
    """The days, months and years ``text`` names, in the order found, without repeats.

    A year that is part of a fuller date counts once, as that date.

    >>> [(s.start.date().isoformat(), s.end.date().isoformat()) for s in mentioned_dates("on 9 November, 2022")]
    [('2022-11-09', '2022-11-10')]
    """
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, DateSpan]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            taken.append(match.span())
            span = _span(kind, match.groups())
            if span is not None and all(span != s for _, s in found):
                found.append((match.start(), span))
    return tuple(span for _, span in sorted(found, key=lambda item: item[0]))
