"""LangGraph's own BaseStore test suite, run against ``MemoryStoreLangGraph``.

LangGraph publishes its store tests only inside the source distribution of
``langgraph-checkpoint-sqlite`` (MIT, LangChain, Inc.). ``upstream/`` holds ``tests/test_store.py``
and ``tests/test_async_store.py`` of that sdist, unchanged, for the release the ``test`` extra pins,
and its TTL tests ``tests/test_ttl.py`` (sync and async: ``await store.start_ttl_sweeper()``)
(so this runs offline; ``upstream/README.md`` says where they come from and how to refresh them).
This test runs them in a child pytest, with ``langgraph_store_shim`` changing only how the store is
built (see that module for what it changes and which tests it skips, and why).

The suite builds one store per test; both of its connection variants ("memory", "file") would
build the same store here, so only the "memory" variants run.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: What the shim skips, by test name (the shim lives beside this file; read, not imported).
SKIPPED: dict[str, str] = runpy.run_path(str(HERE / "langgraph_store_shim.py"))["SKIPPED"]
PACKAGE = "langgraph-checkpoint-sqlite"
#: The release whose tests ``upstream/`` holds.
UPSTREAM_VERSION = "3.1.2"
#: How many of its tests run here (the "memory" variants, less the skipped ones): fewer means some went missing.
UPSTREAM_RUNS = 85
UPSTREAM = HERE / "upstream"
SUITES = ("tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py")


def test_the_vendored_suite_matches_the_installed_release() -> None:
    # The tests import helpers of the installed package; they are only meaningful for their release.
    assert version(PACKAGE) == UPSTREAM_VERSION, (
        f"{PACKAGE} {version(PACKAGE)} is installed but upstream/ holds the tests of {UPSTREAM_VERSION}: "
        "install the pinned release (pip install -r requirements-dev.txt) or refresh upstream/ (see its README.md)"
    )
    for suite in SUITES:
        assert (UPSTREAM / suite).is_file(), suite


@pytest.mark.heavy
@pytest.mark.standard
def test_langgraph_store_suite_passes(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", *SUITES, "-p", "langgraph_store_shim", "-p", "no:cacheprovider"),
            *("-k", "not file", "-q", f"--junitxml={report}"),
        ],
        cwd=UPSTREAM,
        # The shim's folder first, then the caller's path: the child imports the code under test, not another copy.
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))},
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    cases = list(ET.parse(report).getroot().iter("testcase"))
    skipped = {c.get("name", "").split("[")[0] for c in cases if c.find("skipped") is not None}
    ran = [c for c in cases if c.find("skipped") is None]
    # Only the tests of SQLite internals (and SqliteStore-only behaviour) are skipped, each named in the shim.
    assert skipped <= set(SKIPPED), skipped
    assert not [c for c in ran if c.find("failure") is not None or c.find("error") is not None]
    assert len(ran) == UPSTREAM_RUNS, f"{len(ran)} upstream tests ran, expected {UPSTREAM_RUNS}"
