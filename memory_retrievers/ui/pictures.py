"""Explanations as pictures: inline SVG strings, no JavaScript, every text escaped.

Two pictures: :func:`explanation_svg` (one memory: its fused score as a bar stacked by channel,
then its multipliers as a waterfall from the base score to the final score) and
:func:`strip_svg` (the winners' and losers' scores on one axis, with the selection cut line).
Each is an ``<svg role="img">`` whose ``<title>`` and ``aria-label`` say in words what it shows.
A channel has the same colour in every picture of a page (:func:`channel_colour`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from html import escape
from typing import Literal

from memory_retrievers.ui.ask import ExplainedMemory

__all__ = ["BONUS_COLOUR", "CHANNEL_COLOURS", "channel_colour", "explanation_svg", "strip_svg"]

CHANNEL_COLOURS = {
    "vector": "#4e79a7",
    "bm25": "#f28e2b",
    "context": "#e15759",
    "dated": "#76b7b2",
    "entity": "#59a14f",
    "recency": "#edc948",
    "links": "#b07aa1",
    "hyde": "#ff9da7",
}
"""The built-in channels' colours (Tableau 10)."""

BONUS_COLOUR = "#9c755f"
"""The top-rank bonus's colour."""

_FALLBACK = ("#bab0ac", "#86bcb6", "#d37295", "#a0cbe8", "#8cd17d", "#f1ce63", "#499894", "#fabfd2")
_TIMES = "\N{MULTIPLICATION SIGN}"
_UP, _DOWN, _FLAT = "#59a14f", "#e15759", "#999999"

_WIDTH = 600
_LABEL_W = 110
_BAR_W = 330
_ROW_H = 18
_GAP = 6


def channel_colour(channel: str) -> str:
    """A channel's colour: a built-in's fixed one, a plug-in's picked by a stable hash of its name."""
    if channel in CHANNEL_COLOURS:
        return CHANNEL_COLOURS[channel]
    digest = hashlib.sha256(channel.encode("utf-8", "replace")).digest()
    return _FALLBACK[digest[0] % len(_FALLBACK)]


def _num(value: float | None) -> float:
    """A number fit to draw: ``None``, NaN and infinities count as 0."""
    if value is None or not math.isfinite(value):
        return 0.0
    return float(value)


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.{digits}f}"


def _px(value: float, scale: float) -> float:
    """The width of ``value`` on a bar of :data:`_BAR_W` pixels for ``scale`` (negative: 0)."""
    if scale <= 0 or value <= 0:
        return 0.0
    return round(min(value, scale) / scale * _BAR_W, 3)


def _svg(width: int, height: int, summary: str, body: Iterable[str], testid: str) -> str:
    said = escape(summary, quote=True)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" data-testid="{testid}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" aria-label="{said}">'
        f"<title>{said}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", cls: str = "label") -> str:
    return (
        f'<text x="{x}" y="{y}" text-anchor="{anchor}" class="{cls}" font-size="11">{escape(text, quote=True)}</text>'
    )


def _rect(x: float, y: float, w: float, colour: str, tip: str, **data: str) -> str:
    attrs = "".join(f' data-{k}="{escape(v, quote=True)}"' for k, v in data.items())
    return (
        f'<rect x="{x}" y="{y}" width="{w}" height="{_ROW_H - 4}" fill="{colour}"{attrs}>'
        f"<title>{escape(tip, quote=True)}</title></rect>"
    )


def explanation_svg(memory: ExplainedMemory, *, fused_scale: float | None = None) -> str:
    """One memory's score as a picture: fusion by channel, then the multipliers' waterfall.

    Args:
        memory: The explained memory.
        fused_scale: The fused score a full bar stands for (give the page's largest, so that bars
            compare across memories); default: this memory's own.

    Returns:
        An ``<svg>`` string; its ``aria-label`` spells the arithmetic out.
    """
    parts = [(p.label, p.channel, _num(p.value), p.rank) for p in memory.channels]
    bonus = _num(memory.rank_bonus)
    total = sum(max(v, 0.0) for _, _, v, _ in parts) + max(bonus, 0.0)
    scale = max(_num(fused_scale), total)
    y = _GAP
    body = [_text(4, y + 12, "fusion"), *_fusion_bar(parts, bonus, scale, y)]
    body.append(_text(_LABEL_W + _BAR_W + 8, y + 12, f"= {_fmt(memory.fused_score)}"))
    y += _ROW_H + _GAP
    steps, height = _waterfall(memory, y)
    body += steps
    legend, height = _legend([c for _, c, _, _ in parts], bonus > 0, height)
    body += legend
    return _svg(_WIDTH, height, _summary(memory), body, "explanation-picture")


def _fusion_bar(parts: Sequence[tuple[str, str, float, int]], bonus: float, scale: float, y: float) -> list[str]:
    """The stacked bar: one segment per ranked list, then the bonus."""
    out = [f'<rect x="{_LABEL_W}" y="{y}" width="{_BAR_W}" height="{_ROW_H - 4}" fill="#f2f2f2"/>']
    x = float(_LABEL_W)
    for label, channel, value, rank in parts:
        w = _px(value, scale)
        tip = f"{label}: rank {rank}, adds {_fmt(value)}"
        out.append(_rect(x, y, w, channel_colour(channel), tip, part="channel", channel=channel, value=repr(value)))
        x += w
    w = _px(bonus, scale)
    out.append(_rect(x, y, w, BONUS_COLOUR, f"rank bonus {_fmt(bonus)}", part="bonus", value=repr(bonus)))
    return out


def _waterfall(memory: ExplainedMemory, y: float) -> tuple[list[str], int]:
    """Base score, each multiplier's step, final score; returns the elements and the height used."""
    base, final = _num(memory.base_score), _num(memory.final_score)
    running = [base]
    for _, factor in memory.multipliers:
        running.append(running[-1] * _num(factor))
    scale = max([*running, final, 0.0]) or 1.0
    out = [_text(4, y + 12, "base score"), _rect(_LABEL_W, y, _px(base, scale), "#777777", "base", part="base")]
    out.append(_text(_LABEL_W + _BAR_W + 8, y + 12, _fmt(memory.base_score)))
    y += _ROW_H
    for (name, factor), before, after in zip(memory.multipliers, running, running[1:], strict=False):
        low, high = sorted((before, after))
        colour = _UP if after > before else _DOWN if after < before else _FLAT
        x = _LABEL_W + _px(low, scale)
        w = max(_px(high, scale) - _px(low, scale), 1.0)  # a factor of 1 still shows as a tick
        out.append(_text(4, y + 12, f"{_TIMES} {name}"))
        out.append(_rect(x, y, w, colour, f"{name} {_TIMES} {_fmt(factor, 3)}", part="multiplier", name=name))
        out.append(_text(_LABEL_W + _BAR_W + 8, y + 12, f"{_TIMES} {_fmt(factor, 3)} → {_fmt(after)}"))
        y += _ROW_H
    out.append(_text(4, y + 12, "final score"))
    out.append(_rect(_LABEL_W, y, _px(final, scale), "#333333", "final", part="final"))
    out.append(_text(_LABEL_W + _BAR_W + 8, y + 12, _fmt(memory.final_score)))
    return out, int(y + _ROW_H + _GAP)


def _legend(channels: Sequence[str], bonus: bool, y: int) -> tuple[list[str], int]:
    """A swatch per channel shown (each once), and the bonus's."""
    names = list(dict.fromkeys(channels))
    items = [(n, channel_colour(n)) for n in names] + ([("rank bonus", BONUS_COLOUR)] if bonus else [])
    out = ['<g class="legend">']
    x = 4
    for name, colour in items:
        if x > _WIDTH - 90:
            x, y = 4, y + 16
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour}"/>')
        out.append(_text(x + 14, y + 9, name))
        x += 24 + 7 * min(len(name), 16)
    out.append("</g>")
    return out, y + 16


def _summary(memory: ExplainedMemory) -> str:
    """The arithmetic of one memory's score in words (the picture's title)."""
    lists = " + ".join(f"{p.label} rank {p.rank} ({_fmt(p.value)})" for p in memory.channels) or "no channel"
    factors = f" {_TIMES} ".join(f"{name} {_fmt(f, 3)}" for name, f in memory.multipliers)
    text = memory.text if len(memory.text) <= 60 else memory.text[:57] + "..."
    return (
        f"Why {text!r}: fused score {_fmt(memory.fused_score)} = {lists} + bonus {_fmt(memory.rank_bonus)}; "
        f"base {_fmt(memory.base_score)}" + (f" {_TIMES} {factors}" if factors else "") + f" = final "
        f"{_fmt(memory.final_score)}; calibrated score {_fmt(memory.score, 3)}"
    )


def strip_svg(
    winners: Sequence[ExplainedMemory],
    losers: Sequence[ExplainedMemory],
    *,
    value: Literal["score", "final_score"] = "score",
) -> str:
    """Winners and losers on one axis, with the selection's cut line.

    Args:
        winners: The selected memories.
        losers: The best candidates not selected.
        value: Which number to plot: ``score`` (the calibrated score selection takes candidates
            by, in [0, 1]) or ``final_score`` (the rank score of fusion and the multipliers).

    Returns:
        An ``<svg>`` string with one dot per memory.
    """
    points = [(m, _num(getattr(m, value)), True) for m in winners] + [
        (m, _num(getattr(m, value)), False) for m in losers
    ]
    # The axis ends a little past the best score, so that low scores (most calibrated ones are) spread out.
    top = round(max([v for _, v, _ in points] + [0.0]) * 1.1, 6) or 1.0
    rows = {True: 14, False: 40}
    body = [_text(4, rows[True] + 4, "selected"), _text(4, rows[False] + 4, "not selected")]
    body.append(f'<line x1="{_LABEL_W}" y1="56" x2="{_LABEL_W + _BAR_W}" y2="56" stroke="#999"/>')
    body += [_text(_LABEL_W, 70, "0"), _text(_LABEL_W + _BAR_W, 70, _fmt(top, 2), anchor="end")]
    for m, v, won in points:
        cx = _LABEL_W + _px(v, top)
        tip = f"{m.text[:80]} ({value} {_fmt(v, 3)})"
        colour = "#4e79a7" if won else "#e15759"
        body.append(
            f'<circle cx="{cx}" cy="{rows[won]}" r="5" fill="{colour}" fill-opacity="0.7" '
            f'data-id="{escape(m.id, quote=True)}" data-won="{str(won).lower()}">'
            f"<title>{escape(tip, quote=True)}</title></circle>"
        )
    words = f"{value.replace('_', ' ')}s of {len(winners)} selected and {len(losers)} not selected memories"
    if winners:
        cut = min(_num(getattr(m, value)) for m in winners)
        x = _LABEL_W + _px(cut, top)
        body.append(f'<line x1="{x}" y1="2" x2="{x}" y2="52" stroke="#333" stroke-dasharray="3,2" data-cut="{cut!r}"/>')
        words += f"; the lowest selected is {_fmt(cut, 3)}"
    if losers:
        words += f", the best not selected {_fmt(max(_num(getattr(m, value)) for m in losers), 3)}"
    return _svg(_WIDTH, 76, words[0].upper() + words[1:], body, "strip-picture")
