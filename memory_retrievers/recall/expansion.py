"""Query expansion and HyDE: with an LLM (rewrites, a hypothetical memory) or without (feedback, Rocchio).

LLM calls start as soon as a recall begins and run beside the first searches; a failing or slow
LLM never fails the recall (it warns with :class:`LLMFallbackWarning` and the recall continues on
the LLM-free path). Without an LLM, in ``hybrid`` mode, a second pass reads the first pass's top
hits: their frequent terms extend the BM25 query, their centroid moves the query vector.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence

import numpy as np

from memory_retrievers.llm import LLM, expansion_prompt, hyde_prompt, parse_rewrites
from memory_retrievers.models import FtsField
from memory_retrievers.recall.config import RecallConfig
from memory_retrievers.recall.fusion import FusedHit
from memory_retrievers.recall.plan import Plan
from memory_retrievers.recall.source import RecallSource
from memory_retrievers.recall.stage_searches import Channels
from memory_retrievers.recall.tasks import RecallTasks
from memory_retrievers.runtime.plugin_loop import isolated
from memory_retrievers.text.query import analyze, feedback_terms
from memory_retrievers.validation import MAX_QUERY_CHARS

__all__ = ["LLMFallbackWarning", "LLMStages", "feedback_pass"]


class LLMFallbackWarning(RuntimeWarning):
    """An LLM stage failed or timed out; recall continued on the LLM-free path."""


async def _ask(llm: LLM, prompt: str, timeout_s: float, stage: str) -> str | None:
    try:
        # On the plug-in loop: an async LLM that blocks cannot stop this loop's timeout.
        return await asyncio.wait_for(isolated(lambda: llm.acomplete(prompt)), timeout=timeout_s)
    except Exception as exc:  # any LLM failure degrades to the LLM-free path
        reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"failed: {exc!r}"
        warnings.warn(
            f"memory-retrievers: LLM {stage} {reason}; continuing without it", LLMFallbackWarning, stacklevel=2
        )
        return None


class LLMStages:
    """The LLM calls of one recall: started at once, turned into ranked lists when they answer."""

    def __init__(self, llm: LLM | None, plan: Plan, query: str, cfg: RecallConfig, tasks: RecallTasks) -> None:
        self._plan = plan
        self._query = query
        self._cfg = cfg
        self._expansion: asyncio.Task[str | None] | None = None
        self._hyde: asyncio.Task[str | None] | None = None
        if llm is None:
            return
        if plan.expansion == "llm":
            prompt = expansion_prompt(query, plan.features.intent, cfg.query_expansion.llm_rewrites)
            self._expansion = tasks.start(_ask(llm, prompt, cfg.query_expansion.llm_timeout_s, "query expansion"))
        if plan.hyde == "llm":
            self._hyde = tasks.start(_ask(llm, hyde_prompt(query), cfg.query_expansion.llm_timeout_s, "HyDE"))

    async def launch_lists(self, channels: Channels) -> None:
        """Wait for the answers; each rewrite and the HyDE text become lists (weight 1 each)."""
        w = self._cfg.weights
        plan = self._plan
        if self._expansion is not None:
            answer = await self._expansion
            rewrites = parse_rewrites(answer or "", self._query, self._cfg.query_expansion.llm_rewrites)
            if not rewrites:
                plan.expansion = "off"
                plan.notes.append("LLM expansion gave nothing usable; skipped")
            for i, rewrite in enumerate(rewrites, 1):
                terms = " ".join(analyze(rewrite).keywords) or rewrite
                channels.text(f"context:rewrite {i}", "context", w.context, terms, FtsField.CONTEXT)
                channels.vector_of_text(f"vector:rewrite {i}", "vector", w.vector, rewrite)
        if self._hyde is not None:
            hyde_text = ((await self._hyde) or "").strip()[:MAX_QUERY_CHARS]
            if hyde_text and "\x00" not in hyde_text:
                channels.vector_of_text("hyde", "hyde", w.hyde, hyde_text)
            else:
                plan.hyde = "off"
                plan.notes.append("LLM HyDE gave nothing usable; skipped")


def feedback_pass(
    plan: Plan,
    fused: Sequence[FusedHit],
    query_vector: np.ndarray,
    cfg: RecallConfig,
    source: RecallSource,
    channels: Channels,
) -> None:
    """Launch the LLM-free second pass from the first pass's top hits (already in the source)."""
    w = cfg.weights
    top = [h.id for h in fused[: cfg.query_expansion.feedback_docs]]
    if not top:
        return
    if plan.expansion == "feedback":
        keywords = plan.features.keywords
        extra = feedback_terms(keywords, [source.memory(i).text for i in top], cfg.query_expansion.feedback_terms)
        if extra:
            plan.notes.append(f"feedback terms: {', '.join(extra)}")
            channels.text("context:feedback", "context", w.context, " ".join([*keywords, *extra]), FtsField.CONTEXT)
    if plan.hyde == "rocchio":
        centroid = np.mean([source.vector(i) for i in top], axis=0)
        vec = cfg.query_expansion.rocchio_alpha * query_vector + cfg.query_expansion.rocchio_beta * centroid
        norm = float(np.linalg.norm(vec))
        if norm > 0:
            channels.vector("hyde:rocchio", "hyde", w.hyde, vec / norm)
