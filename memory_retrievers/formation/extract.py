"""Asking an LLM for facts and summaries, with every failure turned into a fallback."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence

from memory_retrievers.formation.parse import UnusableAnswer, parse_facts, parse_verdict
from memory_retrievers.formation.prompts import consolidation_prompt, extraction_prompt, summary_prompt
from memory_retrievers.formation.types import Fact, LLMOutputWarning, Verdict
from memory_retrievers.llm import LLM
from memory_retrievers.runtime.plugin_loop import isolated

__all__ = ["ask", "extract_facts", "judge", "summarize"]


def _warn(step: str, reason: str) -> None:
    warnings.warn(f"memory-retrievers: {step}: {reason}", LLMOutputWarning, stacklevel=3)


async def ask(llm: LLM, prompt: str, timeout_s: float, step: str) -> str | None:
    """The LLM's answer, or ``None`` (with a warning) when it failed, timed out or was not text."""
    try:
        # On the plug-in loop: an async LLM that blocks cannot stop this loop's timeout.
        answer = await asyncio.wait_for(isolated(lambda: llm.acomplete(prompt)), timeout=timeout_s)
    except Exception as exc:  # any LLM failure degrades to "no answer"; the turns are stored already
        _warn(step, "timed out" if isinstance(exc, asyncio.TimeoutError) else f"failed: {exc!r}")
        return None
    if not isinstance(answer, str):
        _warn(step, f"answer is {type(answer).__name__}, not text")
        return None
    return answer


async def extract_facts(llm: LLM, turns: Sequence[str], *, when: str | None, timeout_s: float) -> list[Fact]:
    """The facts the LLM finds in ``turns`` (empty, with a warning, when its answer is unusable)."""
    answer = await ask(llm, extraction_prompt(turns, when=when), timeout_s, "fact extraction")
    if answer is None:
        return []
    try:
        facts, dropped = parse_facts(answer, len(turns))
    except UnusableAnswer as exc:
        _warn("fact extraction", f"{exc}; the turns are stored without facts")
        return []
    for note in dropped:
        _warn("fact extraction", note)
    return facts


async def summarize(llm: LLM, turns: Sequence[str], *, when: str | None, timeout_s: float) -> str | None:
    """The LLM's one-paragraph summary of ``turns``, or ``None``."""
    answer = await ask(llm, summary_prompt(turns, when=when), timeout_s, "session summary")
    text = " ".join(answer.split()) if answer else ""
    return text or None


async def judge(llm: LLM, fact: str, candidates: Sequence[str], *, timeout_s: float) -> Verdict | None:
    """The LLM's consolidation decision for ``fact``, or ``None`` (warned) when unusable."""
    answer = await ask(llm, consolidation_prompt(fact, candidates), timeout_s, "consolidation")
    if answer is None:
        return None
    try:
        return parse_verdict(answer, len(candidates))
    except UnusableAnswer as exc:
        _warn("consolidation", f"{exc}; the fact is added as it is")
        return None
