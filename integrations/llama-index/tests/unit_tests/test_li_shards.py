"""The LlamaIndex adapters on a sharded store: each user's memories come from that user's shard only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llama_index.memory_retrievers import RecallMemory, RecallRetriever, using_namespace
from memory_retrievers import HashEmbedder, ShardedMemoryStore, shard_of

USERS = {"alice": "Alice drinks green tea", "bob": "Bob drinks black coffee", "carol": "Carol drinks mint tea"}
QUIET = {"record_access": False}


@pytest.fixture
def sharded(tmp_path: Path) -> Iterator[ShardedMemoryStore]:
    store = ShardedMemoryStore([tmp_path / "s0", tmp_path / "s1", tmp_path / "s2"], embedder=HashEmbedder(32))
    assert len({shard_of(user, 3) for user in USERS}) > 1
    for user, text in USERS.items():
        store.add(text, namespace=user)
    yield store
    store.close()


def test_one_retriever_serves_every_user_from_their_shard(sharded: ShardedMemoryStore) -> None:
    retriever = RecallRetriever(sharded, namespace=None, recall_config=QUIET)
    for user, text in USERS.items():
        with using_namespace(user):
            assert [n.node.get_content() for n in retriever.retrieve("drink")] == [text]


async def test_a_memory_writes_and_reads_on_its_users_shard(sharded: ShardedMemoryStore) -> None:
    memory = RecallMemory(store=sharded, namespace="dave", session_id="s", recall_config=QUIET)
    await memory.aput_messages([])
    sharded.add("Dave drinks oolong tea", namespace="dave")
    recalled = str((await memory.aget("what do I drink?"))[0].content)
    assert "oolong" in recalled and "green tea" not in recalled and "coffee" not in recalled
    assert sharded.shard(shard_of("dave", 3)).count("dave") == 1
