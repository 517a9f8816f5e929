"""The frozen, validated configuration of memory formation."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from memory_retrievers.config import CheckedModel
from memory_retrievers.formation.types import Confidence

__all__ = ["FormationConfig"]


class FormationConfig(CheckedModel):
    """What :class:`~memory_retrievers.formation.MemoryFormer` does with a finished conversation.

    Every LLM step is skipped when no LLM is given; the zero-LLM steps always can run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)

    store_turns: bool = True
    """Store the raw turns (``kind="message"``) so they stay recallable; facts link to them."""
    extract: bool = True
    """Ask the LLM for facts (needs an LLM)."""
    consolidate: bool = True
    """Compare each fact with the stored memories it resembles and let the LLM decide
    ADD/MERGE/UPDATE/INVALIDATE/SKIP (needs an LLM; without it facts are added)."""
    summarize: bool = False
    """Also store an LLM summary of the session (``kind="insight"``, ``metadata.summary_of``)."""
    min_confidence: Confidence = Confidence.SPECULATIVE
    """Facts less certain than this tier are dropped (default: none; speculative ones expire)."""
    speculative_ttl_days: float | None = Field(default=30.0, gt=0)
    """A speculative fact expires this many days after it is stored (``expires_at``) unless a
    later, surer fact confirms it (consolidation's SKIP onto it clears the expiry). ``None``: never."""
    drop_below: float | None = Field(default=None, ge=0, le=1)
    """Turns whose zero-LLM importance is below this are not stored (default: keep every turn)."""
    lifecycle: bool = True
    """Formed facts start as ``lifecycle="candidate"`` and move through the tiers by use
    (:meth:`MemoryFormer.review_lifecycle`; see :mod:`memory_retrievers.formation.lifecycle`)."""
    validate_after_uses: int = Field(default=2, ge=1)
    """Accesses (recalls) after which a candidate is validated."""
    archive_after_days: float | None = Field(default=180.0, gt=0)
    """Days without use after which a candidate or validated memory is archived (``None``: never)."""
    scan_contradictions: bool = True
    """Mark a new fact that contradicts a stored one (``metadata.contradicts``), without an LLM."""
    similar_k: int = Field(default=5, ge=1, le=50)
    """How many stored memories a new fact is compared with."""
    similar_min: float = Field(default=0.6, ge=-1, le=1)
    """Cosine similarity a stored memory needs to be shown to consolidation."""
    max_facts: int = Field(default=100, ge=1, le=10_000)
    """Most facts stored from one formed conversation; the LLM's further facts are not stored and
    are listed in :attr:`FormationReport.rejected_facts` (an answer can list thousands)."""
    max_facts_per_turn: int = Field(default=20, ge=1, le=1_000)
    """Most facts per turn of the conversation: a conversation of ``n`` turns keeps at most
    ``min(max_facts, max_facts_per_turn * n)`` facts, the rest reported as for ``max_facts``."""
    max_queued_runs: int = Field(default=100, ge=1, le=100_000)
    """Most :meth:`MemoryFormer.form_later` runs queued or running at once. When full, a new run
    is not queued: its future fails at once with ``QueueFullError`` (logged at WARNING) and
    nothing of it is stored (turns already stored stay). ``form`` is not bounded: it waits."""
    llm_timeout_s: float = Field(default=120.0, gt=0)
    """How long one LLM call may take before its step falls back (a warning, nothing lost)."""
