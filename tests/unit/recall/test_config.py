"""RecallConfig in sections: validation, the flat names of the release before, round-trips, defaults.

A new option is one field in its section class (``stage_config.py``, or ``ScoringConfig`` in
``scoring.py``) plus its use in the stage that reads it: ``RecallConfig`` lists sections, not
fields, and ``test_a_section_field_needs_nothing_in_recall_config`` below shows a field added to a
section is accepted, dumped and read without touching ``recall_config.py``.
"""

from __future__ import annotations

import json
import typing
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memory_retrievers.recall.calibration as calibration
import memory_retrievers.recall.config as recall_config
import memory_retrievers.recall.scoring as scoring
import memory_retrievers.recall.sections as sections
from memory_retrievers import ConfigError, MemoryRetriever, MemoryStore, RecallConfig, models
from memory_retrievers.config import validated
from memory_retrievers.recall._flat_config import FLAT_NAMES, FlatReads
from memory_retrievers.recall.config import DEFAULT_K, DEFAULT_TOKEN_BUDGET
from memory_retrievers.recall.scoring import DecayKind
from memory_retrievers.recall.stage_config import FusionConfig, SelectionConfig, SupersededPolicy

# One non-default value per flat name (valid for its field), to tell a moved value from a default.
CHANGED: dict[str, Any] = {
    "candidate_depth": 12,
    "link_hops": 2,
    "link_decay": 0.25,
    "link_seeds": 7,
    "fact_source_weight": 0.0,
    "rrf_k": 30.0,
    "rank1_bonus": 0.1,
    "top3_bonus": 0.0,
    "original_query_weight": 1.5,
    "semantic_blend": 0.3,
    "max_query_chars": 5_000,
    "searched_query_chars": 800,
    "speaker_free_vector": False,
    "asked_vector_share": 0.5,
    "expansion": False,
    "llm_rewrites": 4,
    "feedback_docs": 5,
    "feedback_terms": 6,
    "hyde": False,
    "rocchio_alpha": 0.5,
    "rocchio_beta": 0.25,
    "llm_timeout_s": 2.0,
    "decay": DecayKind.EXPONENTIAL,
    "decay_scale_days": 30.0,
    "half_life_days": 10.0,
    "decay_weight": 1.0,
    "pinned_boost": 1.5,
    "kind_boosts": {"raw": 1.0},
    "speaker_boost": 1.0,
    "date_boost": 1.0,
    "same_project_boost": 1.0,
    "other_project_penalty": 0.5,
    "no_project_penalty": 0.5,
    "cross_topic_penalty": 1.0,
    "superseded": SupersededPolicy.FLAG,
    "relevance_floor": 0.1,
    "min_relevance": 0.2,
    "abstain_below": 0.0,
    "abstain_relevance": 1.0,
    "min_score": 0.0,
    "calibration": None,
    "mmr": False,
    "mmr_lambda": 0.7,
    "mmr_similarity_floor": 0.0,
    "session_diverse": True,
    "pinned_first": False,
    "section_shares": {},
    "collapse_copies": False,
    "excerpt_chars": 500,
    "token_encoding": "o200k_base",
    "rerank_depth": 10,
    "rerank_weight": 1.0,
    "rerank_timeout_s": 1.0,
}


TYPES = {**vars(recall_config), **vars(calibration), **vars(sections), **vars(models), **vars(scoring)}
"""Where the flat properties' annotations (strings, under ``from __future__ import annotations``) resolve."""


def flat_config(**flat: Any) -> RecallConfig:
    """``RecallConfig(**flat)``, the deprecation warnings silenced (tests that count them are below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return RecallConfig(**flat)


def sectioned(flat: dict[str, Any]) -> dict[str, Any]:
    """The same settings written by hand in sections, from FLAT_NAMES."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        if name in FLAT_NAMES:
            out.setdefault(FLAT_NAMES[name], {})[name] = value
        else:
            out[name] = value
    return out


def test_every_flat_name_has_a_value_here_and_a_section_field() -> None:
    assert set(CHANGED) == set(FLAT_NAMES)
    for name, section in FLAT_NAMES.items():
        assert name in RecallConfig.SECTIONS[section].model_fields, f"{section}.{name}"
    # no section shares a name with a flat name (cfg.expansion must stay the bool)
    assert not set(RecallConfig.SECTIONS) & set(FLAT_NAMES)


@pytest.mark.parametrize("name", sorted(FLAT_NAMES))
def test_a_flat_read_returns_the_section_field_typed_like_it(name: str) -> None:
    section = FLAT_NAMES[name]
    cfg = RecallConfig(**{section: {name: CHANGED[name]}})
    assert getattr(cfg, name) == getattr(getattr(cfg, section), name)
    assert getattr(cfg, name) != getattr(getattr(RecallConfig(), section), name) or CHANGED[name] is None
    # the property is annotated with the field's own type, so mypy checks `cfg.<name>` reads
    prop = typing.get_type_hints(getattr(FlatReads, name).fget, localns=TYPES)["return"]
    assert prop == RecallConfig.SECTIONS[section].model_fields[name].annotation


@pytest.mark.parametrize("name", sorted(FLAT_NAMES))
def test_a_flat_keyword_warns_once_naming_its_section_and_equals_the_sectioned_config(name: str) -> None:
    section = FLAT_NAMES[name]
    with pytest.warns(DeprecationWarning) as caught:
        flat = RecallConfig(**{name: CHANGED[name]})
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"RecallConfig({name}=...) is deprecated; use RecallConfig({section}={{{name!r}: ...}}) "
        f"(read it as config.{section}.{name})"
    )
    assert caught[0].filename == __file__  # it points at the caller's line, not at the library
    assert flat == RecallConfig(**{section: {name: CHANGED[name]}})


def test_two_flat_names_warn_twice_and_land_in_their_sections() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        cfg = RecallConfig(rrf_k=30, decay="none", k=3)
    assert sorted(str(w.message).split("(")[1].split("=")[0] for w in caught) == ["decay", "rrf_k"]
    assert cfg.fusion.rrf_k == 30 and cfg.scoring.decay is DecayKind.NONE and cfg.k == 3


def test_flat_names_in_a_dict_through_validated_and_model_validate() -> None:
    with pytest.warns(DeprecationWarning, match=r"use RecallConfig\(selection=\{'mmr': \.\.\.\}\)"):
        cfg = validated(RecallConfig, {"mmr": False, "mode": "vector"}, "RecallConfig")
    assert cfg == RecallConfig(selection={"mmr": False}, mode="vector")
    with pytest.warns(DeprecationWarning, match="rerank_depth"):
        assert RecallConfig.model_validate({"rerank_depth": 5}).rerank.rerank_depth == 5


def test_a_flat_name_completes_a_section_given_as_a_dict_or_an_instance() -> None:
    with pytest.warns(DeprecationWarning):
        cfg = RecallConfig(rank1_bonus=0.1, fusion={"rrf_k": 30})
    assert (cfg.fusion.rrf_k, cfg.fusion.rank1_bonus) == (30, 0.1)
    with pytest.warns(DeprecationWarning):
        cfg = RecallConfig(rank1_bonus=0.1, fusion=FusionConfig(rrf_k=30))
    assert (cfg.fusion.rrf_k, cfg.fusion.rank1_bonus) == (30, 0.1)


@pytest.mark.parametrize("section", [{"rrf_k": 2}, FusionConfig(rrf_k=2)])
def test_a_flat_name_and_its_section_field_together_is_an_error_naming_both(section: Any) -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError) as err:
        RecallConfig(rrf_k=1, fusion=section)
    assert "rrf_k and fusion.rrf_k both given" in str(err.value)


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
    with pytest.warns(DeprecationWarning, match="decay"):
        assert base.model_copy(update={"decay": "none"}).scoring.decay is DecayKind.NONE
    with pytest.raises(ConfigError, match=r"fusion\.rrf_k"):
        base.model_copy(update={"fusion": {"rrf_k": -1}})
    assert base.model_copy() == base and base.model_copy(deep=True) == base


def test_presets_take_flat_or_sectioned_overrides_and_keep_their_own_section_values() -> None:
    kb = RecallConfig.preset("knowledge_base", scoring={"decay_weight": 0.5}, k=3)
    assert (kb.scoring.decay, kb.scoring.decay_weight, kb.k) == (DecayKind.NONE, 0.5, 3)
    assert kb.weights.context == 0.0
    with pytest.warns(DeprecationWarning, match=r"RecallConfig\(decay_weight=\.\.\.\) is deprecated"):
        assert RecallConfig.preset("knowledge_base", decay_weight=0.5) == RecallConfig.preset(
            "knowledge_base", scoring={"decay_weight": 0.5}, k=DEFAULT_K
        )
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


def test_per_call_overrides_take_flat_names_or_section_dicts(filled: MemoryStore) -> None:
    def recall(retriever: MemoryRetriever, **kw: Any) -> list[tuple[str, float]]:
        result = retriever.recall("which theme does Alice like?", namespace="alice", **kw)
        assert result.memories
        return [(m.id, m.explanation.fused_score) for m in result.memories]

    retriever = MemoryRetriever(filled, config={"record_access": False, "fusion": {"rrf_k": 10}})
    by_section = recall(retriever, config={"selection": {"mmr": False}, "fusion": {"rank1_bonus": 0.0}})
    with pytest.warns(DeprecationWarning) as caught:
        by_name = recall(retriever, config={"mmr": False, "rank1_bonus": 0.0})
    assert len(caught) == 2
    assert by_name == by_section
    # the retriever's own rrf_k (10) survives both merges: the same as a retriever built with all three
    whole = RecallConfig(record_access=False, fusion={"rrf_k": 10, "rank1_bonus": 0.0}, selection={"mmr": False})
    assert recall(MemoryRetriever(filled, config=whole)) == by_section
    # ...and differs from the defaults (rrf_k 60, bonus 0.05), so the comparison above can fail
    assert recall(MemoryRetriever(filled, config={"record_access": False}))[0][1] != pytest.approx(by_section[0][1])
    with pytest.raises(ConfigError, match=r"rrf_k and fusion\.rrf_k both given"), pytest.warns(DeprecationWarning):
        recall(retriever, config={"rrf_k": 5, "fusion": {"rrf_k": 6}})


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(FLAT_NAMES)), st.none(), max_size=12), st.integers(1, 50))
def test_any_flat_config_equals_its_sectioned_form(names: dict[str, None], k: int) -> None:
    flat = {name: CHANGED[name] for name in names} | {"k": k}
    cfg = flat_config(**flat)
    assert cfg == RecallConfig(**sectioned(flat))
    assert RecallConfig(**cfg.model_dump()) == cfg
    for name, value in flat.items():
        assert getattr(cfg, name) == value
