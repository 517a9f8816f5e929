"""Memory formation: from finished conversations to facts, consolidated, with provenance.

:class:`MemoryFormer` runs the steps; the zero-LLM pieces (:func:`importance`,
:func:`find_contradictions`, :func:`find_fuzzy_duplicates`) are pure functions usable on their own.
"""

from __future__ import annotations

from .config import FormationConfig
from .contradictions import Contradiction, find_contradictions
from .former import MemoryFormer, Message
from .hygiene import FuzzyDuplicate, find_fuzzy_duplicates
from .importance import importance
from .report import FactOutcome, FormationReport, RejectedFact
from .review import DuplicateFinding
from .types import Confidence, Decision, Fact, LLMOutputWarning, Verdict

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
