"""The LoCoMo replay LLM drives the real formation pipeline: real extraction output, our prompts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memory_retrievers import HashEmbedder, MemoryStore
from memory_retrievers.formation import Decision, MemoryFormer
from testing.paths import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))

from _data import DEFAULT_LOCOMO, load_turns
from _replay import LoCoMoReplayLLM, dia_ids

pytestmark = pytest.mark.skipif(not DEFAULT_LOCOMO.exists(), reason="needs ../shared/data/locomo")


def test_dia_ids_handle_lists_and_malformed_sources() -> None:
    assert dia_ids("D1:3") == ["D1:3"]
    assert dia_ids(["D8:6; D9:17", "junk"]) == ["D8:6", "D9:17"]
    assert dia_ids(None) == []


def test_a_replayed_session_yields_its_observations_linked_to_their_turns(tmp_path: Path) -> None:
    conv = json.loads(DEFAULT_LOCOMO.read_text())[0]
    turns = [t for t in load_turns(DEFAULT_LOCOMO) if t.conversation == conv["sample_id"] and t.session == "session_1"]
    llm = LoCoMoReplayLLM(DEFAULT_LOCOMO)
    with MemoryStore(tmp_path / "db", embedder=HashEmbedder(64)) as store:
        former = MemoryFormer(store, llm=llm, config={"summarize": True})
        records = [{"text": t.text, "metadata": {"dia_id": t.dia_id}} for t in turns]
        report = former.form(records, namespace="c", session_id="session_1")
        expected = [
            (text, dia_ids(d)) for facts in conv["observation"]["session_1_observation"].values() for text, d in facts
        ]
        assert [o.fact.text for o in report.facts] == [text for text, _ in expected]
        dia_of = {m.id: m.metadata["dia_id"] for m in report.turns}
        for outcome, (_, dias) in zip(report.facts, expected, strict=True):
            assert [dia_of[i] for i in store.get(outcome.memory.id, namespace="c").links] == dias
        assert report.summary is not None
        assert report.summary.text == " ".join(conv["session_summary"]["session_1_summary"].split())
        # The same session again: every fact is already known word for word, so the rule says SKIP.
        again = former.form(report.turns, namespace="c", session_id="session_1")
        assert again.count(Decision.SKIP) == len(expected) and again.count(Decision.ADD) == 0
    assert llm.calls["extraction"] == 2
