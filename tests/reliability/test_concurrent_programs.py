"""Random programs of writes and reads, run at once by threads and processes, checked against what
every acknowledgement promised.

Each example draws one program per actor (two threads sharing one store, two processes with their
own) over two namespaces and one chat session: add, chat turns, update, supersede, delete, forget,
recall, list. All actors start at the same instant; every call is timed on the system's monotonic
clock, so the checker knows which calls overlapped. Afterwards, from a fresh handle:

- nothing deleted or forgotten is stored, and no stored memory's context holds its words;
- every acknowledged write is stored unless a delete or forget could have removed it;
- every stored text is one that some call wrote to that memory;
- each supersession link points both ways, and no memory has two live successors;
- every memory a read returned belongs to the namespace it was read from;
- no call failed in a way that another actor's change does not explain.

Short form in the default run; the long form for release checks:

    MEMORY_RETRIEVERS_LONG=1 python -m pytest -m long tests/reliability/test_concurrent_programs.py -s
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from _program_worker import open_store, run_program

LONG = bool(os.environ.get("MEMORY_RETRIEVERS_LONG"))
WORKER = Path(__file__).with_name("_program_worker.py")
NAMESPACES = ["n0", "n1"]
THREADS, PROCESSES = 2, 2
TOTALS = {"runs": 0, "operations": 0, "acknowledged": 0}

WORDS = ["tea", "cat", "Berlin", "piano", "Friday", "blue"]
ops = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "chat", "chat", "update", "supersede", "delete", "forget", "recall", "list"]),
        "ns": st.sampled_from(NAMESPACES),
        "ref": st.integers(0, 50),
        "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    }
)
programs = st.lists(
    st.lists(ops, min_size=4, max_size=40 if LONG else 12), min_size=THREADS + PROCESSES, max_size=THREADS + PROCESSES
)


def _with_markers(program: list[dict[str, Any]], actor: int) -> list[dict[str, Any]]:
    """Every text gets a unique marker word, so its words can be traced into other memories' context."""
    out = []
    for i, op in enumerate(program):
        op = dict(op)
        words = op.pop("words")
        op["text"] = " ".join([*words, f"mark{actor}x{i}"])
        out.append(op)
    return out


@settings(
    max_examples=40 if LONG else 4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
@given(raw=programs)
def test_concurrent_programs_keep_every_promise(tmp_path_factory: Any, raw: list[list[dict[str, Any]]]) -> None:
    folder = tmp_path_factory.mktemp("programs")
    store_dir = folder / "db"
    shared = open_store(str(store_dir))
    seed = shared.add("seed", namespace="n0").id  # the table exists before the actors start
    programs_ = [_with_markers(p, actor) for actor, p in enumerate(raw)]
    start_at = time.monotonic() + 2.5  # time for the processes to import and open
    procs = []
    for a in range(THREADS, THREADS + PROCESSES):
        spec = folder / f"program{a}.json"
        spec.write_text(json.dumps({"program": programs_[a], "start_at": start_at}))
        procs.append(
            subprocess.Popen([sys.executable, str(WORKER), str(store_dir), str(spec), str(folder / f"acks{a}.jsonl")])
        )
    thread_acks: list[list[dict[str, Any]]] = [[] for _ in range(THREADS)]
    crashed: list[BaseException] = []

    def run_thread(a: int) -> None:
        try:
            thread_acks[a] = run_program(shared, programs_[a], start_at)
        except BaseException as exc:  # an unexpected error is a finding: keep it for the assertion
            crashed.append(exc)

    threads = [threading.Thread(target=run_thread, args=(a,)) for a in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for p in procs:
        assert p.wait(300) == 0
    assert not crashed, f"an actor thread failed: {crashed[0]!r}"
    acks = [a for acks_ in thread_acks for a in acks_]
    for a in range(THREADS, THREADS + PROCESSES):
        acks += [json.loads(line) for line in (folder / f"acks{a}.jsonl").read_text().splitlines() if line]
    shared.close()
    check(store_dir, acks, seed)
    TOTALS["runs"] += 1
    TOTALS["operations"] += len(acks)
    TOTALS["acknowledged"] += sum(1 for a in acks if a.get("ok"))


def check(store_dir: Path, acks: list[dict[str, Any]], seed_id: str) -> None:
    unexplained = [a for a in acks if a.get("error", "").startswith("StorageError")]
    assert not unexplained, f"calls failed for no reason another actor explains: {unexplained[:3]}"
    fresh = open_store(str(store_dir))
    stored = {m.id: m for ns in NAMESPACES for m in fresh.list(ns, limit=100_000, filter={"include_superseded": True})}
    fresh.close()
    created = {a["id"]: a for a in acks if a.get("ok") and "id" in a}
    written_texts: dict[str, set[str]] = {}
    for a in acks:
        if "id" in a and "text" in a:
            written_texts.setdefault(a["id"], set()).add(a["text"])
        if "attempted" in a:  # a supersede that may have failed after writing its new memory
            written_texts.setdefault(a["attempted"], set()).add(a["text"])
        if a["op"] == "update" and "target" in a:
            written_texts.setdefault(a["target"], set()).add(a["text"])
    deletes = [a for a in acks if a["op"] == "delete" and "target" in a]
    forgets = [a for a in acks if a["op"] == "forget"]

    def removable(id_: str, made: dict[str, Any]) -> bool:
        """A delete of it was attempted, or a forget of its namespace did not end before it was made."""
        return any(d["target"] == id_ for d in deletes) or any(
            f["ns"] == made["ns"] and f["t1"] > made["t0"] for f in forgets
        )

    gone: dict[str, str] = {}  # id -> its marker word, for memories that must be gone
    for d in deletes:
        if d.get("ok") and d["target"] in written_texts:
            gone[d["target"]] = next(iter(written_texts[d["target"]])).split()[-1]
    for f in (f for f in forgets if f.get("ok")):
        for id_, made in created.items():
            if made["ns"] == f["ns"] and made["t1"] < f["t0"]:
                gone[id_] = made["text"].split()[-1]
    seed = {seed_id}
    assert set(stored) - set(written_texts) - seed == set(), "rows no call wrote"
    back = set(gone) & set(stored)
    assert not back, f"deleted or forgotten memories came back: {sorted(back)[:5]}"
    for m in stored.values():
        words = set(re.findall(r"[\w-]+", m.context or ""))  # whole words: mark2x1 is not in mark2x10
        leaked = [w for w in gone.values() if w in words]
        assert not leaked, f"{m.id}: the context keeps words of deleted memories: {leaked}"
    lost = [i for i, made in created.items() if i not in stored and not removable(i, made)]
    assert not lost, f"acknowledged writes lost: {lost[:5]}"
    for id_, m in stored.items():
        if id_ not in seed:
            assert m.text in written_texts[id_], f"{id_}: a text no call wrote: {m.text!r}"
    live_successors: dict[str, list[str]] = {}
    for m in stored.values():
        if m.superseded_by is not None:
            successor = stored.get(m.superseded_by)
            assert successor is not None and successor.supersedes == m.id, f"{m.id}: a dangling supersession"
        if m.supersedes is not None and m.superseded_by is None:
            live_successors.setdefault(m.supersedes, []).append(m.id)
    assert all(len(v) == 1 for v in live_successors.values()), f"two live successors: {live_successors}"
    for a in acks:
        for ns, id_ in a.get("seen", []):
            assert ns == a["ns"], f"a read of {a['ns']} returned a memory of {ns}"
            known = id_ in seed or id_ in written_texts
            assert known, f"a read returned an unknown memory {id_} ({stored.get(id_)!r}), in {a}"


def teardown_module() -> None:
    print(
        f"\n[reliability] concurrent-programs: runs={TOTALS['runs']} operations={TOTALS['operations']} "
        f"acknowledged={TOTALS['acknowledged']} actors={THREADS} threads + {PROCESSES} processes long={LONG}"
    )
