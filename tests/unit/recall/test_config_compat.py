"""Configs and scoring constants written against the release before sections keep working.

A pickle of a flat ``RecallConfig`` comes back sectioned (pydantic restores ``__dict__`` without
validation, so ``RecallConfig.__setstate__`` moves the flat fields), and a flat name's
DeprecationWarning points at the caller's line wherever the call runs.
"""

from __future__ import annotations

import asyncio
import pickle
import warnings
from typing import Any

import pytest

from memory_retrievers import ChannelWeights, ConfigError, MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.recall._flat_config import FLAT_NAMES


def _flat_state(config: RecallConfig, given: set[str]) -> dict[str, Any]:
    """``config`` as the release before sections pickled it: every field flat, ``given`` as set."""
    fields = {name: getattr(config, name) for name in type(config).model_fields if name not in RecallConfig.SECTIONS}
    fields.update({name: getattr(config, name) for name in FLAT_NAMES})
    return {
        "__dict__": fields,
        "__pydantic_extra__": None,
        "__pydantic_fields_set__": given,
        "__pydantic_private__": None,
    }


def _restored(state: dict[str, Any]) -> RecallConfig:
    config = RecallConfig.__new__(RecallConfig)
    config.__setstate__(state)
    return config


def test_a_flat_pickled_state_comes_back_sectioned_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = RecallConfig(k=4, rrf_k=30, mmr=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the flat names are in the pickle, not in the caller's code
        restored = _restored(_flat_state(expected, {"k", "rrf_k", "mmr"}))
    assert restored == expected
    assert restored.fusion.rrf_k == 30 and restored.selection.mmr is False
    # the given names stay given: a flat name counts as its section, and as its field in there
    assert restored.model_fields_set == {"k", "fusion", "selection"}
    assert restored.fusion.model_fields_set == {"rrf_k"} and restored.scoring.model_fields_set == set()
    assert pickle.loads(pickle.dumps(restored)) == restored


def test_a_flat_pickled_value_out_of_todays_range_is_a_config_error() -> None:
    state = _flat_state(RecallConfig(), set())
    state["__dict__"]["decay_weight"] = 2.0
    with pytest.raises(ConfigError, match="decay_weight"):
        _restored(state)


def test_a_config_pickled_today_round_trips_with_its_plug_in_weights() -> None:
    config = RecallConfig(k=4, fusion={"rrf_k": 30}, weights={"vector": 2.0, "activation": 0.5})
    restored = pickle.loads(pickle.dumps(config))
    assert restored == config and restored.model_fields_set == config.model_fields_set
    assert restored.weights.get("activation") == 0.5


def test_channel_weights_pickled_before_plug_in_weights_equal_todays() -> None:
    # extra="forbid" then: the pickle holds None where extra="allow" keeps a dict of plug-in weights
    weights = ChannelWeights.__new__(ChannelWeights)
    weights.__setstate__({**ChannelWeights().__getstate__(), "__pydantic_extra__": None})
    assert weights == ChannelWeights() and weights.as_dict() == ChannelWeights().as_dict()


def test_a_flat_name_given_to_arecall_under_asyncio_run_warns_at_the_callers_line(store: MemoryStore) -> None:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = MemoryRetriever(store, namespace="alice")
    with pytest.warns(DeprecationWarning, match="mmr") as caught:
        found = asyncio.run(retriever.arecall("what does alice drink?", config={"mmr": False}))
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]
    assert [m.text for m in found.memories] == ["alice likes green tea"]


def test_a_flat_name_conflicting_with_its_section_is_refused_in_the_callers_thread(store: MemoryStore) -> None:
    retriever = MemoryRetriever(store, namespace="alice")
    with pytest.raises(ConfigError, match=r"mmr and selection\.mmr both given"), pytest.warns(DeprecationWarning):
        retriever.recall("tea?", config={"mmr": False, "selection": {"mmr": True}})
