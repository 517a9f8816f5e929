"""The explanation pictures: SVG that parses, bars proportional to the numbers, hostile text escaped."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from memory_retrievers import Contribution
from memory_retrievers.ui.ask import ExplainedMemory
from memory_retrievers.ui.pictures import BONUS_COLOUR, CHANNEL_COLOURS, channel_colour, explanation_svg, strip_svg

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert('x')</script> \"quoted\" & <b>bold</b>"


def explained(**changes: object) -> ExplainedMemory:
    base = ExplainedMemory(
        id="m1",
        text="Alice prefers the dark theme",
        line="- [2026-11-26] Alice prefers the dark theme",
        kind="preference",
        section="knowledge",
        pinned=False,
        created_at="2026-11-26T10:00:00+00:00",
        access_count=0,
        rank=1,
        score=0.42,
        relevance=0.5,
        channels=(
            Contribution("vector", "vector", 4, 2.0, 2.0 / 64),  # 0.03125
            Contribution("bm25", "bm25", 1, 1.0, 1.0 / 61),
            Contribution("context", "context", 2, 2.0, 2.0 / 62),
        ),
        rank_bonus=0.05,
        fused_score=2.0 / 64 + 1.0 / 61 + 2.0 / 62 + 0.05,
        semantic=0.3,
        rerank_score=None,
        base_score=0.2,
        multipliers=(("decay", 0.5), ("priority", 1.0), ("pinned", 2.0)),
        final_score=0.2,
        calibration=(("cosine", 0.3),),
        calibrated_by="test",
        mmr_penalty=0.0,
        phase="mmr",
        tokens=12,
        copies=(),
        folded=(),
        superseded=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and title.text == root.get("aria-label")
    return root


def parts(root: ET.Element, part: str) -> list[ET.Element]:
    return [r for r in root.iter(f"{SVG}rect") if r.get("data-part") == part]


def test_the_fusion_bar_is_stacked_by_channel_in_proportion() -> None:
    m = explained()
    root = parse(explanation_svg(m))
    assert root.get("data-testid") == "explanation-picture"
    bars = parts(root, "channel")
    assert [b.get("data-channel") for b in bars] == ["vector", "bm25", "context"]
    widths = [float(b.get("width", "0")) for b in bars]
    bonus = float(parts(root, "bonus")[0].get("width", "0"))
    for width, p in zip(widths, m.channels, strict=True):
        assert math.isclose(width / widths[0], p.value / m.channels[0].value, rel_tol=1e-3)
    assert math.isclose(bonus / widths[0], 0.05 / m.channels[0].value, rel_tol=1e-3)
    assert math.isclose(sum(widths) + bonus, 330, rel_tol=1e-3)  # a memory's own scale: the full bar
    xs = [float(b.get("x", "0")) for b in bars]
    assert all(math.isclose(xs[i] + widths[i], xs[i + 1], abs_tol=1e-2) for i in range(len(xs) - 1))
    assert [b.get("fill") for b in bars] == [CHANNEL_COLOURS[c] for c in ("vector", "bm25", "context")]


def test_a_page_scale_keeps_bars_comparable_across_memories() -> None:
    m = explained()
    own = sum(float(b.get("width", "0")) for b in parts(parse(explanation_svg(m)), "channel"))
    half = sum(
        float(b.get("width", "0")) for b in parts(parse(explanation_svg(m, fused_scale=2 * m.fused_score)), "channel")
    )
    assert math.isclose(half, own / 2, rel_tol=1e-3)


def test_the_waterfall_goes_from_base_to_final_through_each_multiplier() -> None:
    root = parse(explanation_svg(explained()))
    steps = parts(root, "multiplier")
    assert [s.get("data-name") for s in steps] == ["decay", "priority", "pinned"]
    fills = [s.get("fill") for s in steps]
    assert fills[0] == "#e15759" and fills[2] == "#59a14f"  # down by decay, up by the pin
    base = float(parts(root, "base")[0].get("width", "0"))
    final = float(parts(root, "final")[0].get("width", "0"))
    assert math.isclose(base, final, rel_tol=1e-3)  # 0.2 x 0.5 x 1 x 2 = 0.2
    assert math.isclose(float(steps[0].get("width", "0")), base / 2, rel_tol=1e-3)  # 0.2 -> 0.1
    label = root.get("aria-label", "")
    assert "fused score 0.1299" in label and "decay 0.500" in label and "final 0.2000" in label
    assert "vector rank 4" in label and "calibrated score 0.420" in label


def test_the_legend_names_each_channel_once_and_the_bonus() -> None:
    m = explained(channels=(*explained().channels, Contribution("vector:rewrite", "vector", 2, 0.5, 0.5 / 62)))
    texts = [t.text for t in parse(explanation_svg(m)).iter(f"{SVG}text")]
    assert texts.count("vector") == 1 and "rank bonus" in texts and "bm25" in texts


def test_hostile_text_is_escaped() -> None:
    m = explained(
        id='"><script>x</script>',
        text=HOSTILE,
        channels=(Contribution(HOSTILE, HOSTILE, 1, 1.0, 0.1),),
        multipliers=((HOSTILE, 1.5),),
    )
    for svg in (explanation_svg(m), strip_svg([m], [replace(m, rank=None)])):
        assert "<script>" not in svg and "<b>" not in svg
        root = parse(svg)  # the escaped text still parses, and reads back as given
        assert any(HOSTILE in (t.text or "") for t in root.iter(f"{SVG}title"))
    assert HOSTILE[:40] in parse(explanation_svg(m)).get("aria-label", "")


@pytest.mark.parametrize(
    "changes",
    [
        {"channels": (), "rank_bonus": 0.0, "fused_score": 0.0, "base_score": 0.0, "final_score": 0.0},
        {"rank_bonus": -0.1, "base_score": -0.5, "final_score": -0.25, "multipliers": (("decay", 0.5),)},
        {"semantic": None, "multipliers": (), "score": float("nan"), "final_score": float("inf")},
        {"channels": (Contribution("vector", "vector", 1, 0.0, 0.0),), "multipliers": (("decay", 0.0),)},
    ],
)
def test_zero_negative_and_missing_values_draw(changes: dict[str, object]) -> None:
    m = explained(**changes)
    root = parse(explanation_svg(m))
    assert all(float(r.get("width", "0")) >= 0 for r in root.iter(f"{SVG}rect"))
    assert all(math.isfinite(float(r.get("width", "0"))) for r in root.iter(f"{SVG}rect"))
    parse(strip_svg([m], [replace(m, id="m2", rank=None)]))
    parse(strip_svg([], []))


def test_the_strip_chart_puts_winners_above_losers_and_draws_the_cut() -> None:
    winners = [explained(id="w1", score=0.9), explained(id="w2", score=0.5)]
    losers = [explained(id="l1", rank=None, score=0.3), explained(id="l2", rank=None, score=0.1)]
    root = parse(strip_svg(winners, losers))
    dots = {c.get("data-id"): c for c in root.iter(f"{SVG}circle")}
    assert set(dots) == {"w1", "w2", "l1", "l2"}
    assert dots["w1"].get("data-won") == "true" and dots["l1"].get("data-won") == "false"
    x = {k: float(v.get("cx", "0")) for k, v in dots.items()}
    assert math.isclose((x["w1"] - 110) / (x["l2"] - 110), 9, rel_tol=1e-3)  # proportional, on an axis from 0
    (cut,) = [line for line in root.iter(f"{SVG}line") if line.get("data-cut")]
    assert float(cut.get("data-cut", "0")) == 0.5 and math.isclose(float(cut.get("x1", "0")), x["w2"])
    label = root.get("aria-label", "")
    assert "2 selected and 2 not selected" in label and "lowest selected is 0.500" in label
    assert "best not selected 0.300" in label


def test_channel_colours_are_stable_and_plug_ins_get_one_too() -> None:
    assert channel_colour("vector") == CHANNEL_COLOURS["vector"]
    assert channel_colour("activation") == channel_colour("activation")
    assert channel_colour("activation").startswith("#") and BONUS_COLOUR not in CHANNEL_COLOURS.values()
