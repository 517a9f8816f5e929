"""The values memory formation passes around: facts, confidence tiers, decisions, the warning."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from memory_retrievers.recall.expansion import LLMFallbackWarning

__all__ = ["Confidence", "Decision", "Fact", "LLMOutputWarning", "Verdict"]


class LLMOutputWarning(LLMFallbackWarning):
    """An LLM answer during memory formation could not be used; the step fell back.

    Nothing is lost when it is issued: the raw turns stay stored and recallable, and a fact whose
    consolidation answer was unusable is added as it is.
    """


class Confidence(str, enum.Enum):
    """How sure the extractor is of a fact, from said outright to a weak guess."""

    EXPLICIT = "explicit"
    IMPLIED = "implied"
    INFERRED = "inferred"
    SPECULATIVE = "speculative"

    @property
    def rank(self) -> int:
        """0 for explicit up to 3 for speculative."""
        return list(Confidence).index(self)


class Decision(str, enum.Enum):
    """What consolidation does with a new fact, given the stored memories it resembles."""

    ADD = "ADD"
    """New information: stored as a new memory."""
    MERGE = "MERGE"
    """Adds detail to a memory: the merged text replaces it (``consolidated_from`` keeps the chain)."""
    UPDATE = "UPDATE"
    """A newer version of a memory: the new fact supersedes it."""
    INVALIDATE = "INVALIDATE"
    """Shows a memory is not (or no longer) true: the new fact supersedes it, marked as invalidating."""
    SKIP = "SKIP"
    """Already known: nothing new is stored; the known memory gains the new fact's sources."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One extracted fact.

    Attributes:
        text: The self-contained sentence.
        sources: Indexes (0-based) of the turns it came from, in the list given to the extractor.
        confidence: The extractor's confidence tier.
        about: Whom the fact is about, when the extractor said.
    """

    text: str
    sources: tuple[int, ...] = ()
    confidence: Confidence = Confidence.EXPLICIT
    about: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A consolidation decision: the action, its target (0-based index into the candidates), merged text."""

    decision: Decision
    target: int | None = None
    text: str | None = None
