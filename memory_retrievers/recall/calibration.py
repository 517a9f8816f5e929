"""A calibrated score: the probability that a recalled memory answers the query (pure functions).

The fused rank score orders one recall and means nothing across queries: the best memory of an
unrelated question scores about as high as the best of a related one. An agent, and the
frameworks' conventions (LlamaIndex's ``SimilarityPostprocessor(similarity_cutoff=...)``,
LangChain's ``relevance_score`` in [0, 1]), need one number that means the same thing on every
query. :class:`Calibration` is a logistic model over what the channels saw of a candidate:

- how close it is: the cosine similarity to the query, absolute and relative to the best
  candidate's (only for the embedder the model was fitted with; cosines of other models live on
  other scales);
- how it ranked: its place in the fused order and its share of the best final score, the
  reciprocal rank in the vector, BM25 and context channels and in any other, and how many lists
  agreed;
- what the query named: a speaker's own turn, a memory of a date the query names;
- what it says: the share of the query's keywords it contains;
- what it is: a question (a stored question matches the query that repeats it better than the
  statement answering it, so a question close to the query, or one that says every keyword of it,
  is the query asked before, not its answer), how many content words it has (chatter has none), a
  chat turn or not.

Fitted by :func:`~memory_retrievers.recall.fitting.fit_calibration` on LoCoMo
(``benchmarks/agent_context.py --fit``), where "about p of the memories scored p are evidence" is
checked by leave-one-conversation-out. The shipped models are :data:`MINILM_CALIBRATION` (the
default embedder) and :data:`RANK_CALIBRATION` (any other embedder: no cosine features, so no
floor by default), both read within :data:`LOCOMO_LIMITS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import ConfigDict, Field, field_validator

from memory_retrievers.config import CheckedModel
from memory_retrievers.errors import ConfigError
from memory_retrievers.models import MemoryKind
from memory_retrievers.text.lines import LineFacts, line_facts, stem

__all__ = [
    "COSINE_FEATURES",
    "FEATURES",
    "LOCOMO_LIMITS",
    "MAX_WEIGHT",
    "MINILM_CALIBRATION",
    "RANK_CALIBRATION",
    "Calibration",
    "Signals",
    "calibration_for",
    "feature_matrix",
    "query_terms",
]

#: Every feature a calibration may weigh, in matrix column order.
FEATURES: tuple[str, ...] = (
    "cosine",
    "cosine_gap",
    "question_cosine",
    "question_close",
    "final_share",
    "log_position",
    "rr_vector",
    "rr_bm25",
    "rr_context",
    "rr_other",
    "agreement",
    "speaker",
    "date",
    "coverage",
    "question",
    "question_coverage",
    "asked_before",
    "content_words",
    "message",
)
#: The features that read the embedder's cosine scale (left out of an embedder-agnostic model).
COSINE_FEATURES: frozenset[str] = frozenset({"cosine", "cosine_gap", "question_cosine", "question_close"})

#: The largest weight (and intercept) a calibration may have: a fitted logistic model's are a few
#: units; a larger one is a mistake, and would overflow the score.
MAX_WEIGHT = 1_000.0

#: Cosine above which a question memory counts as close to the query (``question_close``).
QUESTION_CLOSE = 0.7

#: The lists ``rr_other`` reads: the other built-in channels and the fact-to-turn "sources" lists, the
#: ones the shipped calibrations were fitted on. A user's channel is none of them: its weight counts
#: through ``final_share`` and its list through ``agreement``, never through a coefficient fitted
#: on how often recency or link hits were evidence on LoCoMo (negative there: most were not).
_OTHER_CHANNELS = frozenset({"entity", "recency", "dated", "links", "sources"})


@dataclass(frozen=True, slots=True)
class Signals:
    """What recall knows of one candidate when it scores it (the input of :func:`feature_matrix`).

    Attributes:
        cosine: Cosine similarity of the memory and the query vector.
        final_score: The fused score after multipliers (``Explanation.final_score``).
        position: Its place in the final-score order, from 1 (the ``log_position`` feature counts
            only the statements above it).
        ranks: The best rank of each channel that found it (lists with a positive weight).
        lists: How many lists with a positive weight found it.
        multipliers: Every multiplier applied to it (``speaker`` and ``date`` are read).
        text: The memory text.
        kind: The memory kind.
        query_terms: The query's keywords, each by its :func:`~memory_retrievers.text.lines.stem`
            (``coverage`` is the share of them the memory's body says).
    """

    cosine: float
    final_score: float
    position: int
    ranks: Mapping[str, int]
    lists: int
    multipliers: Mapping[str, float]
    text: str
    kind: MemoryKind
    query_terms: tuple[str, ...] = ()


def query_terms(query_keywords: Sequence[str]) -> tuple[str, ...]:
    """A query's keywords as :class:`Signals` takes them: each by its stem."""
    return tuple(stem(k) for k in query_keywords)


def feature_matrix(candidates: Sequence[Signals]) -> np.ndarray:
    """One row of :data:`FEATURES` per candidate of one recall (query-relative ones included).

    The query-relative features (the gap to the best cosine, the share of the best final score, the
    share of the most lists, the place) are measured against the statements among the candidates:
    a stored question that repeats the query is the best match by every measure, and would make
    the statements answering it look worse than they are.
    """
    n = len(candidates)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if not n:
        return out
    facts = [line_facts(c.text) for c in candidates]
    statements = [c for c, f in zip(candidates, facts, strict=True) if not f.asks] or list(candidates)
    best_cos = max(c.cosine for c in statements)
    best_final = max(c.final_score for c in statements) or 1.0
    most_lists = max(c.lists for c in statements) or 1
    above = _statements_above(candidates, facts)
    for i, (c, f) in enumerate(zip(candidates, facts, strict=True)):
        question = 1.0 if f.asks else 0.0
        covered = sum(1 for t in c.query_terms if t in f.keywords) / len(c.query_terms) if c.query_terms else 0.0
        other = [r for ch, r in c.ranks.items() if ch in _OTHER_CHANNELS]
        out[i] = (
            c.cosine,
            c.cosine - best_cos,
            question * c.cosine,
            question * max(0.0, c.cosine - QUESTION_CLOSE),
            c.final_score / best_final,
            math.log(1 + above[i]),
            1.0 / c.ranks["vector"] if "vector" in c.ranks else 0.0,
            1.0 / c.ranks["bm25"] if "bm25" in c.ranks else 0.0,
            1.0 / c.ranks["context"] if "context" in c.ranks else 0.0,
            1.0 / min(other) if other else 0.0,
            c.lists / most_lists,
            1.0 if "speaker" in c.multipliers else 0.0,
            1.0 if "date" in c.multipliers else 0.0,
            covered,
            question,
            question * covered,
            question * _asked_before(c.query_terms, f.keywords),
            math.log1p(f.content_words),
            1.0 if c.kind is MemoryKind.MESSAGE else 0.0,
        )
    return out


def _asked_before(query: Sequence[str], said: frozenset[str]) -> float:
    """1 when a question memory asks what the query asks: one's keywords all among the other's."""
    asked = set(query)
    return 1.0 if (asked and asked <= said) or (said and said <= asked) else 0.0


def _statements_above(candidates: Sequence[Signals], facts: Sequence[LineFacts]) -> list[int]:
    """For each candidate, how many statements (not questions) are placed above it."""
    above = [0] * len(candidates)
    seen = 0
    for i in sorted(range(len(candidates)), key=lambda i: candidates[i].position):
        above[i] = seen
        seen += not facts[i].asks
    return above


class Calibration(CheckedModel):
    """A logistic model from :data:`FEATURES` to the probability that a memory is evidence.

    ``score = 1 / (1 + exp(-(intercept + Σ weights[f] * feature_f)))``; features without a weight
    count 0. Build one with :func:`~memory_retrievers.recall.fitting.fit_calibration` on your own
    labelled recalls, or use a shipped one (see the module docstring).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """What it was fitted on (shown in ``RecallResult.plan``)."""
    embedder: str | None = None
    """The embedder whose cosines it reads (``Embedder.name``); ``None``: it reads no cosine, so it
    suits any embedder."""
    intercept: float = Field(ge=-MAX_WEIGHT, le=MAX_WEIGHT, allow_inf_nan=False)
    """The log-odds of a candidate whose features are all 0 (a finite number)."""
    weights: Mapping[str, float]
    """Each feature's weight, by name (finite, at most :data:`MAX_WEIGHT` in size)."""
    floor: float = Field(default=0.0, ge=0.0, le=1.0)
    """The score below which recall leaves a memory out when ``RecallConfig.relevance.min_score`` is
    ``None``, chosen on the fitting data (0: no floor)."""
    abstain: float = Field(default=0.0, ge=0.0, le=1.0)
    """The best score below which recall returns nothing when ``RecallConfig.relevance.abstain_below`` is
    ``None``: a query none of whose memories is likely to answer it gets an empty block. Chosen on
    the fitting data (0: never abstain)."""
    limits: Mapping[str, float] = Field(default_factory=dict)
    """The largest value each feature took in the fitting data, by name: a larger value is read as
    that one. A logistic model extrapolates a feature past its data linearly: fitted on chat turns
    of at most 41 content words, it read a 1,570-word pasted stack trace as 20 times likelier
    evidence than a short answer, and put it into blocks it had nothing to do with."""
    abstain_relevance: float = Field(default=1.0, ge=0.0, le=1.0)
    """Recall abstains only when, besides, no memory's relevance (cosine, clipped to [0, 1]) reaches
    this (``RecallConfig.relevance.abstain_relevance`` when set): a memory that close to the query is kept
    even when the channels' other signals are weak, as for a question worded unlike its answer.
    1 (the default): the score alone decides."""

    @field_validator("weights")
    @classmethod
    def _known(cls, value: Mapping[str, float]) -> Mapping[str, float]:
        return _by_feature(value, "weights", MAX_WEIGHT)

    @field_validator("limits")
    @classmethod
    def _known_limits(cls, value: Mapping[str, float]) -> Mapping[str, float]:
        return _by_feature(value, "limits", math.inf)

    def suits(self, embedder: str) -> bool:
        """Whether its cosine features are on ``embedder``'s scale (or it reads none)."""
        return self.embedder is None or self.embedder == embedder

    def within_limits(self, features: np.ndarray) -> np.ndarray:
        """The rows of a :func:`feature_matrix` as the model reads them: each feature at most its limit."""
        if not self.limits:
            return features
        top = np.asarray([self.limits.get(f, np.inf) for f in FEATURES], dtype=np.float64)
        clipped: np.ndarray = np.minimum(features, top)
        return clipped

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """The calibrated score of each row of a :func:`feature_matrix` (read within :attr:`limits`)."""
        w = np.asarray([self.weights.get(f, 0.0) for f in FEATURES], dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            z = self.within_limits(features) @ w + self.intercept
        # Huge features can still overflow (inf - inf is NaN): a score is always a number in [0, 1].
        z = np.nan_to_num(z, nan=0.0, posinf=40.0, neginf=-40.0)
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def _by_feature(value: Mapping[str, float], field: str, bound: float) -> dict[str, float]:
    """A calibration's ``{feature: number}`` field, checked: known features, finite numbers within ``bound``."""
    unknown = sorted(set(value) - set(FEATURES))
    if unknown:
        raise ValueError(f"unknown feature(s) {unknown} in {field}; features are: {', '.join(FEATURES)}")
    if not all(math.isfinite(float(v)) and abs(float(v)) <= bound for v in value.values()):
        within = f" between -{bound:g} and {bound:g}" if math.isfinite(bound) else ""
        raise ValueError(f"{field} must be finite numbers{within}")
    return {k: float(v) for k, v in value.items()}


#: Where the shipped calibrations stop extrapolating: the content words of LoCoMo dev's longest
#: turn (41, ``log1p``); their other features are bounded by construction (cosines, shares,
#: reciprocal ranks). Measured after the fit, so they hold no limit of their fit's own.
LOCOMO_LIMITS = {"content_words": 3.73767}

#: Fitted for all-MiniLM-L6-v2 on LoCoMo dev replayed as chat traffic (``python
#: benchmarks/agent_context.py --fit``): every candidate of 5,576 questions over four stores (clean
#: turns; turns with chatter; with chatter and earlier questions; the facts LoCoMo's LLM extracted).
#: Leave-one-conversation-out: expected calibration error 0.010. Recall abstains when no memory scores
#: 0.1 nor has a relevance of 0.35: that empties 90% of the blocks of 20 off-topic
#: questions the fit never saw, for 0.0042 evidence recall@10 on clean LoCoMo dev.
MINILM_CALIBRATION = Calibration(
    name="LoCoMo dev, 6 conversations",
    embedder="sentence-transformers/all-MiniLM-L6-v2",
    intercept=-7.207659,
    weights={
        "cosine": 1.768334,
        "cosine_gap": 3.052408,
        "question_cosine": -1.525409,
        "question_close": -1.059342,
        "final_share": 2.191908,
        "log_position": -0.253448,
        "rr_vector": 0.286177,
        "rr_bm25": 0.829087,
        "rr_context": 0.830849,
        "rr_other": -0.678122,
        "agreement": -0.629284,
        "speaker": 2.030695,
        "date": 0.946778,
        "coverage": 1.334643,
        "question": -0.396589,
        "question_coverage": 0.434092,
        "asked_before": -2.316715,
        "content_words": 0.958302,
        "message": -1.736536,
    },
    floor=0.005,
    abstain=0.1,
    abstain_relevance=0.35,
    limits=LOCOMO_LIMITS,
)

#: Fitted on the same candidates without the cosine features, for any other embedder. It orders
#: and calibrates (expected calibration error 0.006 leave-one-conversation-out), but without the
#: cosine it cannot tell an off-topic query from an answerable one, so it neither abstains nor
#: floors: fit one for your embedder (:func:`~memory_retrievers.recall.fitting.fit_calibration`) to get both.
RANK_CALIBRATION = Calibration(
    name="LoCoMo dev, 6 conversations, rank only",
    embedder=None,
    intercept=-7.902891,
    weights={
        "final_share": 2.54159,
        "log_position": -0.173347,
        "rr_vector": 1.248862,
        "rr_bm25": 0.776238,
        "rr_context": 0.719378,
        "rr_other": -0.699265,
        "agreement": -0.146549,
        "speaker": 2.104202,
        "date": 0.987933,
        "coverage": 1.884917,
        "question": -0.83017,
        "question_coverage": 0.117628,
        "asked_before": -2.033233,
        "content_words": 1.028786,
        "message": -2.203588,
    },
    floor=0.0,
    abstain=0.0,
    abstain_relevance=1.0,
    limits=LOCOMO_LIMITS,
)


def calibration_for(embedder: str, configured: Calibration | None) -> Calibration:
    """The calibration recall uses for a store whose embedder is ``embedder``.

    The configured one; else the shipped one fitted for the embedder; else the embedder-agnostic
    :data:`RANK_CALIBRATION`.

    Raises:
        ConfigError: The configured calibration reads another embedder's cosines.
    """
    if configured is not None:
        if not configured.suits(embedder):
            raise ConfigError(
                f"RecallConfig.relevance.calibration {configured.name!r} was fitted for the embedder "
                f"{configured.embedder!r}, but this store embeds with {embedder!r}; fit one for it (fit_calibration) "
                "or leave calibration unset"
            )
        return configured
    if MINILM_CALIBRATION.suits(embedder):
        return MINILM_CALIBRATION
    return RANK_CALIBRATION
