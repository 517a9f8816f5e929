"""The docs page shows exactly the screenshots the script makes, each a small 1280x800 PNG (fast tier)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from _ui_browser import VIEWPORT
from ui_screenshots import SHOTS

from testing.paths import ROOT

PAGE = ROOT / "docs" / "how-to" / "inspector.md"
MAX_BYTES = 250 * 1024


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_page_shows_every_screenshot_the_script_makes() -> None:
    shown = re.findall(r"!\[[^\]]*\]\(\.\./images/inspector-([a-z-]+)\.png\)", PAGE.read_text(encoding="utf-8"))
    assert sorted(shown) == sorted(SHOTS)
    assert "python benchmarks/ui_screenshots.py" in PAGE.read_text(encoding="utf-8")  # how to make them again


def test_each_screenshot_is_a_small_png_at_the_fixed_viewport() -> None:
    for name in SHOTS:
        path = ROOT / "docs" / "images" / f"inspector-{name}.png"
        assert png_size(path) == (VIEWPORT["width"], VIEWPORT["height"]), path
        assert path.stat().st_size <= MAX_BYTES, f"{path}: {path.stat().st_size} bytes"
