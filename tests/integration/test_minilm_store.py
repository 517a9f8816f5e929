"""The store with the real all-MiniLM-L6-v2 model, loaded offline from the bundled package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_retrievers import MemoryRetriever, MemoryStore, SentenceTransformerEmbedder, WriteAction

FACTS = [
    "Caroline is a transgender woman who went to an LGBTQ support group.",
    "Melanie painted a sunrise over a lake last year.",
    "Caroline wants to pursue a career in counseling and mental health.",
    "Melanie's kids love dinosaurs and nature.",
    "The user prefers the dark theme in every editor.",
    "Our team standup moved to 9:30 on Tuesdays.",
]


def test_default_embedder_loads_offline_from_bundled_package(tmp_path: Path) -> None:
    # A fresh process with the hub explicitly unreachable: the bundled weights must suffice.
    code = (
        "from memory_retrievers import SentenceTransformerEmbedder as E;"
        "e=E(); v=e.embed_query('hello'); print(v.shape[0], round(float((v**2).sum()),4))"
    )
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["384", "1.0"]


def test_minilm_vectors_are_normalised_and_semantic(minilm: SentenceTransformerEmbedder) -> None:
    vecs = minilm.embed_documents(["I adore my cat", "I love my kitten", "Quarterly tax filing deadline"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
    assert np.allclose(minilm.embed_query("I adore my cat"), vecs[0], atol=1e-5)


@pytest.fixture
def real_store(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> MemoryStore:
    store = MemoryStore(tmp_path / "db", embedder=minilm)
    store.add_many([{"text": t} for t in FACTS], namespace="user")
    return store


def test_paraphrase_found_by_vector_search_immediately(real_store: MemoryStore) -> None:
    hits = real_store.vector_search("What colour scheme does the user like for code editors?", namespace="user", k=2)
    assert real_store.get(hits[0].id, namespace="user").text == FACTS[4]
    hits = real_store.vector_search("What job does Caroline want?", namespace="user", k=1)
    assert real_store.get(hits[0].id, namespace="user").text == FACTS[2]


def test_keyword_found_by_fts_immediately(real_store: MemoryStore) -> None:
    new = real_store.add("Melanie signed up for a pottery class on Saturday.", namespace="user")
    hits = real_store.fts_search("pottery", namespace="user")
    assert [h.id for h in hits] == [new.id]


def test_near_duplicate_with_real_model(real_store: MemoryStore) -> None:
    dup = real_store.add("The user prefers the dark theme in all editors.", namespace="user")
    assert dup.action is WriteAction.SKIPPED and dup.similarity is not None and dup.similarity >= 0.95
    other = real_store.add("The user prefers the light theme in every editor.", namespace="user")
    # opposite meaning but close wording: must not be silently dropped at the default threshold
    assert other.action is WriteAction.ADDED, other.similarity


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Password is Hunter2", "Password is hunter2"),
        ("my phone number is 555-0101", "my phone number is 555-0199"),
        ("the meeting is at 3pm on Friday", "the meeting is at 2pm on Friday"),
        ("I like spicy food", "I don't like spicy food"),
        ("Maße und Gewichte", "Masse und Gewichte"),
        ("Chapter Ⅳ covers the results", "Chapter IV covers the results"),
    ],
)
def test_real_near_duplicates_that_differ_in_substance_are_kept(
    tmp_path: Path, minilm: SentenceTransformerEmbedder, first: str, second: str
) -> None:
    with MemoryStore(tmp_path / "db", embedder=minilm) as store:  # default threshold 0.95
        store.add(first, namespace="u")
        assert store.add(second, namespace="u").action is WriteAction.ADDED
        assert store.count("u") == 2


def test_persistence_with_real_model(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    with MemoryStore(tmp_path / "db", embedder=minilm) as store:
        store.add_many([{"text": t} for t in FACTS], namespace="user")
    reopened = MemoryStore(tmp_path / "db", embedder=SentenceTransformerEmbedder())
    hits = reopened.vector_search("Which kids like dinosaurs?", namespace="user", k=1)
    assert reopened.get(hits[0].id, namespace="user").text == FACTS[3]
    reopened.close()


async def test_async_with_real_model(tmp_path: Path, minilm: SentenceTransformerEmbedder) -> None:
    store = await MemoryStore.aopen(tmp_path / "db", embedder=minilm)
    await store.aadd_many([{"text": t} for t in FACTS], namespace="user")
    hits = await store.avector_search("standup meeting time", namespace="user", k=1)
    assert (await store.aget(hits[0].id, namespace="user")).text == FACTS[5]  # type: ignore[union-attr]
    await store.aclose()


def test_embed_queries_gives_each_querys_own_vector_in_one_pass(minilm: SentenceTransformerEmbedder) -> None:
    texts = ["What does Melanie do to destress?", "What does do to destress?"]
    batch = minilm.embed_queries(texts)
    assert batch.shape == (2, 384) and batch.dtype == np.float32
    assert np.allclose(batch, np.stack([minilm.embed_query(t) for t in texts]), atol=1e-5)


def test_a_question_about_one_speaker_ranks_that_speakers_turn_first(
    tmp_path: Path, minilm: SentenceTransformerEmbedder
) -> None:
    # Caroline's turns name Melanie; with the name in the query vector they pull ahead of the turn
    # that answers (what Melanie said).
    chat = [
        ("Caroline", "Melanie, how are you? I've been so stressed with work lately."),
        ("Melanie", "Running in the park clears my head when things get hard."),
        ("Caroline", "Melanie, you always know how to keep calm!"),
        ("Melanie", "Thanks Caroline, it took years of practice."),
    ]
    store = MemoryStore(tmp_path / "db", embedder=minilm)
    store.add_many([{"text": f"{s}: {t}", "kind": "message", "session_id": "s1"} for s, t in chat], namespace="c")
    result = MemoryRetriever(store, namespace="c", config={"record_access": False}).recall(
        "What does Melanie do when she is stressed?", k=2, explain=True
    )
    assert result.plan["speakers"] == ["Melanie"]
    top = result.memories[0]
    assert top.memory.text.startswith("Melanie: Running") and top.explanation.multipliers["speaker"] == 2.0
    store.close()
