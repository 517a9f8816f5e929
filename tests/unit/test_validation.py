from datetime import datetime, timezone

import pytest

from memory_retrievers import InvalidInputError, MemoryKind, StoreConfig
from memory_retrievers.validation import check_key, check_text, content_hash, normalise_for_hash, validate_record

CFG = StoreConfig()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "empty"),
        ("   \n\t", "empty"),
        ("a\x00b", "NUL"),
        ("bad \ud800 surrogate", "surrogate"),
        (b"bytes", "must be a str"),
        (None, "must be a str"),
        (42, "must be a str"),
    ],
)
def test_check_text_rejects(value: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        check_text(value, max_chars=100)


def test_check_text_size_limit_names_the_fix() -> None:
    with pytest.raises(InvalidInputError, match="max_text_chars"):
        check_text("x" * 101, max_chars=100)
    assert check_text("x" * 100, max_chars=100) == "x" * 100


@pytest.mark.parametrize(
    "text", ["héllo wörld", "日本語のテキスト", "emoji 🎉👍", "x' OR '1'='1", "tab\tand\nnewline", "  padded  "]
)
def test_valid_text_is_returned_verbatim(text: str) -> None:
    assert check_text(text, max_chars=1000) == text


def test_check_key_rejects_blank() -> None:
    with pytest.raises(InvalidInputError, match="non-empty"):
        check_key(" ", field="namespace", max_chars=10)
    assert check_key("x' OR '1'='1", field="namespace", max_chars=50) == "x' OR '1'='1"


def test_normalised_hash_folds_whitespace_only() -> None:
    # Runs of spaces inside a line and trailing whitespace fold; case, Unicode forms and a line's
    # indentation do not (a reader can tell "Hunter2" from "hunter2", and indentation is code).
    assert normalise_for_hash("Hello\u00a0  WORLD  \n\n") == "Hello WORLD"
    assert content_hash("I live in   Berlin ") == content_hash("I live in Berlin")
    assert content_hash("Café") != content_hash("Cafe\u0301") != content_hash("cafe")
    assert content_hash("def f():\n    pass") != content_hash("def f():\n  pass")
    assert content_hash("one thing") != content_hash("another thing")


def test_validate_record_defaults_and_normalisation() -> None:
    rec = validate_record(
        {"text": "hi", "tags": ["a", "a", "b"], "entities": ["Alice ", "alice", "Bob"], "kind": "event"},
        CFG,
        namespace="ns",
    )
    assert rec["namespace"] == "ns"
    assert rec["kind"] is MemoryKind.EVENT
    assert rec["tags"] == ["a", "b"]
    assert rec["entities"] == ["alice", "bob"]  # entities are match keys: trimmed, case-folded
    assert rec["priority"] == 1.0 and rec["importance"] == 0.5 and rec["pinned"] is False
    assert rec["metadata"] == "{}"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"text": "x"}, "namespace is required"),
        ({"text": "x", "namespace": "n", "colour": "red"}, "unknown field"),
        ({"text": "x", "namespace": "n", "content_hash": "abc"}, "unknown field"),
        ({"text": "x", "namespace": "n", "priority": 11}, "priority"),
        ({"text": "x", "namespace": "n", "priority": -0.1}, "priority"),
        ({"text": "x", "namespace": "n", "priority": float("nan")}, "priority"),
        ({"text": "x", "namespace": "n", "priority": "high"}, "priority"),
        ({"text": "x", "namespace": "n", "priority": True}, "priority"),
        ({"text": "x", "namespace": "n", "importance": 2}, "importance"),
        ({"text": "x", "namespace": "n", "pinned": "yes"}, "pinned must be a bool"),
        ({"text": "x", "namespace": "n", "kind": "opinion"}, "valid kinds are: fact, preference"),
        ({"text": "x", "namespace": "n", "tags": "single"}, r"wrap it: tags=\['single'\]"),
        ({"text": "x", "namespace": "n", "tags": [1]}, "tags item must be"),
        ({"text": "x", "namespace": "n", "metadata": {"v": float("nan")}}, "JSON-serialisable"),
        ({"text": "x", "namespace": "n", "metadata": {"v": object()}}, "JSON-serialisable"),
        ({"text": "x", "namespace": "n", "metadata": {1: "int key"}}, "keys must all be str"),
        ({"text": "x", "namespace": "n", "metadata": ["not", "a", "dict"]}, "metadata must be a dict"),
        ({"text": "x", "namespace": "n", "created_at": datetime(2024, 1, 1)}, "naive datetime"),
        ({"text": "x", "namespace": "n", "created_at": "2024-01-01"}, "must be a datetime"),
        ({"text": "x", "namespace": ""}, "non-empty"),
        ({"text": "x", "namespace": 7}, "non-empty str"),
        ({"text": "x", "namespace": "n", "context": "a\x00"}, "NUL"),
        ("just text", "must be a dict"),
    ],
)
def test_validate_record_rejects(record: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        validate_record(record, CFG)


def test_created_at_is_converted_to_utc() -> None:
    from datetime import timedelta

    tz = timezone(timedelta(hours=2))
    rec = validate_record({"text": "x", "namespace": "n", "created_at": datetime(2024, 1, 1, 12, tzinfo=tz)}, CFG)
    assert rec["created_at"] == datetime(2024, 1, 1, 10, tzinfo=timezone.utc)
    assert rec["created_at"].utcoffset() == timedelta(0)
