"""A stateful model check: random sequences of every write against a real store and an in-memory model.

After every step the store must equal the model exactly: which memories exist in each namespace,
their texts, their supersession links, and the context of every chat turn (its neighbouring turns,
as the model computes them). Short form in the default run; the long form for release checks:

    MEMORY_RETRIEVERS_LONG=1 python -m pytest -m long tests/reliability/test_state_machine.py -s
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory_retrievers import HashEmbedder, InvalidInputError, MemoryStore, NotFoundError, WriteAction
from memory_retrievers.testing import ManualClock
from memory_retrievers.text.context import window_contexts

LONG = bool(os.environ.get("MEMORY_RETRIEVERS_LONG"))
NAMESPACES = ["alice", "bob", "x.y"]
WORDS = ["tea", "coffee", "Berlin", "Lisbon", "cat", "dog", "piano", "jazz", "3pm", "Friday", "never", "blue"]
STEPS = {"runs": 0, "steps": 0}


@dataclass
class Model:
    """What must be true: per namespace, id -> (text, kind, session, superseded_by)."""

    memories: dict[str, dict[str, dict[str, object]]] = field(default_factory=lambda: {n: {} for n in NAMESPACES})
    sessions: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # chat turns in order

    def live(self, ns: str) -> dict[str, dict[str, object]]:
        return {i: m for i, m in self.memories[ns].items() if m["superseded_by"] is None}


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="mr-model-"))
        self.clock = ManualClock()
        self.store = MemoryStore(self.dir / "db", embedder=HashEmbedder(16), clock=self.clock)
        self.model = Model()
        self.serial = 0
        STEPS["runs"] += 1

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _text(self, words: str) -> str:
        self.serial += 1  # unique texts: duplicate detection is checked by its own rule
        return f"{words} n{self.serial}"

    def _stable(self, ns: str, ids: Iterable[str]) -> list[str]:
        """Ids in the order the model first saw them: the store's ids are random, so sorting them
        would make Hypothesis's replay of a failing case pick other memories (and lose the case)."""
        position = {memory_id: k for k, memory_id in enumerate(self.model.memories[ns])}
        return sorted(set(ids), key=position.__getitem__)

    def _tick(self) -> None:
        STEPS["steps"] += 1
        self.clock.advance(seconds=1)  # distinct timestamps keep chat order unambiguous

    # ------------------------------------------------------------------ writes
    @rule(ns=st.sampled_from(NAMESPACES), words=texts, kind=st.sampled_from(["fact", "preference"]))
    def add(self, ns: str, words: str, kind: str) -> None:
        self._tick()
        text = self._text(words)
        mem = self.store.add(text, namespace=ns, kind=kind)
        assert mem.action is WriteAction.ADDED
        self.model.memories[ns][mem.id] = {"text": text, "kind": kind, "session": None, "superseded_by": None}

    @rule(ns=st.sampled_from(NAMESPACES), data=st.data())
    @precondition(lambda self: any(self.model.live(n) for n in NAMESPACES))
    def add_a_duplicate(self, ns: str, data: st.DataObject) -> None:
        live = {i: m for i, m in self.model.live(ns).items() if m["session"] is None}
        if not live:
            return
        self._tick()
        target = data.draw(st.sampled_from(self._stable(ns, live)))
        m = live[target]
        dup = self.store.add(f"  {m['text']}  ", namespace=ns, kind=m["kind"])  # whitespace only
        assert dup.action is WriteAction.SKIPPED and dup.duplicate_of == target

    @rule(ns=st.sampled_from(NAMESPACES), session=st.sampled_from(["s1", "s2"]), words=texts, n=st.integers(1, 3))
    def chat(self, ns: str, session: str, words: str, n: int) -> None:
        self._tick()
        turns = [self._text(words) for _ in range(n)]
        out = self.store.add_many([{"text": t, "kind": "message", "session_id": session} for t in turns], namespace=ns)
        for mem, text in zip(out, turns, strict=True):
            self.model.memories[ns][mem.id] = {
                "text": text,
                "kind": "message",
                "session": session,
                "superseded_by": None,
            }
            self.model.sessions.setdefault((ns, session), []).append(mem.id)

    @rule(ns=st.sampled_from(NAMESPACES), words=texts, data=st.data())
    def update(self, ns: str, words: str, data: st.DataObject) -> None:
        if not self.model.memories[ns]:
            return
        self._tick()
        target = data.draw(st.sampled_from(self._stable(ns, self.model.memories[ns])))
        text = self._text(words)
        self.store.update(target, namespace=ns, text=text)
        self.model.memories[ns][target]["text"] = text

    def _pick(self, data: st.DataObject, has: Callable[[str], bool]) -> str | None:
        """A namespace where the rule has something to act on (random ones rarely would)."""
        candidates = [n for n in NAMESPACES if has(n)]
        return data.draw(st.sampled_from(candidates)) if candidates else None

    @rule(words=texts, data=st.data())
    def supersede(self, words: str, data: st.DataObject) -> None:
        ns = self._pick(data, lambda n: any(m["session"] is None for m in self.model.memories[n].values()))
        if ns is None:
            return
        facts = {i: m for i, m in self.model.memories[ns].items() if m["session"] is None}
        self._tick()
        target = data.draw(st.sampled_from(self._stable(ns, facts)))
        text = self._text(words)
        if facts[target]["superseded_by"] is not None:
            with pytest.raises(InvalidInputError, match="already superseded"):
                self.store.supersede(target, text, namespace=ns)
            return
        new = self.store.supersede(target, text, namespace=ns)
        kind = facts[target]["kind"]
        self.model.memories[ns][new.id] = {"text": text, "kind": kind, "session": None, "superseded_by": None}
        self.model.memories[ns][target]["superseded_by"] = new.id

    @rule(ns=st.sampled_from(NAMESPACES), data=st.data())
    def delete(self, ns: str, data: st.DataObject) -> None:
        if not self.model.memories[ns]:
            return
        ids = data.draw(
            st.lists(st.sampled_from(self._stable(ns, self.model.memories[ns])), min_size=1, max_size=3, unique=True)
        )
        self.delete_ids(ns, ids)

    def delete_ids(self, ns: str, ids: list[str]) -> None:
        self._tick()
        assert self.store.delete(ids, namespace=ns) == len(ids)
        for id_ in ids:
            del self.model.memories[ns][id_]
        for m in self.model.memories[ns].values():  # a memory superseded by a deleted one is live again
            if m["superseded_by"] in ids:
                m["superseded_by"] = None
        for key, turns in self.model.sessions.items():
            if key[0] == ns:
                turns[:] = [t for t in turns if t not in ids]

    @rule(data=st.data())
    def delete_a_successor(self, data: st.DataObject) -> None:
        """The sequence that once hid a memory for good: supersede, then delete the newer one."""
        ns = self._pick(data, lambda n: any(m["superseded_by"] for m in self.model.memories[n].values()))
        if ns is not None:
            successors = self._stable(
                ns, (str(m["superseded_by"]) for m in self.model.memories[ns].values() if m["superseded_by"])
            )
            self.delete_ids(ns, [data.draw(st.sampled_from(successors))])

    @rule(data=st.data())
    def delete_a_chat_turn(self, data: st.DataObject) -> None:
        ns = self._pick(data, lambda n: any(ts for (m, _), ts in self.model.sessions.items() if m == n))
        if ns is not None:
            turns = self._stable(ns, (t for (n, _), ts in self.model.sessions.items() if n == ns for t in ts))
            self.delete_ids(ns, [data.draw(st.sampled_from(turns))])

    @rule(words=texts, data=st.data())
    def reword_a_chat_turn(self, words: str, data: st.DataObject) -> None:
        ns = self._pick(data, lambda n: any(ts for (m, _), ts in self.model.sessions.items() if m == n))
        if ns is not None:
            turns = self._stable(ns, (t for (n, _), ts in self.model.sessions.items() if n == ns for t in ts))
            self._tick()
            target, text = data.draw(st.sampled_from(turns)), self._text(words)
            self.store.update(target, namespace=ns, text=text)
            self.model.memories[ns][target]["text"] = text

    @rule(ns=st.sampled_from(NAMESPACES))
    def delete_a_missing_id(self, ns: str) -> None:
        with pytest.raises(NotFoundError):
            self.store.delete(["no-such-memory"], namespace=ns)

    @rule(ns=st.sampled_from(NAMESPACES))
    def forget(self, ns: str) -> None:
        self._tick()
        assert self.store.forget(ns) == len(self.model.memories[ns])
        self.model.memories[ns] = {}
        for key in list(self.model.sessions):
            if key[0] == ns:
                del self.model.sessions[key]

    # ------------------------------------------------------------------ what must be true
    @invariant()
    def the_store_equals_the_model(self) -> None:
        for ns in NAMESPACES:
            stored = {m.id: m for m in self.store.list(ns, filter={"include_superseded": True}, limit=10_000)}
            want = self.model.memories[ns]
            assert set(stored) == set(want), f"{ns}: extra {set(stored) - set(want)}, lost {set(want) - set(stored)}"
            for id_, m in want.items():
                got = stored[id_]
                assert got.namespace == ns and got.text == m["text"] and got.superseded_by == m["superseded_by"]
            assert self.store.count(ns) == len(self.model.live(ns))

    @invariant()
    def every_chat_turn_has_its_neighbours_as_context(self) -> None:
        for (ns, _session), turns in self.model.sessions.items():
            if not turns:
                continue
            texts = [self.model.memories[ns][t]["text"] for t in turns]
            expected = window_contexts(texts, self.store.config.context_window)
            got = {m.id: m.context for m in self.store.get(turns, namespace=ns)}
            for i, id_ in enumerate(turns):
                assert (got[id_] or "") == expected[i], f"turn {i} of {_session}: {got[id_]!r} != {expected[i]!r}"


StoreMachine.TestCase.settings = settings(
    max_examples=150 if LONG else 15,
    stateful_step_count=60 if LONG else 30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestStoreModel = StoreMachine.TestCase


def teardown_module() -> None:
    print(f"\n[reliability] state-machine: runs={STEPS['runs']} steps={STEPS['steps']} long={LONG}")
