"""Consolidation: each new fact against the stored memories it resembles.

Decisions are applied through the store's public writes, so every one keeps history: MERGE,
UPDATE and INVALIDATE supersede the target (the old memory stays, marked ``superseded_by``; MERGE
also records ``consolidated_from``), SKIP only adds the new fact's sources to the known memory's
``links``. ADDs of one run are written together in one commit at the end, so the facts of one
conversation are compared with what was stored before it, not with each other.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_retrievers.embeddings import unit_rows
from memory_retrievers.errors import EmbeddingError, InvalidInputError, NotFoundError
from memory_retrievers.formation.config import FormationConfig
from memory_retrievers.formation.contradictions import find_contradictions
from memory_retrievers.formation.extract import judge
from memory_retrievers.formation.report import FactOutcome
from memory_retrievers.formation.types import Decision, Fact, LLMOutputWarning, Verdict
from memory_retrievers.llm import LLM
from memory_retrievers.models import Memory, MemoryKind, WriteAction
from memory_retrievers.validation import check_text

if TYPE_CHECKING:
    from memory_retrievers.store.memory_store import MemoryStore

__all__ = ["KNOWLEDGE_KINDS", "Consolidator"]

_BY_ACTION = {WriteAction.ADDED: Decision.ADD, WriteAction.SKIPPED: Decision.SKIP, WriteAction.UPDATED: Decision.UPDATE}

#: The kinds a new fact is compared with (chat turns are its sources, never its rivals).
KNOWLEDGE_KINDS = (MemoryKind.FACT, MemoryKind.PREFERENCE, MemoryKind.EVENT, MemoryKind.INSIGHT)


class Consolidator:
    """Applies consolidation decisions for one namespace (LLM optional).

    ``check`` runs before each LLM call and raises when the run must stop (its namespace was
    forgotten): a forgotten user's facts are not sent to the LLM any more.
    """

    def __init__(
        self,
        store: MemoryStore,
        llm: LLM | None,
        cfg: FormationConfig,
        namespace: str,
        check: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._llm = llm
        self._cfg = cfg
        self._ns = namespace
        self._check = check

    async def apply(self, records: Sequence[tuple[Fact, dict[str, Any]]]) -> list[FactOutcome]:
        """Store each fact as its decision says; one outcome per fact, in order."""
        if not records:
            return []
        if self._llm is None and not self._cfg.scan_contradictions:
            added = await self._store.aadd_many([r for _, r in records], namespace=self._ns)
            return [FactOutcome(f, Decision.ADD, m) for (f, _), m in zip(records, added, strict=True)]
        outcomes: list[FactOutcome | None] = []
        adds: list[tuple[int, Fact, dict[str, Any], tuple[str, ...]]] = []
        # One embedding call for every fact, as documents: the vector finds the similar stored
        # memories (document to document) and is stored with the fact, so nothing is embedded twice.
        texts = [fact.text for fact, _ in records]
        vectors = unit_rows(await self._store.embedder.aembed_documents(texts), source="the store's embedder")
        if vectors.shape[0] != len(texts):
            raise EmbeddingError(f"the embedder returned {vectors.shape[0]} vectors for {len(texts)} facts")
        for (fact, record), vector in zip(records, vectors, strict=True):
            record["vector"] = vector
            similar = await self._similar(vector)
            contradicts = self._contradicted(fact.text, similar)
            if contradicts:
                record["metadata"] = {**record["metadata"], "contradicts": list(contradicts)}
            verdict = None
            if self._llm is not None and similar:
                if self._check is not None:
                    self._check()
                texts = [m.text for m in similar]
                verdict = self._storable(await judge(self._llm, fact.text, texts, timeout_s=self._cfg.llm_timeout_s))
            if verdict is None or verdict.decision is Decision.ADD or verdict.target is None:
                adds.append((len(outcomes), fact, record, contradicts))
                outcomes.append(None)
                continue
            target = similar[verdict.target]
            memory = await self._decide(verdict.decision, verdict.text, target, record)
            outcomes.append(FactOutcome(fact, verdict.decision, memory, target.id, contradicts))
        if adds:
            added = await self._store.aadd_many([r for _, _, r, _ in adds], namespace=self._ns)
            for (slot, fact, _, contradicts), memory in zip(adds, added, strict=True):
                # The store's own duplicate check may still fold an exact duplicate: say so.
                decision = _BY_ACTION[memory.action]
                outcomes[slot] = FactOutcome(fact, decision, memory, memory.duplicate_of, contradicts)
        return [o for o in outcomes if o is not None]

    def _storable(self, verdict: Verdict | None) -> Verdict | None:
        """``verdict``, or ``None`` (the fact is added as it is) when its merged text cannot be stored."""
        if verdict is None or verdict.text is None:
            return verdict
        try:
            check_text(verdict.text, field="merged text", max_chars=self._store.config.max_text_chars)
        except InvalidInputError as exc:
            warnings.warn(
                f"memory-retrievers: consolidation: {exc}; the fact is added as it is", LLMOutputWarning, stacklevel=2
            )
            return None
        return verdict

    async def _similar(self, vector: np.ndarray) -> list[Memory]:
        hits = await self._store.avector_search(
            vector, namespace=self._ns, k=self._cfg.similar_k, filter={"kinds": list(KNOWLEDGE_KINDS)}
        )
        ids = [h.id for h in hits if h.score >= self._cfg.similar_min]
        if not ids:
            return []
        try:
            found = await self._store.aget(ids, namespace=self._ns)
        except NotFoundError as exc:  # deleted by someone else since the search: compare with the rest
            rest = [i for i in ids if i not in set(exc.missing)]
            found = await self._store.aget(rest, namespace=self._ns) if rest else []
        return found if isinstance(found, list) else [found]

    @staticmethod
    def _contradicted(text: str, similar: Sequence[Memory]) -> tuple[str, ...]:
        pairs = find_contradictions([text, *(m.text for m in similar)])
        return tuple(similar[p.second - 1].id for p in pairs if p.first == 0)

    async def _decide(self, decision: Decision, merged: str | None, target: Memory, record: dict[str, Any]) -> Memory:
        links = list(dict.fromkeys([*target.links, *record["links"]]))
        meta = {**record["metadata"], "decision": decision.value}
        if decision is Decision.SKIP:
            changes: dict[str, Any] = {}
            if set(links) != set(target.links):
                changes["links"] = links
            if target.lifecycle == "candidate":
                changes["lifecycle"] = "validated"  # a later conversation confirms it
            if target.expires_at is not None and "expires_at" not in record:
                # A surer fact confirms a speculative one: it no longer expires.
                changes["expires_at"] = None
                changes["metadata"] = {**target.metadata, "confidence": record["metadata"]["confidence"]}
            if not changes:
                return target
            return await self._store.aupdate(target.id, namespace=self._ns, **changes)
        if decision is Decision.MERGE:
            history = list(target.metadata.get("consolidated_from", []))
            meta["consolidated_from"] = [*history, target.id]
            new = {**record, "text": merged, "links": links, "metadata": meta}
            new.pop("vector", None)  # the merged text is embedded on its own
            if "lifecycle" in record:
                new["lifecycle"] = "validated"  # what it merges was known already
        else:  # UPDATE and INVALIDATE: the new fact replaces the target, which stays in history
            new = {**record, "metadata": {**meta, "replaces": target.id}}
        return await self._store.asupersede(target.id, new, namespace=self._ns)
