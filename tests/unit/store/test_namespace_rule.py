"""Issue 27 item 16: namespaces that look the same are one tenant or refused, never two silently.

The rule (``validation.check_namespace``): compared exactly, case included; NFC-normalised; leading
or trailing whitespace, control and invisible characters refused with a typed error. Applied at the
store, the retriever, write records and the adapters' key checks.
"""

from __future__ import annotations

import unicodedata

import pytest

from memory_retrievers import InvalidInputError, MemoryRetriever, MemoryStore
from memory_retrievers.integration import check_store_key

COMPOSED = unicodedata.normalize("NFC", "émile")
DECOMPOSED = unicodedata.normalize("NFD", "émile")
LOOKALIKES = [" alice", "alice ", "alice\n", "al\tice", "ali\u200bce", "\ufeffalice", "alice\u2028"]


def test_item16_nfc_and_nfd_spellings_are_one_namespace(store: MemoryStore) -> None:
    assert COMPOSED != DECOMPOSED
    store.add("Émile plays the cello", namespace=DECOMPOSED)
    assert [m.text for m in store.list(COMPOSED)] == ["Émile plays the cello"]
    assert store.namespaces() == [COMPOSED]
    assert [m.text for m in MemoryRetriever(store, namespace=DECOMPOSED).recall("cello").memories] == [
        "Émile plays the cello"
    ]
    assert store.forget(COMPOSED) == 1 and store.list(DECOMPOSED) == []


@pytest.mark.parametrize("namespace", LOOKALIKES)
def test_item16_lookalike_namespaces_are_refused_everywhere_and_change_nothing(
    store: MemoryStore, namespace: str
) -> None:
    store.add("Alice likes tea", namespace="alice")
    calls = [
        lambda: store.add("Alice likes coffee", namespace=namespace),
        lambda: store.add_many([{"text": "Alice likes coffee", "namespace": namespace}], namespace="alice"),
        lambda: store.list(namespace),
        lambda: store.forget(namespace),
        lambda: MemoryRetriever(store, namespace=namespace),
        lambda: check_store_key(namespace, field="namespace", store=store),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match="namespace"):
            call()
    assert [m.text for m in store.list("alice")] == ["Alice likes tea"]
    assert store.namespaces() == ["alice"]


def test_item16_case_is_kept_two_namespaces_by_rule(store: MemoryStore) -> None:
    # Documented: exact comparison. Folding case could merge two real users whose ids differ by case.
    store.add("upper", namespace="Alice")
    store.add("lower", namespace="alice")
    assert [m.text for m in store.list("Alice")] == ["upper"]
    assert [m.text for m in store.list("alice")] == ["lower"]
