"""A flat RecallConfig name given to the LlamaIndex retriever warns at the caller's line.

Python's default filters show a DeprecationWarning only when it is attributed to ``__main__``; the
sync ``retrieve_with`` runs the recall on the core's loop thread, where the warning would be
attributed to ``threading.py``.
"""

from __future__ import annotations

import asyncio

import pytest

from llama_index.memory_retrievers import RecallRetriever
from memory_retrievers import MemoryStore


def _deprecations(caught: pytest.WarningsRecorder) -> list[str]:
    return [w.filename for w in caught if w.category is DeprecationWarning]


def test_a_flat_name_in_recall_config_warns_at_the_callers_line(store: MemoryStore) -> None:
    with pytest.warns(DeprecationWarning, match="mmr") as caught:
        RecallRetriever(store, namespace="alice", recall_config={"mmr": False})
    assert _deprecations(caught) == [__file__]


def test_a_flat_name_in_a_per_call_recall_config_warns_at_the_callers_line(store: MemoryStore) -> None:
    store.add("alice likes green tea", namespace="alice")
    store.flush()
    retriever = RecallRetriever(store, namespace="alice")
    with pytest.warns(DeprecationWarning, match="hyde") as caught:
        nodes = retriever.retrieve_with("what does alice drink?", recall_config={"hyde": False})
    assert _deprecations(caught) == [__file__]
    assert [n.node.get_content() for n in nodes] == ["alice likes green tea"]
    with pytest.warns(DeprecationWarning, match="hyde") as caught:
        asyncio.run(retriever.aretrieve_with("what does alice drink?", recall_config={"hyde": False}))
    assert _deprecations(caught) == [__file__]
