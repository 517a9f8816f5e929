"""The recall config flags: one per field, each routed into its section by the field's own model."""

from __future__ import annotations

from typing import Any

import click
import pytest
from click.testing import CliRunner

from memory_retrievers import RecallConfig
from memory_retrievers.cli import options
from memory_retrievers.recall.stage_config import SelectionConfig


def _config_of(*args: str) -> Any:
    """The RecallConfig a command with every recall flag builds from ``args``."""
    built: list[Any] = []

    @click.command()
    @options.recall_config_options
    def command(**params: Any) -> None:
        built.append(options.recall_config_from(params))

    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return built[0]


class _SelectionWithRrfK(SelectionConfig):
    rrf_k: float = 60.0  # stands for a future option whose name another section already uses


def test_a_field_name_two_sections_share_gets_one_flag_per_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RecallConfig.SECTIONS, "selection", _SelectionWithRrfK)
    options.recall_config_params.cache_clear()
    try:
        flags = [flag for option in options.recall_config_params() for flag in option.opts]
        assert "--fusion-rrf-k" in flags and "--selection-rrf-k" in flags and "--rrf-k" not in flags
        assert len(flags) == len(set(flags))
        config = _config_of("--fusion-rrf-k", "30", "--mmr-lambda", "0.5")
        assert (config.fusion.rrf_k, config.selection.mmr_lambda) == (30, 0.5)
    finally:
        monkeypatch.undo()
        options.recall_config_params.cache_clear()


def test_a_field_of_one_section_is_a_flag_named_as_the_field_that_reaches_its_section() -> None:
    config = _config_of("--rrf-k", "30", "--decay", "none", "--kind-boost", "raw=2", "--superseded", "flag", "--k", "3")
    expected = RecallConfig(
        k=3,
        fusion={"rrf_k": 30},
        scoring={"decay": "none", "kind_boosts": {**RecallConfig().scoring.kind_boosts, "raw": 2.0}},
        relevance={"superseded": "flag"},
    )
    assert config == expected
