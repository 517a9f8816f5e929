"""``MemoryMiddleware``: long-term memory for ``langchain.agents.create_agent``.

Before each model call it recalls the memories that matter for the latest user message and adds
them, within a token budget, to the system message (the agent state is not changed, so the block
never piles up in the conversation). Memories that are messages already in the conversation are
left out, and the recall of a user turn is reused by the later model calls of its tool loop. After
the agent finishes a turn it stores what ``remember`` says as memories, so later conversations can
recall them: by default the user's message only.

The turn is stored off the hot path: it is queued (``MemoryStore.add_many_later``) and the agent
returns at once; it is embedded and committed in the background, within milliseconds. Recall in
this process finds it from the moment it is queued (the next turn's recall, even before the
commit); other processes once it is committed (``StoreConfig.write_linger`` plus one commit
later). A process killed in that window loses the queued turn; ``store.flush()``, ``close()`` and
a normal exit wait for it.

Why the user's turns by default: memory layers such as mem0 and langmem keep facts *about the
user*, extracted from the conversation, not the assistant's replies. Without an extraction model,
the user's own words are the closest verbatim equivalent. An assistant reply is the model's words
(a restatement at best, a guess at worst); stored by default, the agent would later recall its own
answers as if they were facts about the user. ``remember="turn"`` also keeps the final answer
(each message labelled by role: ``"user: ..."``, ``"assistant: ..."``) for apps where what the
assistant said or promised matters; ``remember="off"`` stores nothing.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from memory_retrievers import (
    Channel,
    ConfigError,
    InvalidInputError,
    MemoryStore,
    QueueFullError,
    RecallConfig,
    RecallResult,
)
from memory_retrievers.integration import (
    MIDDLEWARE_HEADER,
    ModelWindow,
    RecallBinding,
    arecall_window,
    deepcopy_memo,
    headed_block,
    query_text,
    recall_window,
)

from ._messages import message_record, searchable_text
from .llms import to_memory_llm

__all__ = ["MemoryMiddleware"]

Resolver = Callable[[Runtime[Any]], str | None]
Remember = Literal["user", "turn", "off"]
_REMEMBER: tuple[Remember, ...] = ("user", "turn", "off")

# Recalls kept for reuse by later model calls of the same user turn (one entry per live turn).
_TURN_CACHE_SIZE = 1024
_TurnKey = tuple[str, str, str]  # namespace, user message id, query


class _Turn(NamedTuple):
    namespace: str
    query: str
    key: _TurnKey | None  # None: not cached (option off, or the message has no id)
    cached: RecallResult | None


def _thread_id(_runtime: Runtime[Any]) -> str | None:
    """The LangGraph ``thread_id`` of the current run, if any."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a graph run
        return None
    value = configurable.get("thread_id")
    return None if value is None else str(value)


def _resolver(value: str | Resolver | None, what: str) -> Resolver:
    if value is None or isinstance(value, str):
        return lambda _runtime: value
    if callable(value):
        return value
    raise ConfigError(f"{what} must be a str or a callable(runtime) -> str, got {type(value).__name__}")


def _latest_user_turn(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return i
    return None


class MemoryMiddleware(AgentMiddleware):
    """Recall before the model call, remember after the turn.

    Args:
        store: The memory store.
        namespace: Whose memories: a str, or a callable ``runtime -> str`` (e.g.
            ``lambda rt: rt.context.user_id`` with ``create_agent(..., context_schema=...)``).
        session_id: The conversation a stored turn belongs to: a str, a callable ``runtime -> str``,
            or by default the LangGraph ``thread_id`` of the run.
        k: Maximum memories injected (``None``: ``recall_config.k``, 10 by default, as every
            adapter's default: :data:`memory_retrievers.integration.DEFAULT_K`).
        token_budget: Maximum tokens of the injected block: ``"config"`` takes
            ``recall_config.token_budget`` (2,000 by default), ``None`` means unlimited.
        recall_config: :class:`~memory_retrievers.RecallConfig` (or a dict of overrides).
        llm: Optional LangChain model for query expansion / HyDE during recall.
        remember: What each finished turn leaves as memories: ``"user"`` (default: the user's
            message), ``"turn"`` (the user's message and the final answer, labelled by role) or
            ``"off"``. ``True``/``False`` mean ``"user"``/``"off"``. See the module docstring for why.
        header: The first line of the recalled block in the system message (it takes the place of
            the block's own "Relevant memories" line: one header, not two).
        recall_once_per_turn: Recall for the first model call of a user turn and reuse the result
            for the later calls of its tool loop (the query is the same user message). Saves a
            recall, and the LLM calls of expansion/HyDE if ``llm`` is set, per tool step. Set
            ``False`` when tools write memories that the same turn should already see.
        former: A :class:`~memory_retrievers.formation.MemoryFormer` of the same store: each
            stored turn is also handed to it in the background (``form_later``), so facts are
            extracted and consolidated off the hot path; the turn is stored before that.
        channels: Recall channels of your own (:class:`~memory_retrievers.Channel`), added to the
            built-in ones; ``recall_config``'s weights may name them.

    Raises:
        ConfigError: Bad arguments.

    Example:
        .. code-block:: python

            agent = create_agent(model, tools=[], middleware=[MemoryMiddleware(store, namespace="alice")])
            agent.invoke({"messages": [HumanMessage("What theme do I like?")]})
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        namespace: str | Resolver,
        session_id: str | Resolver | None = None,
        k: int | None = None,
        token_budget: int | Literal["config"] | None = "config",
        recall_config: RecallConfig | Mapping[str, Any] | None = None,
        llm: Any = None,
        remember: Remember | bool = "user",
        header: str = MIDDLEWARE_HEADER,
        recall_once_per_turn: bool = True,
        former: Any = None,
        channels: Sequence[Channel] | None = None,
    ) -> None:
        super().__init__()
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigError(f"k must be an int >= 1 or None, got {k!r}")
        if token_budget not in ("config", None) and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0
        ):
            raise ConfigError(f"token_budget must be an int >= 0, 'config' or None, got {token_budget!r}")
        if isinstance(remember, bool):
            remember = "user" if remember else "off"
        if remember not in _REMEMBER:
            raise ConfigError(
                f"remember must be one of {', '.join(map(repr, _REMEMBER))} (or a bool), got {remember!r}"
            )
        self._binding = RecallBinding(store, config=recall_config, llm=llm, channels=channels, to_llm=to_memory_llm)
        self._store = self._binding.store
        self._former = self._binding.former(former)
        if self._former is not None and remember == "off":
            raise ConfigError('former needs stored turns to form memories from: use remember="user" or "turn"')
        self.k = k
        self.token_budget = token_budget
        self.remember: Remember = remember
        self.header = header
        self._namespace = _resolver(namespace, "namespace")
        self._session = _resolver(session_id, "session_id") if session_id is not None else _thread_id
        self.recall_once_per_turn = bool(recall_once_per_turn)
        self._turns: OrderedDict[_TurnKey, RecallResult] = OrderedDict()
        self._turns_lock = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        """The memory store (fixed: build another middleware for another store)."""
        return self._store

    def __deepcopy__(self, memo: dict[int, Any]) -> MemoryMiddleware:
        # The store, its recall binding and the former are handles the copy shares (a store cannot
        # be copied: it is bound to this process's connection); the turn cache and its lock are the
        # copy's own, so the two never hand each other a recall.
        memo = deepcopy_memo(memo, self._store, self._binding, self._former)
        clone = object.__new__(type(self))
        memo[id(self)] = clone
        for name, value in vars(self).items():
            if name not in ("_turns", "_turns_lock"):
                setattr(clone, name, copy.deepcopy(value, memo))
        clone._turns = OrderedDict()
        clone._turns_lock = threading.Lock()
        return clone

    # ------------------------------------------------------------------ shared logic
    def _resolve_namespace(self, runtime: Runtime[Any]) -> str:
        ns = self._namespace(runtime)
        if not isinstance(ns, str) or not ns.strip():
            raise InvalidInputError(
                f"the namespace resolver returned {ns!r}; it must return the user's namespace as a non-empty str"
            )
        return ns

    def _turn(self, request: ModelRequest[Any]) -> _Turn | None:
        """What recall needs for this model call (``None``: no user message to recall for).

        The recall query is the latest user message; with ``recall_once_per_turn`` and a message
        id, the turn's earlier recall is reused.
        """
        i = _latest_user_turn(request.messages)
        if i is None:
            return None
        message = request.messages[i]
        text = str(message.text)
        if not text.strip():
            return None
        query = query_text(text, self._binding.config.query.max_query_chars)
        namespace = self._resolve_namespace(request.runtime)
        # Without a message id two turns asking the same words could not be told apart.
        key = (namespace, message.id, query) if self.recall_once_per_turn and message.id else None
        cached = None
        if key is not None:
            with self._turns_lock:
                cached = self._turns.get(key)
                if cached is not None:
                    self._turns.move_to_end(key)
        return _Turn(namespace, query, key, cached)

    def _keep(self, turn: _Turn, result: RecallResult) -> None:
        if turn.key is None:
            return
        with self._turns_lock:
            self._turns[turn.key] = result
            while len(self._turns) > _TURN_CACHE_SIZE:
                self._turns.popitem(last=False)

    def _window(self, request: ModelRequest[Any], query: str) -> ModelWindow:
        # What the model already sees is left out, so k and the budget go to memories it has not
        # seen: a stored turn keeps its message id as memory id, and a message stored under another
        # id (by a chat history, or said before in the same words) matches by its text.
        max_chars = self._store.config.max_text_chars
        shown = frozenset(m.id for m in request.messages if m.id)
        texts = tuple(searchable_text(m, max_chars) for m in request.messages if isinstance(m, BaseMessage))
        return ModelWindow(query, shown, texts)

    def _with_memories(self, request: ModelRequest[Any], result: RecallResult) -> ModelRequest[Any]:
        block = headed_block(result, self.header)
        if not block:
            return request
        base = str(request.system_message.text) if request.system_message is not None else ""
        content = f"{base}\n\n{block}" if base else block
        return request.override(system_message=SystemMessage(content=content))

    def _turn_records(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> list[dict[str, Any]]:
        messages: list[BaseMessage] = list(state.get("messages") or [])
        start = _latest_user_turn(messages)
        if start is None:
            return []
        final = messages[-1]
        turn = [messages[start]]
        if (
            self.remember == "turn"
            and isinstance(final, AIMessage)
            and final is not messages[start]
            and final.text.strip()
        ):
            turn.append(final)
        session = self._session(runtime)
        records = []
        for message in turn:
            record = message_record(message, session_id=session)
            if message.id:  # re-storing the same message (e.g. a replayed turn) upserts it
                record["id"] = message.id
            records.append(record)
        return records

    # ------------------------------------------------------------------ hooks
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Add recalled memories to the system message, then call the model."""
        turn = self._turn(request)
        if turn is not None:
            result = turn.cached
            if result is None:
                window = self._window(request, turn.query)
                result = recall_window(
                    self._binding, window, namespace=turn.namespace, k=self.k, token_budget=self.token_budget
                )
                self._keep(turn, result)
            request = self._with_memories(request, result)
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call` (natively async recall)."""
        turn = self._turn(request)
        if turn is not None:
            result = turn.cached
            if result is None:
                window = self._window(request, turn.query)
                result = await arecall_window(
                    self._binding, window, namespace=turn.namespace, k=self.k, token_budget=self.token_budget
                )
                self._keep(turn, result)
            request = self._with_memories(request, result)
        return await handler(request)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Queue the finished turn as ``remember`` says (committed in the background; see the module docstring)."""
        if self.remember != "off":
            records = self._turn_records(state, runtime)
            if records:
                namespace = self._resolve_namespace(runtime)
                self._form(self._store.add_many_later(records, namespace=namespace, dedup=False), namespace)
        return None

    def _form(self, stored: Sequence[Any], namespace: str) -> None:
        if self._former is not None and stored:
            self._former.form_later(stored, namespace=namespace)

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent` (a full write queue is waited for, not refused)."""
        if self.remember != "off":
            records = self._turn_records(state, runtime)
            if records:
                namespace = self._resolve_namespace(runtime)
                try:
                    stored: Sequence[Any] = self._store.add_many_later(records, namespace=namespace, dedup=False)
                except QueueFullError:  # on an event loop a full queue refuses at once: wait for room
                    stored = await self._store.aadd_many(records, namespace=namespace, dedup=False)
                self._form(stored, namespace)
        return None
