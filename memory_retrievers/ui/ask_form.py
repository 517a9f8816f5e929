"""The ask page's form: the query parameters of ``GET /ns/{namespace}/ask``, checked.

Every error is an :class:`~memory_retrievers.InvalidInputError` or
:class:`~memory_retrievers.ConfigError` whose message starts with the name of the field at fault
(``q``, ``budget``, ``config``, ``overrides``, ``compare``, ``compare_overrides``), so the page can
say which box to fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memory_retrievers.errors import ConfigError, InvalidInputError
from memory_retrievers.recall.builtin import default_registry
from memory_retrievers.recall.config import DEFAULT_TOKEN_BUDGET, Preset, RecallConfig

__all__ = ["CONFIG_CHOICES", "DEFAULT_CONFIG", "AskForm"]

DEFAULT_CONFIG = "default"
CONFIG_CHOICES: tuple[str, ...] = (DEFAULT_CONFIG, *(p.value for p in Preset))
"""What the config selects offer: ``RecallConfig()`` and each :class:`~memory_retrievers.Preset`.

(The CLI's settings file holds no recall settings, so there is no "settings file" choice.)"""

_MAX_BUDGET = 1_000_000
_MAX_OVERRIDE_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class AskForm:
    """The ask page's query parameters, checked.

    Attributes:
        query: The question (``q``); ``""`` shows the form alone.
        budget: The token budget of the block (``budget``; default: the adapters' default,
            :data:`~memory_retrievers.recall.config.DEFAULT_TOKEN_BUDGET`).
        config: The left (or only) side's choice, one of :data:`CONFIG_CHOICES`.
        overrides: The left side's JSON overrides as typed (``overrides``).
        compare: The right side's choice (``compare``), or ``""``: no comparison.
        compare_overrides: The right side's JSON overrides as typed.
        left: The left side's validated config.
        right: The right side's validated config (``None`` without ``compare``).
    """

    query: str = ""
    budget: int = DEFAULT_TOKEN_BUDGET
    config: str = DEFAULT_CONFIG
    overrides: str = ""
    compare: str = ""
    compare_overrides: str = ""
    left: RecallConfig = field(default_factory=RecallConfig)
    right: RecallConfig | None = None

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> AskForm:
        """The form from a request's query parameters.

        Raises:
            InvalidInputError: A bad ``budget``, ``q``, or overrides that are not a JSON object;
                the message starts with the field's name.
            ConfigError: An unknown ``config``/``compare`` choice, or overrides the recall config
                rejects; the message starts with the field's name.
        """
        query = (params.get("q") or "").strip()
        config = params.get("config") or DEFAULT_CONFIG
        compare = params.get("compare") or ""
        overrides = params.get("overrides") or ""
        compare_overrides = params.get("compare_overrides") or ""
        left = _config("config", config, "overrides", overrides)
        right = None
        if compare:
            right = _config("compare", compare, "compare_overrides", compare_overrides)
        elif compare_overrides.strip():
            raise InvalidInputError("compare: choose a config to compare with, or leave compare_overrides empty")
        limit = min(c.query.max_query_chars for c in (left, right) if c is not None)
        if len(query) > limit:
            raise InvalidInputError(f"q: the query has {len(query):,} characters; at most {limit:,} are allowed")
        return cls(
            query=query,
            budget=_budget(params.get("budget")),
            config=config,
            overrides=overrides,
            compare=compare,
            compare_overrides=compare_overrides,
            left=left,
            right=right,
        )


def _budget(raw: str | None) -> int:
    """The ``budget`` field: tokens, a whole number in [0, 1,000,000]; empty means the default."""
    if raw is None or not raw.strip():
        return DEFAULT_TOKEN_BUDGET
    text = raw.strip().replace(",", "").replace("_", "")
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
    if not (text.isascii() and text.isdigit()) or int(text) > _MAX_BUDGET:
        raise InvalidInputError(
            f"budget: must be a whole number of tokens from 0 to {_MAX_BUDGET:,} (empty: the default "
            f"{DEFAULT_TOKEN_BUDGET:,}), got {raw[:40]!r}"
        )
    return int(text)


def _config(field: str, choice: str, overrides_field: str, overrides: str) -> RecallConfig:
    """One side's config: the choice, with its JSON overrides merged in and validated."""
    if choice not in CONFIG_CHOICES:
        raise ConfigError(f"{field}: unknown config {choice[:60]!r}; choose one of {', '.join(CONFIG_CHOICES)}")
    given = _overrides(overrides_field, overrides)
    base = RecallConfig() if choice == DEFAULT_CONFIG else RecallConfig.preset(choice)
    try:
        # A section given as a dict changes only the fields it names, as in RecallConfig.preset(name, **overrides).
        config = base.model_copy(update=given) if given else base
        default_registry().check_weights(config.weights)  # what MemoryRetriever would refuse, refused here
    except ConfigError as exc:
        raise ConfigError(f"{overrides_field}: {exc}") from None
    return config


def _overrides(field: str, text: str) -> dict[str, Any]:
    """A JSON object of RecallConfig fields (empty text: none)."""
    if not text.strip():
        return {}
    if len(text) > _MAX_OVERRIDE_CHARS:
        raise InvalidInputError(f"{field}: at most {_MAX_OVERRIDE_CHARS:,} characters of JSON, got {len(text):,}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f'{field}: not valid JSON ({exc.msg} at line {exc.lineno}); e.g. {{"k": 5}}') from None
    except RecursionError:  # "[[[[…" nested past the parser's depth: no config is that deep
        raise InvalidInputError(f'{field}: JSON nested too deeply; e.g. {{"k": 5}}') from None
    if not isinstance(value, dict):
        raise InvalidInputError(f'{field}: must be a JSON object of RecallConfig fields, e.g. {{"k": 5}}')
    return value
