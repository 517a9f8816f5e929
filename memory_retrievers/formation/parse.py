"""Reading LLM answers for memory formation: tolerant of fences and chatter, strict about meaning.

Models wrap JSON in code fences, add a sentence before it, or return a bare list. What can be read
unambiguously is read; anything else raises :class:`UnusableAnswer` with the reason, which the
caller turns into an :class:`~memory_retrievers.formation.types.LLMOutputWarning` and a fallback.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memory_retrievers.formation.types import Confidence, Decision, Fact, Verdict

__all__ = ["UnusableAnswer", "parse_facts", "parse_verdict"]

_MAX_FACT_CHARS = 1000


class UnusableAnswer(ValueError):
    """The answer cannot be used; ``str()`` says why."""


def _json(answer: str) -> Any:
    """The first JSON object or list in ``answer``."""
    text = answer.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise UnusableAnswer(f"no JSON in the answer: {answer[:80]!r}")
    try:
        value, _ = json.JSONDecoder().raw_decode(text[min(starts) :])
    except json.JSONDecodeError as exc:
        raise UnusableAnswer(f"malformed JSON ({exc.msg} at {exc.pos}): {answer[:80]!r}") from None
    return value


def _label(value: Any, n_turns: int) -> int | None:
    """A turn label (1-based in the prompt, ``"[3]"`` or ``3``) as a 0-based index, if valid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        found = re.fullmatch(r"\s*\[?\s*(\d+)\s*\]?\s*", value)
        value = int(found.group(1)) if found else None
    if isinstance(value, int) and 1 <= value <= n_turns:
        return value - 1
    return None


def parse_facts(answer: str, n_turns: int) -> tuple[list[Fact], list[str]]:
    """The facts in an extraction answer, and a note for each item that was dropped.

    Raises:
        UnusableAnswer: The answer holds no readable list of facts at all.
    """
    value = _json(answer)
    items = value.get("facts") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise UnusableAnswer(f"expected a list of facts, got {type(items).__name__}")
    facts: list[Fact] = []
    dropped: list[str] = []
    for item in items:
        if isinstance(item, str):
            item = {"text": item}
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip() or len(text) > _MAX_FACT_CHARS or "\x00" in text:
            dropped.append(f"item without a usable text: {str(item)[:60]!r}")
            continue
        raw_sources = item.get("sources", item.get("source", []))
        if not isinstance(raw_sources, list):
            raw_sources = [raw_sources]
        sources = tuple(dict.fromkeys(i for i in (_label(s, n_turns) for s in raw_sources) if i is not None))
        raw_conf = str(item.get("confidence") or "explicit").strip().lower()
        try:
            confidence = Confidence(raw_conf)
        except ValueError:
            dropped.append(f"unknown confidence {raw_conf!r} for {text[:40]!r}; kept as speculative")
            confidence = Confidence.SPECULATIVE
        about = item.get("about")
        facts.append(Fact(" ".join(text.split()), sources, confidence, about if isinstance(about, str) else None))
    return facts, dropped


def parse_verdict(answer: str, n_candidates: int) -> Verdict:
    """The consolidation decision in an answer.

    Raises:
        UnusableAnswer: No known action, a target out of range where one is needed, or a MERGE
            without its merged text.
    """
    value = _json(answer)
    if not isinstance(value, dict):
        raise UnusableAnswer(f"expected a JSON object, got {type(value).__name__}")
    raw = str(value.get("action", "")).strip().upper()
    try:
        decision = Decision(raw)
    except ValueError:
        raise UnusableAnswer(f"unknown action {raw!r}") from None
    if decision is Decision.ADD:
        return Verdict(decision)
    target = _label(value.get("target"), n_candidates)
    if target is None:
        got = value.get("target")
        raise UnusableAnswer(f"{decision.value} needs a target between 1 and {n_candidates}, got {got!r}")
    text = value.get("text")
    if decision is Decision.MERGE:
        if not isinstance(text, str) or not text.strip() or len(text) > _MAX_FACT_CHARS:
            raise UnusableAnswer("MERGE without a usable merged text")
        return Verdict(decision, target, " ".join(text.split()))
    return Verdict(decision, target)
