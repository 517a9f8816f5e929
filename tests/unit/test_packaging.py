"""One license for the core and both adapters, shipped in each distribution."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = [ROOT, ROOT / "integrations" / "langchain", ROOT / "integrations" / "llama-index"]


@pytest.mark.parametrize("folder", DISTRIBUTIONS, ids=lambda p: p.name)
def test_each_distribution_is_apache_2_and_ships_the_license_text(folder: Path) -> None:
    # (tomllib is 3.11+; the project supports 3.10)
    assert re.findall(r'(?m)^license = "([^"]+)"$', (folder / "pyproject.toml").read_text()) == ["Apache-2.0"]
    text = (folder / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
