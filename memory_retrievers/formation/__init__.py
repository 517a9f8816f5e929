"""Memory formation: from finished conversations to facts, consolidated, with provenance.

:class:`MemoryFormer` runs the steps; the zero-LLM pieces (:func:`importance`,
:func:`find_contradictions`, :func:`find_fuzzy_duplicates`) are pure functions usable on their own.
"""

from __future__ import annotations

from memory_retrievers.formation.config import FormationConfig
from memory_retrievers.formation.contradictions import Contradiction, find_contradictions
from memory_retrievers.formation.former import MemoryFormer, Message
from memory_retrievers.formation.hygiene import FuzzyDuplicate, find_fuzzy_duplicates
from memory_retrievers.formation.importance import importance
from memory_retrievers.formation.report import FactOutcome, FormationReport, RejectedFact
from memory_retrievers.formation.review import DuplicateFinding
from memory_retrievers.formation.types import Confidence, Decision, Fact, LLMOutputWarning, Verdict

__all__ = [
    "Confidence",
    "Contradiction",
    "Decision",
    "DuplicateFinding",
    "Fact",
    "FactOutcome",
    "FormationConfig",
    "FormationReport",
    "FuzzyDuplicate",
    "LLMOutputWarning",
    "MemoryFormer",
    "Message",
    "RejectedFact",
    "Verdict",
    "find_contradictions",
    "find_fuzzy_duplicates",
    "importance",
]
