"""One local Ray instance for the bulk-job tests: 2 CPUs, loopback only, no dashboard, shut down at the end."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from testing.paths import ROOT


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/ray" in str(item.fspath):
            item.add_marker(pytest.mark.long)
            # Ray Data's own DataContext sets a deprecated field when it is first made (not ours).
            item.add_marker(pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*"))


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("lance_ray")
    # The workers import the library (and the replay LLM of benchmarks/) from this checkout.
    path = os.pathsep.join([str(ROOT), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])
    with warnings.catch_warnings():
        # Ray starts its servers by fork+exec; pylance warns in the forked child that Lance is not
        # fork-safe, which is true and harmless here (the child runs nothing but exec).
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            ignore_reinit_error=True,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    try:
        yield ray
    finally:
        ray.shutdown()
