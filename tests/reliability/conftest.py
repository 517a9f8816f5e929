from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("_worker.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/reliability" in str(item.fspath):
            item.add_marker(pytest.mark.reliability)


class Workers:
    """Helpers for the multi-process tests (a fixture, since test modules cannot import conftest)."""

    @staticmethod
    def start(store: Path, acks: Path, op: str, worker: int, limit: int | None = None) -> subprocess.Popen[bytes]:
        return start_worker(store, acks, op, worker, limit)

    @staticmethod
    def acks(path: Path) -> list[dict[str, Any]]:
        return read_acks(path)

    @staticmethod
    def summary(name: str, **figures: int) -> None:
        summary(name, **figures)


@pytest.fixture
def workers() -> Workers:
    return Workers()


def start_worker(store: Path, acks: Path, op: str, worker: int, limit: int | None = None) -> subprocess.Popen[bytes]:
    """Start a writer process and wait until its store is open."""
    args = [sys.executable, str(WORKER), str(store), str(acks), op, str(worker)]
    if limit is not None:
        args.append(str(limit))
    log = acks.with_suffix(f".worker{worker}.log")
    with open(log, "ab") as err:  # a file, not a pipe: a killed worker leaves no open pipe behind
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    ready = acks.read_text(encoding="utf-8").count('"ready"') if acks.exists() else 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if acks.exists() and acks.read_text(encoding="utf-8").count('"ready"') > ready:
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"worker died: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("worker did not start")


def read_acks(acks: Path) -> list[dict[str, Any]]:
    """Acknowledged writes (a torn last line, cut by the kill, was never acknowledged)."""
    out = []
    for line in acks.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "ids" in record:
            out.append(record)
    return out


def summary(name: str, **figures: int) -> None:
    """Print the figures docs/explanation/reliability.md quotes (visible with ``pytest -s`` or ``-rA``)."""
    print(f"\n[reliability] {name}: " + ", ".join(f"{k}={v}" for k, v in figures.items()), file=sys.stderr)
