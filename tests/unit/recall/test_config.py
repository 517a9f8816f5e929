"""RecallConfig in sections: validation, round-trips, defaults.

A new option is one field in its section class (``stage_config.py``, or ``ScoringConfig`` in
``scoring.py``) plus its use in the stage that reads it: ``RecallConfig`` lists sections, not
fields, and ``test_a_section_field_needs_nothing_in_recall_config`` below shows a field added to a
section is accepted, dumped and read without touching ``recall_config.py``.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from memory_retrievers import ConfigError, MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.recall.config import DEFAULT_K, DEFAULT_TOKEN_BUDGET
from memory_retrievers.recall.scoring import DecayKind
from memory_retrievers.recall.stage_config import SelectionConfig


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"fusion": {"rrf_k": 0}}, "fusion.rrf_k: Input should be greater than 0 (got 0)"),
        ({"selection": {"mmr_lambda": 2}}, "selection.mmr_lambda: Input should be less than or equal to 1"),
        ({"selection": {"token_encoding": "p50k"}}, "selection.token_encoding: token_encoding must be 'cl100k_base'"),
        ({"selection": {"section_shares": {"pinned": 0.8, "knowledge": 0.8}}}, "must sum to at most 1"),
        ({"scoring": {"kind_boosts": {"memo": 1}}}, "scoring.kind_boosts: kind_boosts key 'memo' is not a memory kind"),
        ({"scoring": {"decay": "linear"}}, "scoring.decay: Input should be 'hyperbolic', 'exponential' or 'none'"),
        ({"relevance": {"min_score": 1.5}}, "relevance.min_score: Input should be less than or equal to 1"),
        ({"channels": {"candidate_depth": True}}, "candidate_depth must be a number, not True"),
        ({"query": {"max_query_chars": 0}}, "query.max_query_chars: Input should be greater than or equal to 1"),
        ({"rerank": {"rerank_timeout_s": -1}}, "rerank.rerank_timeout_s: Input should be greater than 0"),
        ({"query_expansion": {"llm_rewrites": 9}}, "query_expansion.llm_rewrites: Input should be less than or equal"),
        ({"fusion": {"rrf_kk": 1}}, "unknown key 'fusion.rrf_kk'; valid keys are: original_query_weight, rank1_bonus"),
        ({"fusion": 3}, "fusion: Input should be a valid dictionary or instance of FusionConfig"),
        ({"rrf_kk": 1}, "unknown key 'rrf_kk'; valid keys are: channels, fusion, k, mode"),
    ],
)
def test_a_bad_section_value_is_a_config_error_naming_its_path(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^invalid RecallConfig: ") as err:
        RecallConfig(**given)
    assert message in str(err.value)


def test_an_unknown_key_suggests_the_section_field_it_was_probably_meant_for() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'selection\.mmr_lambda'\?"):
        RecallConfig(mmr_lambada=0.5)
    with pytest.raises(ConfigError, match=r"did you mean 'rrf_k'\?"):
        RecallConfig(fusion={"rrf_kk": 1})


def test_a_section_field_given_at_the_top_level_is_refused_naming_its_section() -> None:
    # Before 1.0 there are no flat aliases: RecallConfig(rrf_k=30) is an unknown key, and the error
    # names where the field lives, for every field of every section.
    for section, section_cls in RecallConfig.SECTIONS.items():
        for name in section_cls.model_fields:
            with pytest.raises(ConfigError, match=rf"unknown key '{name}'.*did you mean '{section}\.{name}'\?"):
                RecallConfig(**{name: None})
    assert not hasattr(RecallConfig(), "rrf_k")  # read through its section: config.fusion.rrf_k


def test_a_flat_name_in_a_per_call_override_is_refused(store: MemoryStore) -> None:
    retriever = MemoryRetriever(store, config={"record_access": False})
    with pytest.raises(ConfigError, match=r"unknown key 'mmr'.*did you mean 'selection\.mmr'\?"):
        retriever.recall("which theme does Alice like?", namespace="alice", config={"mmr": False})


def test_a_config_pickled_today_round_trips_with_its_plug_in_weights() -> None:
    config = RecallConfig(k=4, fusion={"rrf_k": 30}, weights={"vector": 2.0, "activation": 0.5})
    restored = pickle.loads(pickle.dumps(config))
    assert restored == config and restored.model_fields_set == config.model_fields_set
    assert restored.weights.get("activation") == 0.5


def test_sections_are_frozen() -> None:
    cfg = RecallConfig()
    with pytest.raises(Exception, match="frozen"):
        cfg.fusion.rrf_k = 1  # type: ignore[misc]


def test_model_dump_is_sectioned_and_round_trips() -> None:
    cfg = RecallConfig(k=4, fusion={"rrf_k": 30}, scoring={"kind_boosts": {"raw": 2}}, selection={"section_shares": {}})
    dumped = cfg.model_dump()
    assert dumped["fusion"]["rrf_k"] == 30 and "rrf_k" not in dumped
    assert set(dumped) == set(RecallConfig.model_fields)
    assert RecallConfig(**dumped) == cfg
    assert RecallConfig.model_validate_json(cfg.model_dump_json()) == cfg
    assert RecallConfig(**json.loads(json.dumps(cfg.model_dump(mode="json")))) == cfg
    assert cfg != RecallConfig(k=4)


def test_model_copy_updates_only_the_section_fields_it_names_and_validates() -> None:
    base = RecallConfig(fusion={"rrf_k": 30})
    copy = base.model_copy(update={"fusion": {"rank1_bonus": 0.1}, "k": 3})
    assert (copy.fusion.rrf_k, copy.fusion.rank1_bonus, copy.k) == (30, 0.1, 3)
    with pytest.raises(ConfigError, match=r"fusion\.rrf_k"):
        base.model_copy(update={"fusion": {"rrf_k": -1}})
    assert base.model_copy() == base and base.model_copy(deep=True) == base


def test_presets_take_sectioned_overrides_and_keep_their_own_section_values() -> None:
    kb = RecallConfig.preset("knowledge_base", scoring={"decay_weight": 0.5}, k=3)
    assert (kb.scoring.decay, kb.scoring.decay_weight, kb.k) == (DecayKind.NONE, 0.5, 3)
    assert kb.weights.context == 0.0
    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        RecallConfig.preset("support", nope=1)


def test_the_adapter_defaults_are_the_configs() -> None:
    assert (RecallConfig().k, RecallConfig().token_budget) == (DEFAULT_K, DEFAULT_TOKEN_BUDGET) == (10, 2_000)


def test_a_section_field_needs_nothing_in_recall_config() -> None:
    """A new option is a field of its section: RecallConfig names sections, not options."""
    assert set(RecallConfig.model_fields) == {"mode", "k", "token_budget", "weights", "record_access"} | set(
        RecallConfig.SECTIONS
    )

    class WiderSelection(SelectionConfig):
        window: int = 3  # stands for a future option, added to its section class alone

    cfg = RecallConfig(selection=WiderSelection(window=5))
    assert cfg.selection.window == 5  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"did you mean 'selection\.mmr_lambda'"):  # errors read the sections
        RecallConfig(mmr_lambdaa=0.5)


def test_per_call_overrides_take_section_dicts_merged_into_the_retrievers(filled: MemoryStore) -> None:
    def recall(retriever: MemoryRetriever, **kw: Any) -> list[tuple[str, float]]:
        result = retriever.recall("which theme does Alice like?", namespace="alice", **kw)
        assert result.memories
        return [(m.id, m.explanation.fused_score) for m in result.memories]

    retriever = MemoryRetriever(filled, config={"record_access": False, "fusion": {"rrf_k": 10}})
    by_section = recall(retriever, config={"selection": {"mmr": False}, "fusion": {"rank1_bonus": 0.0}})
    # the retriever's own rrf_k (10) survives the merge: the same as a retriever built with all three
    whole = RecallConfig(record_access=False, fusion={"rrf_k": 10, "rank1_bonus": 0.0}, selection={"mmr": False})
    assert recall(MemoryRetriever(filled, config=whole)) == by_section
    # ...and differs from the defaults (rrf_k 60, bonus 0.05), so the comparison above can fail
    assert recall(MemoryRetriever(filled, config={"record_access": False}))[0][1] != pytest.approx(by_section[0][1])
