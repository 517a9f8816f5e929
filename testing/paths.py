"""Where the repository's folders are, for tests wherever they sit in ``tests/``."""

from __future__ import annotations

from pathlib import Path

#: The repository root (the folder holding ``pyproject.toml``).
ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
TESTS = ROOT / "tests"
