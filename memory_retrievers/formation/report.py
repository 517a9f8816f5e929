"""What one formation run did: turns stored or dropped, each fact's decision, the summary."""

from __future__ import annotations

from dataclasses import dataclass

from memory_retrievers.formation.types import Decision, Fact
from memory_retrievers.models import AddedMemory, Memory

__all__ = ["FactOutcome", "FormationReport", "RejectedFact"]


@dataclass(frozen=True, slots=True)
class FactOutcome:
    """One extracted fact and what became of it.

    Attributes:
        fact: The fact as extracted.
        decision: What consolidation decided (``ADD`` when consolidation did not run).
        memory: The memory that now holds it: the new memory (ADD, MERGE, UPDATE, INVALIDATE) or
            the known one it was folded into (SKIP).
        target: The stored memory the decision was about (merged, superseded or kept), if any.
        contradicts: Stored memories the fact contradicts (zero-LLM scan).
    """

    fact: Fact
    decision: Decision
    memory: Memory
    target: str | None = None
    contradicts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RejectedFact:
    """An extracted fact that was not stored, and why.

    Attributes:
        fact: The fact as extracted.
        reason: Why it was left out: a field the store refuses (a lone surrogate, an over-long
            text), or the cap on facts per conversation (``FormationConfig.max_facts``).
    """

    fact: Fact
    reason: str


@dataclass(frozen=True, slots=True)
class FormationReport:
    """The outcome of :meth:`~memory_retrievers.formation.MemoryFormer.form`.

    Attributes:
        turns: The raw turns stored (or given already stored), in order.
        dropped_turns: Texts of turns not stored because their importance was under ``drop_below``.
        facts: One outcome per extracted fact that was kept.
        dropped_facts: Facts below ``min_confidence``.
        summary: The session summary memory, when one was made.
        rejected_facts: Facts the LLM gave that were not stored (unstorable, or over the cap);
            the others were stored.
        rejected_summary: Why the LLM's summary was not stored (e.g. too long), if it was not.
        notes: Repairs made to stored facts (e.g. an unstorable ``about`` left out).
    """

    turns: tuple[Memory, ...] = ()
    dropped_turns: tuple[str, ...] = ()
    facts: tuple[FactOutcome, ...] = ()
    dropped_facts: tuple[Fact, ...] = ()
    summary: AddedMemory | None = None
    rejected_facts: tuple[RejectedFact, ...] = ()
    rejected_summary: str | None = None
    notes: tuple[str, ...] = ()

    def count(self, decision: Decision) -> int:
        """How many facts got ``decision``."""
        return sum(1 for f in self.facts if f.decision is decision)
