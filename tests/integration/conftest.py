from __future__ import annotations

import pytest

from memory_retrievers import SentenceTransformerEmbedder


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    """The real default embedder, loaded once (about 5 s cold)."""
    emb = SentenceTransformerEmbedder()
    emb.embed_query("warm up")
    return emb


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
