"""A user's recall channels through the adapter base: ``RecallBinding(channels=)`` and ``AdapterModel``.

Issue 41 item 4: a channel that works in ``MemoryRetriever`` must reach the framework adapters,
and a weight naming it must be accepted there (and a weight naming no channel still refused,
at construction or assignment, leaving the adapter as it was).
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from memory_retrievers import (
    ConfigError,
    MemoryStore,
    RecallConfig,
)
from memory_retrievers.integration import AdapterChannels, AdapterModel, RecallBinding
from testing.channels import WordChannel

QUIET = {"record_access": False}
ZEBRA = "the zebra at the zoo is called Stripes"


class Toy(AdapterModel):
    """An adapter model as a framework package writes one, with a ``channels`` field."""

    namespace: str = "alice"
    recall_config: RecallConfig | None = None
    channels: AdapterChannels = None


@pytest.fixture
def zoo(store: MemoryStore) -> MemoryStore:
    store.add_many([{"text": "alice drinks coffee at nine"}, {"text": ZEBRA}], namespace="alice")
    store.add("bob's zebra is a plush toy", namespace="bob")
    return store


def _found_by(result_memories: Sequence[object], channel: str) -> list[str]:
    return [m.text for m in result_memories if channel in {c.channel for c in m.explanation.channels}]  # type: ignore[attr-defined]


def test_a_recall_binding_recalls_through_the_channels_it_is_given_in_every_namespace(zoo: MemoryStore) -> None:
    binding = RecallBinding(zoo, config={**QUIET, "weights": {"zebra": 3.0}}, channels=[WordChannel()])
    assert binding.retriever.channels.names[-1] == "zebra"
    alice = binding.recall("when does she drink coffee?", namespace="alice")
    assert "zebra" in alice.plan["channels"] and _found_by(alice.memories, "zebra") == [ZEBRA]
    bob = binding.bound("bob").recall("when does she drink coffee?")  # the bound retriever keeps them
    assert _found_by(bob.memories, "zebra") == ["bob's zebra is a plush toy"]  # and reads only bob's


def test_a_recall_binding_refuses_bad_channels_and_unknown_weights_when_built(store: MemoryStore) -> None:
    with pytest.raises(ConfigError, match="channels must be a list of Channel, got WordChannel"):
        RecallBinding(store, channels=WordChannel())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="channels must implement Channel"):
        RecallBinding(store, channels=[object()])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match=r"unknown channel\(s\) \['zebra'\]"):
        RecallBinding(store, config={"weights": {"zebra": 1.0}})


@pytest.mark.parametrize("order", ["config first", "channels first"])
def test_an_adapter_model_takes_weights_naming_its_channels_in_any_argument_order(zoo: MemoryStore, order: str) -> None:
    given = {"recall_config": {**QUIET, "weights": {"zebra": 3.0}}, "channels": [WordChannel()]}
    toy = Toy(store=zoo, **(given if order == "config first" else dict(reversed(given.items()))))
    assert isinstance(toy.channels, tuple) and toy.channels[0].name == "zebra"
    result = toy.recall_binding().recall("coffee?", namespace=toy.namespace)
    assert _found_by(result.memories, "zebra") == [ZEBRA]


def test_an_adapter_model_refuses_a_weight_naming_no_channel_and_bad_channels(store: MemoryStore) -> None:
    with pytest.raises(ValidationError, match=r"unknown channel\(s\) \['zebra'\]"):
        Toy(store=store, recall_config={"weights": {"zebra": 3.0}})
    with pytest.raises(ValidationError, match="channels must be a list of Channel, got str"):
        Toy(store=store, channels="zebra")
    with pytest.raises(ValidationError, match="name must be letters"):
        Toy(store=store, channels=[WordChannel(name="no spaces please")])


def test_an_assignment_that_would_orphan_a_weight_is_refused_and_changes_nothing(zoo: MemoryStore) -> None:
    channels = [WordChannel()]
    toy = Toy(store=zoo, recall_config={**QUIET, "weights": {"zebra": 3.0}}, channels=channels)
    held = toy.channels
    with pytest.raises(ValidationError, match=r"unknown channel\(s\) \['zebra'\]"):
        toy.channels = None
    assert toy.channels is held
    plain = Toy(store=zoo, recall_config=QUIET)
    with pytest.raises(ValidationError, match=r"unknown channel\(s\) \['zebra'\]"):
        plain.recall_config = {"weights": {"zebra": 1.0}}
    assert plain.recall_config is not None and plain.recall_config.weights.get("zebra") is None
    plain.channels = channels  # the channel first, then its weight: both accepted
    plain.recall_config = {**QUIET, "weights": {"zebra": 3.0}}
    assert _found_by(plain.recall_binding().recall("coffee?", namespace="alice").memories, "zebra") == [ZEBRA]


def test_an_adapter_model_rebuilds_its_binding_when_its_channels_change(zoo: MemoryStore) -> None:
    toy = Toy(store=zoo, recall_config=QUIET)
    first = toy.recall_binding()
    assert "zebra" not in first.retriever.channels
    toy.channels = [WordChannel()]
    assert toy.recall_binding() is not first and "zebra" in toy.recall_binding().retriever.channels
    toy.channels = []  # no channels is None: nothing to serialise or check
    assert toy.channels is None and "zebra" not in toy.recall_binding().retriever.channels


def test_copies_share_the_channels_and_the_binding(zoo: MemoryStore) -> None:
    toy = Toy(store=zoo, recall_config=QUIET, channels=[WordChannel()])
    binding = toy.recall_binding()
    for twin in (copy.copy(toy), copy.deepcopy(toy), toy.model_copy(update={"namespace": "bob"})):
        assert twin.channels is not None and toy.channels is not None
        assert twin.channels[0] is toy.channels[0]  # a channel may hold a client: shared, not duplicated
        assert twin.recall_binding() is binding


def test_an_adapter_model_with_channels_refuses_to_serialise_and_one_without_does_not(zoo: MemoryStore) -> None:
    with pytest.raises(ConfigError, match=r"a Toy with channels set cannot be serialised"):
        pickle.dumps(Toy(store=zoo, channels=[WordChannel()]))
    again = pickle.loads(pickle.dumps(Toy(store=zoo, recall_config=QUIET)))
    assert again.channels is None and again.store is zoo
