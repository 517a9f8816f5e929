"""Memory.to_dict: JSON-friendly, a copy the caller may change, and cheap for vectors."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from memory_retrievers import Memory, MemoryKind


def memory() -> Memory:
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    return Memory(
        id="m1",
        namespace="alice",
        text="Alice's dog is called Rex",
        kind=MemoryKind.FACT,
        created_at=now,
        updated_at=now,
        tags=("pets",),
        metadata={"source": {"turns": [1, 2]}},
        vector=(0.5, -0.25, 0.125),
    )


def test_it_is_json_friendly_and_keeps_every_field() -> None:
    out = memory().to_dict()
    assert out["kind"] == "fact" and out["created_at"] == "2026-01-02T03:04:05+00:00"
    assert out["tags"] == ["pets"] and out["vector"] == [0.5, -0.25, 0.125]
    assert json.loads(json.dumps(out)) == out


def test_changing_the_dict_never_changes_the_memory() -> None:
    m = memory()
    out = m.to_dict()
    out["metadata"]["source"]["turns"].append(3)
    out["vector"][0] = 9.0
    out["tags"].append("x")
    assert m.metadata == {"source": {"turns": [1, 2]}} and m.vector == (0.5, -0.25, 0.125) and m.tags == ("pets",)


def test_a_memory_without_a_vector_has_no_vector_key() -> None:
    m = memory()
    bare = Memory(**{**{f: getattr(m, f) for f in m.__dataclass_fields__}, "vector": None})
    assert "vector" not in bare.to_dict()
