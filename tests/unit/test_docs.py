"""Every Python block of README.md and docs/**/*.md runs as pasted, and the docs site builds strictly.

A page's blocks run in order, as script files, in one empty folder with its own home (the
``MemoryStore()`` default writes under ``~``), as a reader pasting them one after the other would.
Where a line states a result in a comment, the run also checks that claim:
``x.action  # WriteAction.SKIPPED`` becomes ``assert x.action.name == "SKIPPED"``, and
``x.memories  # () ...`` becomes ``assert x.memories == ()``.

A block is run here, or by the page's own test (``DEDICATED``: pages whose blocks start servers or
need a bucket), or carries ``<!-- not run: REASON -->`` on the line above it. The first test fails
when a block is none of these. Pages that load the real model run in the long tier; the others
(``FAST``) in the fast one.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from testing.paths import ROOT

BLOCK = re.compile(r"(?:<!-- (?P<note>[^>]*) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)
NOT_RUN = re.compile(r"not run: \S.{9,}")  # a reason of at least ten characters
ACTION_CLAIM = re.compile(r"^(?P<call>.+)\.action  # WriteAction\.(?P<action>[A-Z]+)\b.*$", flags=re.M)
EMPTY_CLAIM = re.compile(r"^(?P<call>.+\.memories)  # \(\) .*$", flags=re.M)

#: Pages whose blocks another test runs (it must name the page), with the reason.
DEDICATED = {
    "README.md": "tests/integration/test_readme_snippets.py",  # also checks each quickstart's claims
    "docs/how-to/deploy.md": "tests/reliability/test_deployment_docs.py",  # gunicorn/uvicorn servers
    "docs/how-to/object-storage.md": "tests/object_storage/test_docs.py",  # an S3 server and its buckets
}
#: Pages whose blocks need no model: run in the fast tier. (The extension how-tos need none either,
#: but each block is a process of ~4 s CPU: they run in the long tier, like the pages with the model.)
FAST = {"docs/reference/configuration.md", "docs/how-to/shards.md"}


def pages() -> list[str]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p.relative_to(ROOT).as_posix() for p in found]


def python_blocks(page: str) -> list[tuple[str, str]]:
    """The page's ``python`` blocks as (note above the block, code)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return [(m["note"] or "", m["body"]) for m in BLOCK.finditer(text) if m["lang"] == "python"]


def runnable(page: str) -> list[str]:
    return [code for note, code in python_blocks(page) if not note.startswith("not run")]


def with_claims_checked(code: str) -> str:
    code = ACTION_CLAIM.sub(r'assert (\g<call>).action.name == "\g<action>"', code)
    return EMPTY_CLAIM.sub(r"assert \g<call> == ()", code)


def run_page(page: str, folder: Path) -> list[str]:
    """Run the page's blocks in order in ``folder``, in one interpreter; returns each block's stdout.

    Each block runs as its own ``__main__`` with fresh globals (testing/run_blocks.py), so a block
    still cannot lean on another's names; the model loads once per page, not once per block.
    """
    folder.mkdir(parents=True, exist_ok=True)
    blocks = runnable(page)
    for i, code in enumerate(blocks):
        (folder / f"block_{i}.py").write_text(with_claims_checked(code))
    done = subprocess.run(
        [sys.executable, str(ROOT / "testing" / "run_blocks.py"), str(len(blocks))],
        cwd=folder,
        env={**os.environ, "HOME": str(folder)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    failed = re.search(r"python block (\d+) failed", done.stderr)
    where = f"python block {failed[1]}:\n{blocks[int(failed[1])]}" if failed else "the page's run"
    assert done.returncode == 0, f"{page}, {where} failed\n---\n{done.stderr[-3000:]}"
    return [(folder / f"block_{i}.out").read_text() for i in range(len(blocks))]


GENERIC = [p for p in pages() if p not in DEDICATED and runnable(p)]


def test_every_python_block_is_run_or_marked() -> None:
    for page in pages():
        for note, code in python_blocks(page):
            ast.parse(code, filename=page)  # a block that is not even Python fails here, fast
            if note.startswith("not run"):
                assert NOT_RUN.fullmatch(note), f"{page}: say why a block is not run: <!-- not run: REASON -->"
                continue
            assert page in DEDICATED or page in GENERIC, f"{page}: a python block nobody runs"
    for page, test in DEDICATED.items():
        assert page.rsplit("/", 1)[-1] in (ROOT / test).read_text(encoding="utf-8"), f"{test} does not read {page}"
        assert runnable(page), f"{page} has no runnable python block: drop it from DEDICATED"
    assert set(FAST) <= set(GENERIC)
    assert {page for page, _ in PRINTS} <= set(GENERIC)


def test_the_readme_is_the_short_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    # .ci/run runs exactly these commands; the README's "Develop / test" section shows them.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    develop = text[text.index("## Develop / test\n") :]
    for command in ("python -m pip install -r requirements-dev.txt", "python -m pytest", "python -m pytest -m long"):
        assert re.search(rf"^{re.escape(command)}\s+#", develop, flags=re.M), command
        assert re.search(rf"^{re.escape(command)}$", ci, flags=re.M), command
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), f"README links to a missing page: {link}"


#: The public modules: the API reference documents every name of their ``__all__``, by these paths only.
PUBLIC_MODULES = (
    "memory_retrievers",
    "memory_retrievers.recall",
    "memory_retrievers.formation",
    "memory_retrievers.integration",
    "memory_retrievers.bulk",
    "memory_retrievers.testing",
    "memory_retrievers.testing.channels",
    "langchain_memory_retrievers",
    "llama_index.memory_retrievers",
)
DIRECTIVE = re.compile(r"^::: (?P<target>\S+)$", flags=re.M)


def test_the_api_reference_documents_every_public_name_by_its_public_path() -> None:
    documented: set[str] = set()
    for page in sorted((ROOT / "docs" / "reference").rglob("*.md")):
        for target in DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            if target in PUBLIC_MODULES:  # a whole public module: its __all__
                documented |= {f"{target}.{name}" for name in import_module(target).__all__}
                continue
            module, _, name = target.rpartition(".")
            # A private module's path would show names users cannot import from there, and a name
            # that left __all__ (removed or renamed) must leave the reference too.
            assert module in PUBLIC_MODULES, f"{page.name}: `::: {target}` is not under a public module"
            assert name in import_module(module).__all__, f"{page.name}: `::: {target}` is not a public name"
            documented.add(target)
    public = {f"{m}.{name}" for m in PUBLIC_MODULES for name in import_module(m).__all__ if name != "__version__"}
    assert sorted(public - documented) == [], "public names missing from docs/reference"


def test_the_home_page_links_every_tutorial_and_how_to_guide() -> None:
    """Issue 40 item 12: the inspector, shards and bulk-jobs guides were in the site's menu, not on its home page."""
    docs = ROOT / "docs"
    home = (docs / "index.md").read_text(encoding="utf-8")
    guides = [*sorted((docs / "tutorials").glob("*.md")), *sorted((docs / "how-to").glob("*.md"))]
    assert len(guides) >= 9
    assert [g.name for g in guides if f"]({g.relative_to(docs).as_posix()})" not in home] == []


def test_the_claims_in_comments_become_assertions() -> None:
    code = 'm.action  # WriteAction.ADDED\nr.recall("x").memories  # () : nothing\n'
    assert with_claims_checked(code) == 'assert (m).action.name == "ADDED"\nassert r.recall("x").memories == ()\n'


#: What some blocks print (stdout, stripped), checked after they run: (page, block index) -> output
#: (an output ending in "..." is the start of what is printed).
PRINTS = {
    ("docs/tutorials/first-agent.md", 2): "You told me you live in Berlin.",
    ("docs/explanation/recall.md", 0): (
        "['vector', 'bm25', 'context', 'entity', 'links', 'activation']\nCaroline is moving to Lisbon in May."
    ),
    ("docs/how-to/own-lancedb.md", 0): "1\nTrue\n2\nAlice prefers window seats\n['memories']",
    ("docs/how-to/privacy.md", 0): "2\n0",
    ("docs/how-to/privacy.md", 1): "1\n2\n1",
    ("docs/how-to/shards.md", 0): (
        "[1, 1, 1, 0]\n['alice', 'bob', 'carol', 'dave']\n4\ndave prefers green tea in the morning"
    ),
    ("docs/how-to/shards.md", 1): "('carol', 'dave') 2\n1 0\n()",
    ("docs/how-to/extend/channel.md", 0): (
        "Order ORD-10482 was refunded on 3 March. ['bm25', 'order', 'vector']\nTrue\n"
        "Order ORD-10482 was refunded on 3 March. True\nOrder ORD-10482 was refunded on 3 March."
    ),
    ("docs/how-to/extend/embedder.md", 0): (
        "Alice's favourite colour is teal\nchar-trigrams-256 256\nrefused: EmbedderMismatchError"
    ),
    ("docs/how-to/extend/llm.md", 0): (
        "Alice prefers the dark theme\nllm llm\n['context:rewrite 1', 'vector:rewrite 1', 'hyde']\n"
        "Alice prefers the dark theme ['LLMFallbackWarning']"
    ),
    ("docs/how-to/extend/reranker.md", 0): (
        "The spare key is under the blue flower pot 0.8\nThe key to the shed is on the hook 0.6"
    ),
    ("docs/how-to/extend/token-counter.md", 0): "5\nTrue True True",
    # the memories' dates are the day of the run: only the start is pinned ("...")
    ("docs/how-to/extend/adapter.md", 0): "Relevant memories (most relevant first):\n- [...",
    ("docs/how-to/extend/adapter.md", 1): (
        "['assistant: Noted: Berlin!', 'user: I moved to Berlin last spring']\n[] True\n"
        "['assistant: Noted: Berlin!', 'user: I moved to Berlin last spring']\n"
        "refused: unknown argument(s) for RecallTool: 'recal_config' (did you mean 'recall_config'?)..."
    ),
    # the valid keys follow; their list changes with RecallConfig, so only the start is pinned ("...")
    ("docs/reference/configuration.md", 0): "1.5 0.3\nrefused: invalid RecallConfig: unknown key 'kk'; valid keys ...",
}


def check_prints(page: str, outputs: list[str]) -> None:
    for (where, i), expected in PRINTS.items():
        if where == page:
            printed = outputs[i].strip()
            ok = printed.startswith(expected[:-3]) if expected.endswith("...") else printed == expected
            assert ok, f"{page}, python block {i} printed:\n{outputs[i]}"


@pytest.mark.parametrize("page", sorted(FAST))
def test_a_page_without_the_model_runs_as_pasted(tmp_path: Path, page: str) -> None:
    check_prints(page, run_page(page, tmp_path))


@pytest.mark.long
@pytest.mark.parametrize(
    "page",
    [
        # the bulk-jobs page starts a local Ray instance: on the worker that holds the Ray tests' one
        pytest.param(p, marks=pytest.mark.xdist_group("ray")) if "bulk-jobs" in p else p
        for p in GENERIC
        if p not in FAST
    ],
)
def test_a_page_runs_as_pasted(tmp_path: Path, page: str) -> None:
    check_prints(page, run_page(page, tmp_path))


@pytest.mark.heavy
@pytest.mark.long  # mkdocs and mkdocstrings: about 40 s of CPU
def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    api = tmp_path / "site" / "reference" / "api"
    store = (api / "store" / "index.html").read_text(encoding="utf-8")
    recall = (api / "recall" / "index.html").read_text(encoding="utf-8")
    # The sync methods are made from their async twins at import: the reference must still show them.
    for anchor in ("MemoryStore.add", "MemoryStore.aadd", "MemoryStore.list"):
        assert f'id="memory_retrievers.{anchor}"' in store, anchor
    for anchor in ("purge", "apurge", "optimize", "stats"):
        assert f'id="memory_retrievers.StoreAdmin.{anchor}"' in store, anchor
    for anchor in ("MemoryRetriever.recall", "MemoryRetriever.arecall"):
        assert f'id="memory_retrievers.{anchor}"' in recall, anchor
