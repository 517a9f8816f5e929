"""What each distribution ships: one license for the core and both adapters, the core without test servers."""

from __future__ import annotations

import contextlib
import re
from importlib.metadata import requires
from pathlib import Path

import pytest

from testing.paths import ROOT

DISTRIBUTIONS = [ROOT, ROOT / "integrations" / "langchain", ROOT / "integrations" / "llama-index"]


@pytest.mark.parametrize("folder", DISTRIBUTIONS, ids=lambda p: p.name)
def test_each_distribution_is_apache_2_and_ships_the_license_text(folder: Path) -> None:
    # (tomllib is 3.11+; the project supports 3.10)
    assert re.findall(r'(?m)^license = "([^"]+)"$', (folder / "pyproject.toml").read_text()) == ["Apache-2.0"]
    text = (folder / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def _core_pyproject() -> str:
    return (ROOT / "pyproject.toml").read_text()


def test_the_core_wheel_and_sdist_hold_only_the_library_not_the_test_servers() -> None:
    text = _core_pyproject()
    assert re.findall(r"(?ms)^\[tool\.hatch\.build\.targets\.wheel\]\npackages = (\[.*?\])$", text) == [
        '["memory_retrievers"]'
    ]
    sdist = re.findall(r"(?ms)^\[tool\.hatch\.build\.targets\.sdist\]\ninclude = (\[.*?\])$", text)
    assert sdist == ['["memory_retrievers", "README.md", "pyproject.toml"]']
    # the servers live beside the tests (on pytest's path), not under the shipped package
    assert {"local_s3.py", "race_proxy.py"} <= {p.name for p in (ROOT / "testing").glob("*.py")}
    assert not list((ROOT / "memory_retrievers").rglob("local_s3.py"))
    assert not list((ROOT / "memory_retrievers").rglob("race_proxy.py"))
    assert re.findall(r"(?m)^pythonpath = (\[.*\])$", text) == ['["."]']


def test_the_core_publishes_no_extra_for_test_tools() -> None:
    extras = re.findall(r"(?ms)^\[project\.optional-dependencies\]\n(.*?)\n\n", _core_pyproject())
    assert len(extras) == 1
    names = re.findall(r"(?m)^([a-z0-9-]+) = ", extras[0])
    assert names == ["offline-model", "mcp", "ray", "ui"]  # local-s3 went with the server it installed SeaweedFS for


def test_the_command_line_dependencies_cost_the_core_nothing() -> None:
    """Why click and rich stay required rather than an extra: the rest of the core already pulls both.

    sentence-transformers -> transformers -> typer -> click, rich (measured 2026-11-26: the core's
    installed closure is 61 distributions, 1,707 MB, the same with or without click and rich).
    If this fails, an extra for the command line would now make the core lighter: measure again.
    """
    core = _required("memory-retrievers")
    assert {"click", "rich"} <= core
    rest = _closure(core - {"click", "rich"})
    assert {"click", "rich"} <= rest


def _required(distribution: str) -> set[str]:
    """The distributions ``distribution`` requires here (extras left out, environment markers applied)."""
    from packaging.requirements import Requirement

    out = set()
    for line in requires(distribution) or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.add(req.name.lower().replace("_", "-"))
    return out


def _closure(names: set[str]) -> set[str]:
    """Every distribution these require, transitively, as installed here."""
    from importlib.metadata import PackageNotFoundError

    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        with contextlib.suppress(PackageNotFoundError):
            todo += _required(name)
    return seen
