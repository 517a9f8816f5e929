"""Every prompt memory formation sends to an LLM, in one place.

Turns are shown to the model with short labels (``[1]``, ``[2]``...) instead of memory ids: a model
copies a small number far more reliably than a UUID, and the labels map back to ids in Python.
Answers are asked for as JSON; :mod:`memory_retrievers.formation.parse` reads them tolerantly.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["EXTRACTION_MARKER", "SUMMARY_MARKER", "consolidation_prompt", "extraction_prompt", "summary_prompt"]

EXTRACTION_MARKER = "Extract the facts worth remembering"
SUMMARY_MARKER = "Summarise the conversation"

_EXTRACTION = (
    EXTRACTION_MARKER + " from the conversation below, for a long-term memory.\n"
    "Each fact is one self-contained sentence about a person: name them (never 'I' or 'you'), "
    "and keep dates, places, names and numbers.\n"
    "Label each fact's confidence: explicit (said outright), implied (follows directly), "
    "inferred (a reasonable guess) or speculative (a weak guess).\n"
    "{when}"
    "Conversation (each turn has a label in brackets):\n{transcript}\n\n"
    'Answer with JSON only: {{"facts": [{{"text": "...", "about": "<person>", "sources": [<turn labels>], '
    '"confidence": "explicit|implied|inferred|speculative"}}]}}. '
    'Answer {{"facts": []}} when nothing is worth remembering.'
)

_SUMMARY = (
    SUMMARY_MARKER + " below in one paragraph for a long-term memory: who talked, when, and what "
    "happened, was decided or was planned. Name people; keep dates, places and numbers.\n"
    "{when}"
    "Conversation (each turn has a label in brackets):\n{transcript}\n\nSummary:"
)

_CONSOLIDATION = (
    "You maintain a long-term memory. A new fact was learnt:\n"
    "NEW: {fact}\n"
    "These stored memories resemble it:\n{existing}\n\n"
    "Decide what to do with the new fact:\n"
    "- ADD: it is new information; store it.\n"
    "- MERGE: it adds detail to memory <target>; give the merged sentence as text.\n"
    "- UPDATE: it is a newer version of memory <target> (e.g. a change of plan, job or home); it replaces it.\n"
    "- INVALIDATE: it shows memory <target> is no longer or never was true; it replaces it.\n"
    "- SKIP: memory <target> already says the same.\n"
    'Answer with JSON only: {{"action": "ADD|MERGE|UPDATE|INVALIDATE|SKIP", "target": <number or null>, '
    '"text": "<merged sentence, for MERGE only>"}}'
)


def _transcript(turns: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(turns, 1))


def _when(when: str | None) -> str:
    return f"The conversation took place on {when}.\n" if when else ""


def extraction_prompt(turns: Sequence[str], *, when: str | None = None) -> str:
    """The fact-extraction prompt for one conversation (turn ``i`` is labelled ``[i]``, from 1)."""
    return _EXTRACTION.format(transcript=_transcript(turns), when=_when(when))


def summary_prompt(turns: Sequence[str], *, when: str | None = None) -> str:
    """The session-summary prompt (same turn labels as :func:`extraction_prompt`)."""
    return _SUMMARY.format(transcript=_transcript(turns), when=_when(when))


def consolidation_prompt(fact: str, existing: Sequence[str]) -> str:
    """The consolidation prompt: the new fact and the stored memories it resembles, numbered from 1."""
    listed = "\n".join(f"[{i}] {text}" for i, text in enumerate(existing, 1))
    return _CONSOLIDATION.format(fact=fact, existing=listed)
