"""LangGraph's own BaseStore test suite, run against ``MemoryStoreLangGraph``.

LangGraph publishes its store tests only inside the source distribution of
``langgraph-checkpoint-sqlite`` (MIT, LangChain, Inc.). This test fetches that sdist with pip (the
version installed here), extracts ``tests/test_store.py`` and ``tests/test_async_store.py`` to a
temporary folder and runs them unchanged in a child pytest, with ``langgraph_store_shim`` changing
only how the store is built (see that module for what it changes and which tests it skips, and
why). Nothing of LangGraph's test code is copied into this repository.

The suite builds one store per test; both of its connection variants ("memory", "file") would
build the same store here, so only the "memory" variants run.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: What the shim skips, by test name (the shim lives beside this file; read, not imported).
SKIPPED: dict[str, str] = runpy.run_path(str(HERE / "langgraph_store_shim.py"))["SKIPPED"]
PACKAGE = "langgraph-checkpoint-sqlite"
SUITES = ("tests/test_store.py", "tests/test_async_store.py")


@pytest.fixture(scope="module")
def upstream_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed release's test folder, from its source distribution on PyPI."""
    release = version(PACKAGE)
    download = tmp_path_factory.mktemp("sdist")
    fetched = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"),
            *("--dest", str(download), f"{PACKAGE}=={release}"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    archives = list(download.glob("*.tar.gz"))
    if fetched.returncode != 0 or not archives:
        pytest.skip(f"could not download the {PACKAGE} {release} sdist from PyPI: {fetched.stderr[-500:]}")
    root = tmp_path_factory.mktemp("upstream")
    with tarfile.open(archives[0]) as archive:
        wanted = [m for m in archive.getmembers() if m.name.split("/", 1)[-1].startswith("tests/")]
        archive.extractall(root, members=wanted, filter="data")
    (folder,) = root.iterdir()
    return folder


@pytest.mark.standard
def test_langgraph_store_suite_passes(upstream_tests: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", *SUITES, "-p", "langgraph_store_shim", "-p", "no:cacheprovider"),
            *("-k", "not file", "-o", "asyncio_mode=auto", "-q", f"--junitxml={report}"),
        ],
        cwd=upstream_tests,
        env={**os.environ, "PYTHONPATH": str(HERE)},
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    cases = list(ET.parse(report).getroot().iter("testcase"))
    skipped = {c.get("name", "").split("[")[0] for c in cases if c.find("skipped") is not None}
    ran = [c for c in cases if c.find("skipped") is None]
    # Only the tests of SQLite internals are skipped, each named in the shim with its reason.
    assert skipped <= set(SKIPPED), skipped
    assert not [c for c in ran if c.find("failure") is not None or c.find("error") is not None]
    assert len(ran) >= 60, f"only {len(ran)} upstream tests ran"
