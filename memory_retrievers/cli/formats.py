"""Reading import files: memories (JSONL or a JSON array), our exports, chat transcripts, LoCoMo.

Every format becomes a list of :class:`Item`: a record to write, or the reason it cannot be read,
each named by where it came from ("line 12"), so an import reports bad lines by number and
imports the rest.

Formats (``--format auto`` picks one from the content):

- ``memories``: one JSON object per line (or a JSON array of them) with ``text`` and any writable
  field (``namespace``, ``kind``, ``tags``, ``created_at`` as ISO 8601...).
- ``export``: what ``export`` writes: a header line, then one exact record per line (restored as is).
- ``openai``: chat messages ``{"role", "content"}``: a JSON list, ``{"messages": [...]}``, one
  message per line, or one ``{"messages": [...]}`` conversation per line (fine-tuning files).
- ``langchain``: LangChain message dumps: ``messages_to_dict`` (``{"type", "data"}``) or ``dumpd``
  (``{"lc": 1, "id": [..., "HumanMessage"], "kwargs"}``) objects, as a JSON list or one per line.
- ``locomo``: LoCoMo conversations (one namespace per conversation unless ``-n`` is given).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from memory_retrievers.cli import locomo

__all__ = ["EXPORT_FORMAT", "FORMATS", "Item", "Parsed", "detect", "parse"]

EXPORT_FORMAT = "memory-retrievers-export"
FORMATS = ("auto", "memories", "export", "openai", "langchain", "locomo")

_LC_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
}


@dataclass(frozen=True, slots=True)
class Item:
    """One record of an import file, or why it could not be read.

    Attributes:
        where: Its position, e.g. ``line 12`` or ``item 3``.
        record: The record (a write record, or an export record for ``export``), or ``None``.
        error: Why it could not be read.
    """

    where: str
    record: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class Parsed:
    """An import file, read.

    Attributes:
        format: The format it was read as.
        items: Its records and unreadable parts, in order.
        header: The export header (``export`` only).
    """

    format: str
    items: list[Item] = field(default_factory=list)
    header: dict[str, Any] | None = None


def _loads(text: str) -> Any:
    """``json.loads``, with nesting deeper than Python's recursion limit as a JSONDecodeError too.

    The decoder recurses once per level: a hostile ``[[[[...`` line raises ``RecursionError``,
    which must not abort a whole import.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", text, 0) from None


def _lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or the JSONDecodeError) for every non-blank line."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, _loads(line)
        except json.JSONDecodeError as exc:
            yield number, exc


def _whole(text: str) -> Any:
    """The text as one JSON document, or ``None`` when it is not one (JSONL has several)."""
    stripped = text.lstrip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        return _loads(text)
    except json.JSONDecodeError:
        return None


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("role"), str) and "content" in value


def _is_lc(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    if value.get("lc") == 1 and isinstance(value.get("id"), list) and isinstance(value.get("kwargs"), Mapping):
        return True
    return isinstance(value.get("type"), str) and isinstance(value.get("data"), Mapping)


def _kind_of(value: Any) -> str:
    if isinstance(value, Mapping) and value.get("format") == EXPORT_FORMAT:
        return "export"
    if locomo.is_locomo(value):
        return "locomo"
    if _is_message(value) or (isinstance(value, Mapping) and isinstance(value.get("messages"), list)):
        return "openai"
    if _is_lc(value):
        return "langchain"
    if isinstance(value, list) and value:
        return _kind_of(value[0])
    return "memories"


def detect(text: str) -> str:
    """The format of an import file, from its first JSON value (or its first parseable line)."""
    whole = _whole(text)
    if whole is not None:
        return _kind_of(whole)
    for _, value in _lines(text):
        if not isinstance(value, json.JSONDecodeError):
            return _kind_of(value)
    return "memories"


def _json_error(where: str, exc: json.JSONDecodeError) -> Item:
    return Item(where, error=f"not JSON: {exc.msg} (column {exc.colno})")


def _values(text: str) -> Iterator[tuple[str, Any]]:
    """(where, value) of a JSON array's items, or of each line of JSONL (errors as JSONDecodeError)."""
    whole = _whole(text)
    if isinstance(whole, list):
        for i, value in enumerate(whole, 1):
            yield f"item {i}", value
    elif whole is not None:
        yield "line 1", whole
    else:
        for number, value in _lines(text):
            yield f"line {number}", value


def _when(value: Any) -> Any:
    """ISO 8601 strings become datetimes (UTC when they carry no offset); anything else is left to validation."""
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            return value
        return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when
    return value


def _memories(text: str) -> Parsed:
    parsed = Parsed("memories")
    for where, value in _values(text):
        if isinstance(value, json.JSONDecodeError):
            parsed.items.append(_json_error(where, value))
        elif not isinstance(value, Mapping):
            parsed.items.append(Item(where, error=f"expected a JSON object with text, got {type(value).__name__}"))
        else:
            record = dict(value)
            if "created_at" in record:
                record["created_at"] = _when(record["created_at"])
            parsed.items.append(Item(where, record))
    return parsed


def _export(text: str) -> Parsed:
    parsed = Parsed("export")
    for where, value in _values(text):
        if isinstance(value, json.JSONDecodeError):
            parsed.items.append(_json_error(where, value))
        elif isinstance(value, Mapping) and value.get("format") == EXPORT_FORMAT:
            parsed.header = parsed.header or dict(value)
        elif not isinstance(value, Mapping):
            parsed.items.append(
                Item(where, error=f"expected an export record (a JSON object), got {type(value).__name__}")
            )
        else:
            parsed.items.append(Item(where, dict(value)))
    return parsed


def _content(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, Mapping) and isinstance(part.get("type"), str):
                parts.append(f"[{part['type']}]")
        return "\n".join(parts)
    return ""


def _message_record(role: str, content: Any, session: str, stamp: datetime, source: str) -> dict[str, Any]:
    from memory_retrievers.integration import chat_text

    return {
        "text": chat_text(role, _content(content), max_chars=None),  # whole: the store refuses only a pathological size
        "kind": "message",
        "session_id": session,
        "created_at": stamp,
        "metadata": {"role": role, "source": source},
    }


class _Chat:
    """Turns chat messages into ``message`` records, in order, each a microsecond after the last."""

    def __init__(self, fmt: str, session: str, start: datetime) -> None:
        self.parsed = Parsed(fmt)
        self.session = session
        self.start = start
        self.count = 0
        self.conversations = 0

    def add(self, where: str, role: str, content: Any, session: str) -> None:
        # Explicit timestamps keep the turns' order across write batches (context fill reads it).
        stamp = self.start + timedelta(microseconds=self.count)
        self.count += 1
        self.parsed.items.append(Item(where, _message_record(role, content, session, stamp, self.session)))

    def next_session(self, many: bool) -> str:
        self.conversations += 1
        return f"{self.session}-{self.conversations}" if many else self.session


def _openai(text: str, session: str, start: datetime) -> Parsed:
    chat = _Chat("openai", session, start)
    values = list(_values(text))
    conversations = [v for _, v in values if isinstance(v, Mapping) and isinstance(v.get("messages"), list)]
    many = len(conversations) > 1
    single = chat.next_session(False) if not conversations else None
    for where, value in values:
        if isinstance(value, json.JSONDecodeError):
            chat.parsed.items.append(_json_error(where, value))
        elif isinstance(value, Mapping) and isinstance(value.get("messages"), list):
            sid = chat.next_session(many)
            for j, message in enumerate(value["messages"], 1):
                if _is_message(message):
                    chat.add(f"{where} message {j}", message["role"], message["content"], sid)
                else:
                    chat.parsed.items.append(Item(f"{where} message {j}", error="a message needs role and content"))
        elif _is_message(value):
            chat.add(where, value["role"], value["content"], single or session)
        else:
            chat.parsed.items.append(Item(where, error='expected {"role": ..., "content": ...} or {"messages": [...]}'))
    return chat.parsed


def _langchain(text: str, session: str, start: datetime) -> Parsed:
    chat = _Chat("langchain", session, start)
    for where, value in _values(text):
        if isinstance(value, json.JSONDecodeError):
            chat.parsed.items.append(_json_error(where, value))
            continue
        if not _is_lc(value):
            chat.parsed.items.append(
                Item(where, error='expected a LangChain message ({"type", "data"} or dumpd output)')
            )
            continue
        if value.get("lc") == 1:
            kind, data = str(value["id"][-1]), value["kwargs"]
        else:
            kind, data = value["type"], value["data"]
        role = data.get("role") if kind in ("chat", "ChatMessage") else _LC_ROLES.get(kind)
        if not isinstance(role, str):
            chat.parsed.items.append(Item(where, error=f"unknown LangChain message type {kind!r}"))
            continue
        chat.add(where, role, data.get("content", ""), session)
    return chat.parsed


def _locomo(text: str, namespace: str | None) -> Parsed:
    parsed = Parsed("locomo")
    value = _whole(text)
    if value is None or not locomo.is_locomo(value):
        parsed.items.append(Item("file", error="not LoCoMo JSON (a list of objects with a 'conversation' object)"))
        return parsed
    for index, conversation in enumerate(locomo.conversations(value)):
        good = []
        for turn in locomo.turns(conversation, index):
            if isinstance(turn, tuple):
                parsed.items.append(Item(turn[0], error=turn[1]))
            else:
                good.append(turn)
        for turn, record in zip(good, locomo.turn_records(good, namespace=namespace), strict=True):
            parsed.items.append(Item(f"{turn.conversation} {turn.session} {turn.dia_id}", record))
    return parsed


def parse(text: str, fmt: str, *, namespace: str | None, session: str, start: datetime) -> Parsed:
    """Read an import file's text.

    Args:
        text: The file's content.
        fmt: One of :data:`FORMATS`.
        namespace: The ``-n`` namespace (LoCoMo: all conversations into it instead of one each).
        session: Session id for chat transcripts (numbered when a file holds several conversations).
        start: Timestamp of the first chat message (later ones follow a microsecond apart).
    """
    chosen = detect(text) if fmt == "auto" else fmt
    if chosen == "export":
        return _export(text)
    if chosen == "openai":
        return _openai(text, session, start)
    if chosen == "langchain":
        return _langchain(text, session, start)
    if chosen == "locomo":
        return _locomo(text, namespace)
    return _memories(text)
